package simcluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
)

// TestFailoverReplaysFromItsSeed runs the coordinator failure with a spare
// twice with one seed and compares the traces line by line: every command
// and its reply (versions masked), every kill, and the map's epoch, node
// states and shard coordinators after each settled step. Raft's timing,
// the leader's identity and the count of TRYAGAIN answers during recovery
// are not in the trace (package doc); everything in it must repeat. A
// third run with another seed must differ, or the trace would prove
// nothing.
func TestFailoverReplaysFromItsSeed(t *testing.T) {
	seed := simcluster.Seed(t)
	run := func(seed uint64) []string {
		var trace []string
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := simcluster.Start(t, seed, simcluster.Options{Nodes: 6, Spares: 1})
			coordinatorFailure(t, c, 6)
			trace = c.Trace()
		})
		if len(trace) == 0 {
			t.FailNow()
		}
		return trace
	}
	first, second := run(seed), run(seed)
	if diff := firstDifference(first, second); diff != "" {
		t.Fatalf("seed %d did not replay: %s", seed, diff)
	}
	t.Logf("seed %d replayed: %d trace lines alike, the last: %s", seed, len(first), first[len(first)-1])
	if other := run(seed + 1); firstDifference(first, other) == "" {
		t.Fatalf("seeds %d and %d gave the same trace", seed, seed+1)
	}
}

// firstDifference describes the first line where two traces differ, or
// returns "" when they are the same.
func firstDifference(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d lines against %d; the longer goes on with %q", len(a), len(b),
			strings.Join(append(a[min(len(a), len(b)):], b[min(len(a), len(b)):]...), " | "))
	}
	return ""
}
