package cluster

import (
	"slices"
	"testing"
)

// ids lists the ids of nodes.
func ids(nodes []Node) []NodeID {
	out := make([]NodeID, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

func TestHoldersStandInForFailedPositions(t *testing.T) {
	m := formed(t, 6, 0)
	sh := &m.Shards[0]
	p := slices.Clone(sh.Placement)
	if got := ids(m.Holders(sh, 3)); !slices.Equal(got, p[:3]) {
		t.Fatalf("healthy holders %v, want %v", got, p[:3])
	}
	m = mustApply(t, m, MarkFailed{ID: p[1]})
	sh = &m.Shards[0]
	if got, want := ids(m.Holders(sh, 3)), []NodeID{p[0], p[3], p[2]}; !slices.Equal(got, want) {
		t.Fatalf("holders after position 1 failed: %v, want %v (the first node past the width stands in)", got, want)
	}
	if !slices.Contains(sh.Rebuild, 1) {
		t.Fatalf("rebuild %v does not list the failed position", sh.Rebuild)
	}
	m = mustApply(t, m, MarkFailed{ID: p[2]})
	sh = &m.Shards[0]
	if got, want := ids(m.Holders(sh, 3)), []NodeID{p[0], p[3], p[4]}; !slices.Equal(got, want) {
		t.Fatalf("holders after positions 1 and 2 failed: %v, want %v", got, want)
	}
	// The full width has no stand-in left: the failed nodes stay, and
	// callers skip them (reduced tolerance).
	full := m.Holders(sh, 6)
	if full[1].ID != p[1] || full[1].State != Failed || full[2].State != Failed {
		t.Fatalf("full-width holders %v: failed positions should keep their failed nodes", ids(full))
	}
	if m.StoodIn(sh, 0) || !m.StoodIn(sh, 1) {
		t.Fatal("StoodIn wrong")
	}
	checkHoldersOf(t, m)
	if h := NewMap(3, 1).HoldersOf(0, 1); h != nil {
		t.Fatalf("a forming map has holders %v", ids(h))
	}
}

// checkHoldersOf compares HoldersOf, which reads the map's index, with
// Holders for every shard and every width up to one past its placement, in
// m and in m encoded and decoded (which builds its index anew).
func checkHoldersOf(t *testing.T, m *Map) {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalMap(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, mm := range []*Map{m, back} {
		for i := range mm.Shards {
			sh := &mm.Shards[i]
			for w := 1; w <= len(sh.Placement)+1; w++ {
				for _, slot := range []int{sh.First, sh.Last} {
					if got, want := ids(mm.HoldersOf(slot, w)), ids(mm.Holders(sh, w)); !slices.Equal(got, want) {
						t.Fatalf("shard %d width %d slot %d: HoldersOf %v, Holders %v", i, w, slot, got, want)
					}
				}
			}
		}
	}
}

// TestStandInsStayPut: for the widths of the catalogue's schemes a stand-in
// keeps its position while it is up, whatever fails later (a failure at a
// lower position used to shift every stand-in after it, leaving parity
// with a node that was no longer asked for it), and a position whose
// stand-in fails is listed for rebuild again, for the node that takes it.
func TestStandInsStayPut(t *testing.T) {
	m := mustApply(t, formed(t, 6, 0), CreateScheme{Spec: spec(t, "stripe:2+1")})
	p := slices.Clone(m.Shards[0].Placement)
	m = mustApply(t, m, MarkFailed{ID: p[2]})
	if got, want := ids(m.Holders(&m.Shards[0], 3)), []NodeID{p[0], p[1], p[3]}; !slices.Equal(got, want) {
		t.Fatalf("holders after position 2 failed: %v, want %v", got, want)
	}
	m = clearRebuilds(t, m)

	m = mustApply(t, m, MarkFailed{ID: p[1]})
	checkValid(t, m)
	sh := &m.Shards[0]
	if got, want := ids(m.Holders(sh, 3)), []NodeID{p[0], p[4], p[3]}; !slices.Equal(got, want) {
		t.Fatalf("holders after position 1 failed too: %v, want %v (position 2 keeps its stand-in)", got, want)
	}
	if !slices.Equal(sh.Rebuild, []int{1}) {
		t.Fatalf("rebuild %v, want only the newly failed position [1]", sh.Rebuild)
	}
	checkHoldersOf(t, m)
	// A width no scheme uses has nothing recorded: stand-ins in position
	// order.
	if got, want := ids(m.Holders(sh, 4)), []NodeID{p[0], p[4], p[5], p[3]}; !slices.Equal(got, want) {
		t.Fatalf("width-4 holders %v, want %v", got, want)
	}
	m = clearRebuilds(t, m)

	// The stand-in of position 2 fails: position 2 passes to the last
	// free node and is listed for rebuild with the stand-in's own position.
	m = mustApply(t, m, MarkFailed{ID: p[3]})
	sh = &m.Shards[0]
	if got, want := ids(m.Holders(sh, 3)), []NodeID{p[0], p[4], p[5]}; !slices.Equal(got, want) {
		t.Fatalf("holders after the stand-in failed: %v, want %v", got, want)
	}
	if r := slices.Sorted(slices.Values(sh.Rebuild)); !slices.Equal(r, []int{2, 3}) {
		t.Fatalf("rebuild %v, want [2 3]: position 2 changed hands", sh.Rebuild)
	}
	// The node of position 1 comes back: it takes its position again,
	// and position 2's stand-in stays.
	m = mustApply(t, m, Rejoin{ID: p[1]})
	checkValid(t, m)
	sh = &m.Shards[0]
	if got, want := ids(m.Holders(sh, 3)), []NodeID{p[0], p[1], p[5]}; !slices.Equal(got, want) {
		t.Fatalf("holders after position 1's node rejoined: %v, want %v", got, want)
	}
	if !slices.Contains(sh.Rebuild, 1) {
		t.Fatalf("rebuild %v does not list the rejoined position", sh.Rebuild)
	}
	checkHoldersOf(t, m)

	bad := m.Clone()
	bad.Shards[0].StandIns = []StandIn{{Width: 3, Pos: 2, Node: p[1]}}
	if err := bad.validate(); err == nil {
		t.Fatal("a stand-in inside the scheme's width passed validation")
	}
}

// clearRebuilds has each shard's coordinator report its rebuild done (and
// any recovery).
func clearRebuilds(t *testing.T, m *Map) *Map {
	t.Helper()
	for _, sh := range m.Shards {
		coord, _ := m.Coordinator(sh.First)
		if sh.Recovering {
			m = mustApply(t, m, ShardRecovered{Shard: sh.ID, By: coord.ID})
		}
		if len(sh.Rebuild) > 0 {
			m = mustApply(t, m, RebuildDone{Shard: sh.ID, By: coord.ID, Positions: sh.Rebuild, Round: m.Shards[sh.ID].RebuildRound})
		}
	}
	return m
}

func TestLateSpareStandsByWhereTheCoordinatorKeptTheRecords(t *testing.T) {
	m := formed(t, 4, 0)
	victim := m.Shards[0].Placement[0]
	m = mustApply(t, m, MarkFailed{ID: victim})
	heir, _ := m.Coordinator(m.Shards[0].First)
	m = mustApply(t, m, ShardRecovered{Shard: 0, By: heir.ID}, RebuildDone{Shard: 0, By: heir.ID, Positions: []int{0}, Round: m.Shards[0].RebuildRound})

	spare := testNode(9)
	m = mustApply(t, m, AddNode{Node: spare})
	checkValid(t, m)
	if n, _ := m.Node(spare.ID); n.State != Up {
		t.Fatalf("a spare joining while a failed node waits is %v, not up", n.State)
	}
	for i, sh := range m.Shards {
		if slices.Contains(sh.Placement, victim) {
			t.Fatalf("shard %d still places the failed node", i)
		}
		if j := slices.Index(sh.Placement, spare.ID); j < 0 || !slices.Contains(sh.Rebuild, j) {
			t.Fatalf("shard %d: the spare at position %d is not listed for rebuild (%v)", i, j, sh.Rebuild)
		}
	}
	sh := m.Shards[0]
	if sh.Placement[0] != spare.ID || !slices.Contains(sh.Standby, spare.ID) {
		t.Fatalf("shard 0: placement %v standby %v; want the spare at position 0, on standby", sh.Placement, sh.Standby)
	}
	if c, _ := m.Coordinator(sh.First); c.ID != heir.ID {
		t.Fatalf("shard 0 coordinated by %s, want %s, which kept its records", c.ID, heir.ID)
	}
	checkCoordinators(t, m)
	if sh.Recovering || len(sh.Rebuild) != 1 {
		t.Fatalf("shard 0: recovering %v rebuild %v, want only the spare's position to rebuild", sh.Recovering, sh.Rebuild)
	}
	// Should the coordinator fail too, the standby node coordinates.
	m = mustApply(t, m, MarkFailed{ID: heir.ID})
	if c, _ := m.Coordinator(sh.First); c.ID == heir.ID {
		t.Fatal("a failed node still coordinates")
	}
	checkCoordinators(t, m)
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := UnmarshalMap(b); err != nil || !slices.Equal(back.Shards[0].Standby, m.Shards[0].Standby) {
		t.Fatalf("standby did not survive encoding: %v", err)
	}
}

func TestRejoinTakesBackPlacesOrBecomesASpare(t *testing.T) {
	m := formed(t, 4, 0)
	victim := m.Shards[0].Placement[0]
	failedMap := mustApply(t, m, MarkFailed{ID: victim})
	heir, _ := failedMap.Coordinator(failedMap.Shards[0].First)

	back := mustApply(t, failedMap, Rejoin{ID: victim})
	checkValid(t, back)
	if n, _ := back.Node(victim); n.State != Up {
		t.Fatalf("rejoined node is %v, want up (it still had places)", n.State)
	}
	if c, _ := back.Coordinator(back.Shards[0].First); c.ID != heir.ID {
		t.Fatalf("the rejoined, empty node took coordination of shard 0 from %s", heir.ID)
	}
	for i, sh := range back.Shards {
		if !slices.Contains(sh.Placement, victim) {
			t.Fatalf("shard %d lost the rejoined node", i)
		}
		if j := slices.Index(sh.Placement, victim); !slices.Contains(sh.Rebuild, j) {
			t.Fatalf("shard %d: the rejoined node's position %d is not listed for rebuild (%v)", i, j, sh.Rebuild)
		}
	}
	if again := mustApply(t, back, Rejoin{ID: victim}); again.Epoch != back.Epoch {
		t.Fatal("rejoining an up node changed the map")
	}

	// Replaced by a spare, the node has no places left: it comes back as
	// a spare, and takes the places of the next node to fail.
	m = formed(t, 4, 1)
	victim = m.Shards[0].Placement[0]
	m = mustApply(t, m, MarkFailed{ID: victim}, Rejoin{ID: victim})
	if n, _ := m.Node(victim); n.State != Spare {
		t.Fatalf("a replaced node rejoined as %v, want spare", n.State)
	}
	other := m.Shards[1].Placement[0]
	m = mustApply(t, m, MarkFailed{ID: other})
	checkValid(t, m)
	if n, _ := m.Node(victim); n.State != Up || !slices.Contains(m.Shards[1].Placement, victim) {
		t.Fatal("the rejoined spare did not replace the next failed node")
	}
	if _, err := Apply(m, Rejoin{ID: testNode(77).ID}); err == nil {
		t.Fatal("an unknown node rejoined")
	}
	b, _ := EncodeCommand(Rejoin{ID: victim})
	if c, err := DecodeCommand(b); err != nil || c != (Rejoin{ID: victim}) {
		t.Fatalf("round trip: %v %v", c, err)
	}
}

func TestPhasesFollowMemECsFailureStates(t *testing.T) {
	m := formed(t, 4, 1)
	victim, spare := m.Shards[0].Placement[0], m.Nodes[4].ID
	for _, n := range m.Nodes {
		if p := m.Phase(n.ID); p != "normal" {
			t.Fatalf("node %s is %s in a healthy cluster", n.ID, p)
		}
	}
	m = mustApply(t, m, MarkFailed{ID: victim})
	if got := m.Phase(victim); got != "failed" {
		t.Fatalf("the failed node is %s", got)
	}
	if got := m.Phase(spare); got != "intermediate" {
		t.Fatalf("the spare recovering the failed coordinator's shard is %s, want intermediate", got)
	}
	m = mustApply(t, m, ShardRecovered{Shard: 0, By: spare})
	if got := m.Phase(spare); got != "degraded" {
		t.Fatalf("the spare serving a shard with pieces to rebuild is %s, want degraded", got)
	}
	other := m.Shards[1]
	c, _ := m.Coordinator(other.First)
	if got := m.Phase(c.ID); got != "degraded" {
		t.Fatalf("coordinator of a shard that lost a redundancy position is %s, want degraded", got)
	}
	m = mustApply(t, m, RebuildDone{Shard: 0, By: spare, Positions: m.Shards[0].Rebuild, Round: m.Shards[0].RebuildRound})
	if got := m.Phase(spare); got != "coordinated-normal" {
		t.Fatalf("the spare whose own shard is rebuilt, still filling others' positions, is %s", got)
	}
	for _, sh := range m.Shards {
		coord, _ := m.Coordinator(sh.First)
		m = mustApply(t, m, RebuildDone{Shard: sh.ID, By: coord.ID, Positions: sh.Rebuild, Round: sh.RebuildRound})
	}
	if got := m.Phase(spare); got != "normal" {
		t.Fatalf("after every rebuild the spare is %s", got)
	}
	if got := m.Phase(testNode(77).ID); got != "unknown" {
		t.Fatalf("an unknown node is %s", got)
	}
}
