package cluster

import "testing"

// Two defects of cluster/failure.go found while writing decision 0017,
// and fixed: a replaced node left on standby, and retired shards' positions
// listed for rebuild.

// TestReplacedStandbyNodeLeavesStandby: a node on standby in a shard (it
// rejoined empty before the node that kept the shard's records) that
// fails again and is replaced by a spare must leave the shard's Standby
// with its place. takePlaces (a late spare) and MarkFailed (a spare
// waiting) put the spare in its position but keep it in Standby, and the
// map is invalid ("standby node … not placed"): UnmarshalMap would refuse
// it, in a Raft snapshot say. Now a node's Standby entry goes with its
// position.
func TestReplacedStandbyNodeLeavesStandby(t *testing.T) {
	x := testNode(0).ID
	onStandby := func(t *testing.T) *Map {
		return mustApply(t, formed(t, 4, 0), MarkFailed{ID: x}, Rejoin{ID: x})
	}
	t.Run("a late spare", func(t *testing.T) {
		checkValid(t, mustApply(t, onStandby(t), MarkFailed{ID: x}, AddNode{Node: testNode(7)}))
	})
	t.Run("a spare waiting", func(t *testing.T) {
		checkValid(t, mustApply(t, onStandby(t), AddNode{Node: testNode(7)}, MarkFailed{ID: x}))
	})
}

// TestRetiredShardsListNothingForRebuild: a retired shard routes nothing
// and has no coordinator, so nothing ever rebuilds it or clears its
// Rebuild list. MarkFailed and keepStandIns pass over retired shards now,
// but takePlaces does not: a late spare, a rejoined node, or a new identity
// at a failed node's address (decision 0017) taking a failed node's places
// lists its positions in retired shards too, and the node shows
// coordinated-normal in Map.Phase for ever. takePlaces passes over
// retired shards now, and fillFromSpares asks placedNode, so that a node
// placed only in retired shards waits for no spare.
func TestRetiredShardsListNothingForRebuild(t *testing.T) {
	m := formed(t, 4, 0)
	src := m.Shards[0]
	coord, _ := m.CoordinatorOf(&src)
	p := src.Placement
	m = mustApply(t, m, Migrate{From: 0, First: src.First, Last: src.Last, Placement: []NodeID{p[1], p[2], p[3], p[0]}})
	m = mustApply(t, m, MigrationDone{Shard: len(m.Shards) - 1, By: coord.ID})
	m = mustApply(t, m, MarkFailed{ID: p[2]})
	reborn := testNode(8)
	failed, _ := m.Node(p[2])
	reborn.ClientAddr, reborn.PeerAddr = failed.ClientAddr, failed.PeerAddr
	for _, tc := range []struct {
		name string
		cmd  Command
	}{
		{"a late spare", AddNode{Node: testNode(7)}},
		{"a rejoined node", Rejoin{ID: p[2]}},
		{"a new identity at the failed node's address", AddNode{Node: reborn}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustApply(t, m, tc.cmd); got.Shards[0].Rebuild != nil {
				t.Fatalf("retired shard 0 lists %v for rebuild", got.Shards[0].Rebuild)
			}
		})
	}
}
