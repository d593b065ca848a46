package cluster

import (
	"errors"
	"slices"
	"testing"
)

// During a migration the slots route to the source's coordinator on every
// node, while the importing shard's coordinator places them by its own
// shard (its view); MigrationDone hands them over and shrinks the source.
func TestMigrationRoutesToTheSourceUntilDone(t *testing.T) {
	m := formed(t, 6, 1)
	spare := testNode(6).ID
	m = mustApply(t, m, Promote{ID: spare})
	src := m.Shards[2]
	place := append([]NodeID{spare}, src.Placement[:5]...)
	m = mustApply(t, m, Migrate{From: 2, First: src.Last - 99, Last: src.Last, Placement: place})
	checkValid(t, m)
	slot := src.Last
	srcCoord, _ := m.CoordinatorOf(&m.Shards[2])
	if c, _ := m.Coordinator(slot); c.ID != srcCoord.ID {
		t.Fatalf("migrating slot routed to %s, want the source's %s", c.ID, srcCoord.ID)
	}
	if sh := m.ShardOf(slot); sh.ID != 2 {
		t.Fatalf("map places slot %d in shard %d", slot, sh.ID)
	}
	view := m.ViewFor(spare)
	if sh := view.ShardOf(slot); sh.ID != 6 {
		t.Fatalf("importer's view places slot %d in shard %d, want 6", slot, sh.ID)
	}
	if c, _ := view.Coordinator(slot); c.ID != srcCoord.ID {
		t.Fatalf("importer's view routes slot %d to %s", slot, c.ID)
	}
	if h := view.HoldersOf(slot, 3); h[0].ID != spare {
		t.Fatalf("importer's view holders %v", h)
	}
	if m.ViewFor(srcCoord.ID) != m || view != m.ViewFor(spare) {
		t.Fatal("views are not the map itself for others, or not kept")
	}
	if im := m.ImporterOf(slot); im == nil || im.ID != 6 || m.ImporterOf(src.First) != nil {
		t.Fatal("ImporterOf")
	}
	// An importing shard that recovers counts as recovering (its
	// coordinator refuses its keys meanwhile), though it routes nothing.
	rec := m.Clone()
	rec.Shards[6].Recovering, rec.Shards[6].Rebuild = true, []int{0}
	if rec.RecoveringShards() != 1 || rec.RebuildingShards() != 1 {
		t.Fatalf("a recovering importing shard: %d recovering, %d rebuilding; want 1, 1", rec.RecoveringShards(), rec.RebuildingShards())
	}
	// A second export from the same shard, and a MigrationDone from
	// another node, are refused or ignored.
	if _, err := Apply(m, Migrate{From: 2, First: src.First, Last: src.First, Placement: place}); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("second export: %v", err)
	}
	if next := mustApply(t, m, MigrationDone{Shard: 6, By: spare}); next != m {
		t.Fatal("MigrationDone by the importer changed the map")
	}
	m = mustApply(t, m, MigrationDone{Shard: 6, By: srcCoord.ID})
	checkValid(t, m)
	if c, _ := m.Coordinator(slot); c.ID != spare || m.Shards[2].Last != src.Last-100 {
		t.Fatalf("after done slot %d routes to %s, source ends at %d", slot, c.ID, m.Shards[2].Last)
	}
}

// Bad migrations are refused with a clear error and change nothing.
func TestMigrateRefusesBadInput(t *testing.T) {
	m := formed(t, 6, 1)
	spare := testNode(6).ID
	sh := m.Shards[1]
	ok := append([]NodeID{spare}, sh.Placement[1:]...)
	for name, c := range map[string]Migrate{
		"no shard":       {From: 9, First: 0, Last: 0, Placement: ok},
		"middle slots":   {From: 1, First: sh.First + 1, Last: sh.First + 2, Placement: ok},
		"spare placed":   {From: 1, First: sh.First, Last: sh.Last, Placement: ok},
		"short":          {From: 1, First: sh.First, Last: sh.Last, Placement: sh.Placement[:3]},
		"same coord":     {From: 1, First: sh.First, Last: sh.Last, Placement: sh.Placement},
		"repeated nodes": {From: 1, First: sh.First, Last: sh.Last, Placement: append([]NodeID{sh.Placement[1]}, sh.Placement[1:]...)},
	} {
		if next, err := Apply(m, c); err == nil || next != m {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
}

// A rebalance after adding three nodes to six gives each of the nine a
// fair share of coordinated slots; draining three of them moves them out
// of every placement, and removes them. Every intermediate map is valid.
func TestRebalanceGrowsAndDrains(t *testing.T) {
	m := formed(t, 6, 3)
	for i := 6; i < 9; i++ {
		m = mustApply(t, m, Promote{ID: testNode(i).ID})
	}
	m = runRebalance(t, m)
	share := 16384 / 9
	for _, n := range m.Nodes {
		if got := coordinated(m, n.ID); got < share-balanceSlack-1 || got > share+balanceSlack+1 {
			t.Errorf("node %s coordinates %d slots, share %d", n.ID[36:], got, share)
		}
	}
	for _, i := range []int{0, 4, 7} {
		m = mustApply(t, m, Drain{ID: testNode(i).ID})
	}
	m = runRebalance(t, m)
	for _, i := range []int{0, 4, 7} {
		if n, _ := m.Node(testNode(i).ID); n.State != Left || m.placedNode(n.ID) {
			t.Errorf("drained node %d is %s, placed %v", i, n.State, m.placedNode(n.ID))
		}
	}
	if _, err := Apply(m, Drain{ID: testNode(1).ID}); !errors.Is(err, ErrTooFewNodes) {
		t.Errorf("draining below the width: %v", err)
	}
}

// runRebalance applies NextSteps until none is left, ending each
// migration as its source's coordinator would.
func runRebalance(t *testing.T, m *Map) *Map {
	t.Helper()
	for round := 0; ; round++ {
		if round > 200 {
			t.Fatal("rebalance does not converge")
		}
		steps := NextSteps(m, 4)
		if len(steps) == 0 {
			return m
		}
		for _, c := range steps {
			if r, ok := c.(RemoveNode); ok { // the caller hands the vote over first
				m = mustApply(t, m, SetVoters{Nodes: []VoterFlag{{ID: r.ID, Voter: false}}})
			}
			m = mustApply(t, m, c)
			checkValid(t, m)
		}
		for _, sh := range slices.Clone(m.Shards) {
			if sh.Importing {
				c, _ := m.CoordinatorOf(&m.Shards[sh.From])
				m = mustApply(t, m, MigrationDone{Shard: sh.ID, By: c.ID})
				checkValid(t, m)
			}
		}
	}
}

func coordinated(m *Map, id NodeID) int {
	n := 0
	for s := range 16384 {
		if c, _ := m.Coordinator(s); c.ID == id {
			n++
		}
	}
	return n
}
