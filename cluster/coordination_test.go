package cluster

import (
	"math/rand/v2"
	"testing"
)

// TestCoordinationLeavesOnlyFailedNodes: over random sequences of failures,
// rejoins and finished recoveries, a shard's coordination never moves off a node that is still
// up, and when it moves the shard is recovering: the new coordinator
// recovers the records before it serves them. A move to a node that came
// back empty without a recovery would serve an empty store for keys that
// exist (DESIGN.md §4).
func TestCoordinationLeavesOnlyFailedNodes(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		m := formed(t, 3+int(seed%3), int(seed%2)) // with a spare in half the runs
		for step := range 40 {
			id := m.Nodes[r.IntN(len(m.Nodes))].ID
			var c Command = MarkFailed{ID: id}
			if n, _ := m.Node(id); n.State == Failed {
				c = Rejoin{ID: id}
			}
			if sh := m.Shards[r.IntN(len(m.Shards))]; sh.Recovering && r.IntN(2) == 0 {
				if co, ok := m.Coordinator(sh.First); ok {
					c = ShardRecovered{Shard: sh.ID, By: co.ID} // its coordinator recovered it
				}
			}
			next := mustApply(t, m, c)
			for i, sh := range next.Shards {
				before, okBefore := m.Coordinator(m.Shards[i].First)
				after, okAfter := next.Coordinator(sh.First)
				if !okBefore || !okAfter || before.ID == after.ID {
					continue
				}
				if was, _ := next.Node(before.ID); was.State == Up {
					t.Fatalf("seed %d step %d, %T %s: shard %d moved from %s, still up, to %s (placement %v, standby %v)",
						seed, step, c, id[38:], i, before.ID[38:], after.ID[38:], sh.Placement, sh.Standby)
				}
				if !sh.Recovering {
					t.Fatalf("seed %d step %d, %T %s: shard %d moved to %s without a recovery", seed, step, c, id[38:], i, after.ID[38:])
				}
			}
			m = next
		}
	}
}
