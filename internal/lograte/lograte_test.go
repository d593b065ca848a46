package lograte

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// fakeClock is a Limiter's clock, moved by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time            { return c.t }
func (c *fakeClock) add(d time.Duration)       { c.t = c.t.Add(d) }
func testLimiter(c *fakeClock) *Limiter        { l := NewLimiter(Every); l.now = c.now; return l }
func lines(b *bytes.Buffer) []string           { return strings.Split(strings.TrimSpace(b.String()), "\n") }
func countLines(b *bytes.Buffer, s string) int { return strings.Count(b.String(), s) }

func TestLimiterWritesFirstThenOnePerInterval(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := testLimiter(c)
	if w, n := l.Allow("a"); !w || n != 0 {
		t.Fatalf("first line: write %v, suppressed %d", w, n)
	}
	for i := 0; i < 5; i++ {
		c.add(time.Second)
		if w, _ := l.Allow("a"); w {
			t.Fatalf("repeat %d within the interval was written", i)
		}
	}
	if w, n := l.Allow("b"); !w || n != 0 {
		t.Fatalf("another kind's first line: write %v, suppressed %d", w, n)
	}
	c.add(Every)
	if w, n := l.Allow("a"); !w || n != 5 {
		t.Fatalf("after the interval: write %v, suppressed %d; want true, 5", w, n)
	}
	if w, _ := l.Allow("a"); w {
		t.Fatal("the interval did not start again")
	}
}

func TestLimiterForgetsOldKinds(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	l := testLimiter(c)
	for i := range maxKinds {
		l.Allow(fmt.Sprint(i))
	}
	c.add(Every)
	l.Allow("new")
	if len(l.kinds) != 1 {
		t.Fatalf("%d kinds remembered, want only the new one", len(l.kinds))
	}
	for i := range maxKinds + 1 { // all within one interval: all forgotten
		l.Allow(fmt.Sprint("x", i))
	}
	if len(l.kinds) > maxKinds {
		t.Fatalf("%d kinds remembered, over the bound %d", len(l.kinds), maxKinds)
	}
}

// TestHandlerLimitsRepeatsPerKind: a warning repeated with a new error
// each time is one kind per node, written once per interval with the count
// of those suppressed; a number is part of its kind.
func TestHandlerLimitsRepeatsPerKind(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, nil), testLimiter(c))).With("node", "self")
	for i := 0; i < 10; i++ {
		log.Warn("marking a node failed", "node", "a", "err", fmt.Errorf("attempt %d", i), "took", time.Duration(i))
		log.Warn("marking a node failed", "node", "b", "err", errors.New("no leader"))
		log.Info("shard recovered", "shard", i)
		c.add(time.Second)
	}
	log.Warn("marking a node failed", "node", "a", "err", errors.New("last"))
	if n := countLines(&buf, "node=a"); n != 2 {
		t.Fatalf("%d lines for node a, want the first and one after the interval:\n%s", n, buf.String())
	}
	if got := lines(&buf); !strings.Contains(got[len(got)-1], "err=last suppressed=9") {
		t.Fatalf("last line %q does not count the 9 suppressed", got[len(got)-1])
	}
	if n := countLines(&buf, "node=b"); n != 1 {
		t.Fatalf("%d lines for node b, want 1", n)
	}
	if n := countLines(&buf, "shard recovered"); n != 10 {
		t.Fatalf("%d lines of distinct shards, want 10", n)
	}
}

// TestHclogLimitsRaftsFailedHeartbeats: Raft's leader logs a failed
// heartbeat to a dead member about four times a second; one line per
// interval and peer gets through.
func TestHclogLimitsRaftsFailedHeartbeats(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0)}
	var buf bytes.Buffer
	base := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Error, Output: &buf})
	log := Hclog(base, testLimiter(c)).With("server-id", "leader")
	for i := 0; i < 40; i++ { // 10 s at 4 a second
		log.Error("failed to heartbeat to", "peer", "127.0.0.1:7001", "backoff time", time.Duration(i)*time.Millisecond,
			"error", errors.New("connection refused"))
		log.Warn("failed to contact", "server-id", "x") // below the level: neither written nor counted
		c.add(250 * time.Millisecond)
	}
	log.Error("failed to heartbeat to", "peer", "127.0.0.1:7001", "backoff time", time.Second, "error", errors.New("refused"))
	log.Named("snapshot").Error("failed to heartbeat to", "peer", "127.0.0.1:7001")
	if n := countLines(&buf, "failed to heartbeat to"); n != 3 {
		t.Fatalf("%d lines, want the first, one after 10 s and one of another logger:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "suppressed=39") {
		t.Fatalf("no count of the 39 suppressed:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "failed to contact") {
		t.Fatal("a line below the logger's level was written")
	}
}
