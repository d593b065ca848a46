package commands

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/server/config"
)

// testSubscriber is a subscriber over a pipe nobody reads, under limit,
// with a clock the test moves.
func testSubscriber(t *testing.T, limit config.OutputLimit, now *time.Duration) *subscriber {
	client, server := net.Pipe()
	t.Cleanup(func() { _ = client.Close() })
	s := &subscriber{cs: &connState{proto: 2}, conn: server, limit: limit,
		now: func() time.Duration { return *now }, overflowed: new(atomic.Int64)}
	s.cond.L = &s.mu
	go s.writeLoop()
	return s
}

// The pubsub output limit as Redis's client-output-buffer-limit applies
// it: past the hard limit at once; past the soft limit only once it has
// stayed past it for longer than the soft seconds, the clock restarting
// when the output falls back under it.
func TestOutputLimit(t *testing.T) {
	frame := make([]byte, 1000)
	var now time.Duration
	hard := testSubscriber(t, config.OutputLimit{Hard: 10_000}, &now)
	queued := 0
	for hard.queue(frame) {
		queued++
	}
	// The writer holds the first frame (the pipe takes it when read);
	// ten more fit under the limit.
	if queued < 10 || queued > 11 || hard.overflowed.Load() != 1 || !hard.isClosed() {
		t.Fatalf("hard limit: %d frames queued, %d overflows", queued, hard.overflowed.Load())
	}

	soft := testSubscriber(t, config.OutputLimit{Soft: 5000, SoftFor: 10 * time.Second}, &now)
	for range 20 {
		if !soft.queue(frame) {
			t.Fatal("closed past the soft limit at once")
		}
	}
	now += 10 * time.Second
	if !soft.queue(frame) {
		t.Fatal("closed at exactly the soft seconds")
	}
	now += time.Second
	if soft.queue(frame) || soft.overflowed.Load() != 1 {
		t.Fatal("not closed after staying past the soft limit for longer than its seconds")
	}

	var s subscriber
	s.limit, s.now = config.OutputLimit{Soft: 5000, SoftFor: time.Second}, func() time.Duration { return now }
	s.pending = 6000
	if s.overLimitLocked() {
		t.Fatal("over at once")
	}
	s.pending = 100 // written out: under the soft limit again
	s.overLimitLocked()
	now += 5 * time.Second
	s.pending = 6000
	if s.overLimitLocked() {
		t.Fatal("the soft limit's clock did not restart under it")
	}
}

func TestPublishPayloadRoundTrip(t *testing.T) {
	big := strings.Repeat("m", 100<<10) // sent from its buffer (wire.Spool)
	in := []busMsg{{[]byte("news"), []byte("hello")}, {[]byte(""), []byte("")}, {[]byte("c"), []byte(big)}}
	payload, tail := encodePublish(in)
	for _, seg := range tail {
		payload = append(payload, seg...)
	}
	out, err := decodePublish(payload)
	if err != nil || len(out) != 3 || string(out[0].channel) != "news" || string(out[0].message) != "hello" ||
		len(out[1].channel) != 0 || string(out[2].message) != big {
		t.Fatalf("decoded %d messages, %v", len(out), err)
	}
	for _, bad := range [][]byte{
		payload[:len(payload)-1],                       // short
		append(payload[:len(payload):len(payload)], 0), // trailing
		{0xff, 0xff, 0xff, 0xff},                       // a count the payload cannot hold
	} {
		if _, err := decodePublish(bad); err == nil {
			t.Fatalf("decoded a malformed payload of %d bytes", len(bad))
		}
	}
}

func TestIsSubscription(t *testing.T) {
	for name, want := range map[string]bool{
		"subscribe": true, "PSUBSCRIBE": true, "sSubscribe": true, "UNSUBSCRIBE": true,
		"punsubscribe": true, "sunsubscribe": true, "publish": false, "get": false, "subscriber": false, "": false,
	} {
		if isSubscription([]byte(name)) != want {
			t.Errorf("isSubscription(%q) = %v", name, !want)
		}
	}
}
