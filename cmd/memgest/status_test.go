package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/core"
)

// TestWatchStatusShowsRates runs --watch's loop over a fake node whose
// command counter grows by 500 per one-second frame: the first frame has
// no rate yet, the next show 500 commands per second, a failed fetch shows
// its error, and the loop stops when its context ends.
func TestWatchStatusShowsRates(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	calls := 0
	ctx, cancel := context.WithCancel(context.Background())
	fetch := func() (server.Status, error) {
		calls++
		clock = clock.Add(time.Second)
		switch {
		case calls == 3:
			return server.Status{}, errors.New("status from 127.0.0.1:1: connection refused")
		case calls == 5:
			cancel()
		}
		return server.Status{State: "ok", Nodes: []server.StatusNode{
			{ID: strings.Repeat("a", 40), ClientAddr: "127.0.0.1:7001", State: "up", Commands: int64(500 * calls)},
		}}, nil
	}
	var out bytes.Buffer
	if err := watchStatus(ctx, &out, fetch, time.Millisecond, now); err != nil {
		t.Fatal(err)
	}
	frames := strings.Split(out.String(), clearScreen)[1:]
	if len(frames) != 5 {
		t.Fatalf("%d frames, want 5 (the last drawn as the context ended)", len(frames))
	}
	rate := func(frame string) string {
		for _, line := range strings.Split(frame, "\n") {
			if strings.HasPrefix(line, "aaaaaaaaaaaa") {
				f := strings.Fields(line)
				return f[len(f)-1]
			}
		}
		return ""
	}
	if got := rate(frames[0]); got != "-" {
		t.Errorf("first frame rate %q, want - (no earlier sample)", got)
	}
	if got := rate(frames[1]); got != "500" {
		t.Errorf("second frame rate %q, want 500", got)
	}
	if !strings.Contains(frames[2], "connection refused") {
		t.Errorf("a failed fetch is not shown:\n%s", frames[2])
	}
	// Frame 4 follows the failed fetch: its rate spans two seconds from
	// the last sample (2 → 4 calls: 1000 commands).
	if got := rate(frames[3]); got != "500" {
		t.Errorf("frame after the failure rate %q, want 500", got)
	}
}

// TestPrintStatusShowsPendingByRedundancy: while a rebuild runs, memgest
// status shows the bytes still to rebuild at each redundancy level, and
// nothing of the sort once none is left.
func TestPrintStatusShowsPendingByRedundancy(t *testing.T) {
	st := server.Status{State: "ok", ShardsRebuilding: 2,
		Rebuild: core.ProgressReport{KeysDone: 10, KeysTotal: 40, PendingBytes: []int64{3 << 20, 2048, 0}}}
	var out bytes.Buffer
	printStatus(&out, st, nil)
	if want := "by failures the keys survive until then: 0: 3.00M  1: 2.00K  2: 0B"; !strings.Contains(out.String(), want) {
		t.Fatalf("status while rebuilding lacks %q:\n%s", want, out.String())
	}
	st.Rebuild.PendingBytes = []int64{0, 0, 0}
	out.Reset()
	printStatus(&out, st, nil)
	if strings.Contains(out.String(), "still to rebuild") {
		t.Fatalf("status shows bytes to rebuild with none left:\n%s", out.String())
	}
}

// TestStatusSaysWhenThereIsNoQuorum: with no Raft leader, the first line
// says the cluster is down for want of a quorum, for how long, and how
// many voters are up, instead of "cluster ok" (issue 43); with a leader it
// names it and the voters.
func TestStatusSaysWhenThereIsNoQuorum(t *testing.T) {
	down := server.Status{State: "ok", Epoch: 40, NoLeaderSeconds: 20.04, Voters: 3, VotersUp: 1, VoterTarget: 5}
	var out bytes.Buffer
	printStatus(&out, down, nil)
	first, _, _ := strings.Cut(out.String(), "\n")
	for _, want := range []string{"cluster DOWN: NO RAFT QUORUM", "epoch 40", "no leader for 20.0s", "1 of 3 voters up, 5 wanted", "CLUSTERDOWN"} {
		if !strings.Contains(first, want) {
			t.Errorf("no quorum: first line %q lacks %q", first, want)
		}
	}
	if strings.HasPrefix(first, "cluster ok") {
		t.Errorf("no quorum, yet %q", first)
	}
	up := server.Status{State: "ok", Epoch: 41, Leader: "127.0.0.1:17001", Quorum: true, Voters: 5, VotersUp: 5, VoterTarget: 5}
	if got, want := headline(up), "cluster ok  epoch 41  raft leader 127.0.0.1:17001 (5 of 5 voters up, 5 wanted)"; got != want {
		t.Errorf("with a leader: %q, want %q", got, want)
	}
}
