package server

import (
	"errors"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/stripe"
)

// failed returns m with the nodes at positions of shard 0's placement
// marked failed, in that order.
func failed(t *testing.T, m *cluster.Map, positions ...int) *cluster.Map {
	t.Helper()
	pl := slices.Clone(m.Shards[0].Placement)
	for _, p := range positions {
		m = mustApply(t, m, cluster.MarkFailed{ID: pl[p]})
	}
	return m
}

// TestDirectoryIntactNeedsALiveDirectoryNode: recovery of a shard can name
// every key whose pieces died only while a node that kept the shard's key
// directory (the last two up positions of its placement other than the
// coordinator) survives, up and not awaiting a rebuild.
func TestDirectoryIntactNeedsALiveDirectoryNode(t *testing.T) {
	for _, c := range []struct {
		name   string
		failed []int // positions of shard 0's 6-node placement
		intact bool
	}{
		{"the coordinator alone", []int{0}, true},
		{"the coordinator and one directory node", []int{0, 5}, true},
		{"the coordinator and the other", []int{4, 0}, true},
		{"the coordinator and both directory nodes", []int{0, 4, 5}, false},
		{"in another order", []int{5, 0, 4}, false},
		{"the coordinator and two nodes that hold no directory", []int{0, 1, 3}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := failed(t, testMap(t, 6), c.failed...)
			if got := directoryIntact(m, &m.Shards[0]); got != c.intact {
				t.Fatalf("directoryIntact = %v, want %v (rebuild %v)", got, c.intact, m.Shards[0].Rebuild)
			}
		})
	}
	// A directory node that failed before and was rebuilt past (its
	// position no longer listed for rebuild) was replaced by the next up
	// node, which the rebuild gave every entry: it counts.
	m := failed(t, testMap(t, 6), 5)
	sh := m.Shards[0]
	coord, _ := m.Coordinator(sh.First)
	m = mustApply(t, m, cluster.RebuildDone{Shard: 0, By: coord.ID, Positions: sh.Rebuild, Round: sh.RebuildRound})
	if len(m.Shards[0].Rebuild) != 0 {
		t.Fatalf("rebuild still lists %v", m.Shards[0].Rebuild)
	}
	if m = failed(t, m, 0, 4); !directoryIntact(m, &m.Shards[0]) {
		t.Fatal("the rebuilt directory node (position 3) was not counted")
	}
	if m = failed(t, m, 3); directoryIntact(m, &m.Shards[0]) {
		t.Fatal("intact with every directory node failed")
	}
}

// TestMayHoldKeysOfFollowsCoordination: a lost data position's chunks may
// hold a shard's keys only if the node that held the position may have
// coordinated the shard: it comes no later than the shard's coordinator
// in the shard's placement.
func TestMayHoldKeysOfFollowsCoordination(t *testing.T) {
	m := testMap(t, 6)
	sp, _ := scheme.Parse("stripe:4+2")
	m = mustApply(t, m, cluster.CreateScheme{Spec: sp})
	e, _ := m.Scheme("stripe:4+2")
	ring := slices.Clone(m.Shards[0].Placement) // shard g's placement is ring[g:] + ring[:g]
	// Nodes 3, 4 and 5 of the ring fail at once: shards 3, 4 and 5 pass
	// to node 0.
	for _, id := range ring[3:] {
		m = mustApply(t, m, cluster.MarkFailed{ID: id})
	}
	// Node 4's data positions: list 4 position 0, list 3 position 1, ...
	at := func(node, list int) lostPosition {
		return lostPosition{entry: e, list: uint16(list), pos: slices.Index(m.Shards[list].Placement, ring[node])}
	}
	for _, c := range []struct {
		node, list, shard int
		may               bool
	}{
		{4, 4, 4, true},  // its own shard
		{4, 3, 4, true},  // another list, same shard
		{3, 0, 4, false}, // node 3 comes after shard 4's coordinator (node 0)
		{5, 4, 4, true},  // node 5 coordinated shard 4 once node 4 was marked failed
		{4, 4, 5, false}, // node 4 comes after shard 5's coordinator
		{3, 3, 0, false}, // shard 0's coordinator (node 0) never failed
	} {
		if got := mayHoldKeysOf(m, at(c.node, c.list), &m.Shards[c.shard]); got != c.may {
			t.Errorf("node %d's position in list %d may hold keys of shard %d: %v, want %v", c.node, c.list, c.shard, got, c.may)
		}
	}
}

// TestSolveChunkTellsUndecodableFromBusy: a stripe with fewer parity
// chunks than positions lost cannot be decoded however long one waits
// (errStripeUndecodable, so beyond tolerance each such chunk is given up
// at once); one whose parities disagree with the data may be written to
// (errStripeBusy, retried).
func TestSolveChunkTellsUndecodableFromBusy(t *testing.T) {
	sp, _ := scheme.Parse("stripe:2+1/256")
	lp := lostPosition{entry: cluster.SchemeEntry{ID: 7, Spec: sp}, list: 0, pos: 0}
	id := stripe.ChunkID{List: 0, Position: 0, Stripe: 1}
	parity := stripeChunk{Found: true, J: 0, Bytes: make([]byte, 256), Through: []uint32{3, 5}, SealedAt: []bool{true, true}}
	// Position 1's chunk is sealed in parity and its node is gone too.
	v := stripeView{parities: []stripeChunk{parity}, data: make([]stripeChunk, 2)}
	if _, err := solveChunk(lp, v, id, 3); !errors.Is(err, errStripeUndecodable) {
		t.Fatalf("two positions lost, one parity: %v, want errStripeUndecodable", err)
	}
	// Position 1's chunk is there, at another seq than parity holds it.
	v.data[1] = stripeChunk{Found: true, Sealed: true, Seq: 6, Bytes: make([]byte, 256)}
	if _, err := solveChunk(lp, v, id, 3); !errors.Is(err, errStripeBusy) {
		t.Fatalf("a parity behind the data: %v, want errStripeBusy", err)
	}
	v.data[1].Seq = 5
	if b, err := solveChunk(lp, v, id, 3); err != nil || len(b) != 256 {
		t.Fatalf("decodable stripe: %d bytes, %v", len(b), err)
	}
}

// TestGoneOfNamesByAnyManifest: a lost chunk is named by the tags, in the
// recovering shard's slots, of the manifest any surviving holder kept;
// one with no manifest left, or lost while open, is unnamed.
func TestGoneOfNamesByAnyManifest(t *testing.T) {
	sh := cluster.Shard{First: 0, Last: 8191}
	in, out := keyInSlots(t, 0, 8191), keyInSlots(t, 8192, 16383)
	tagsOf := func(keys ...[]byte) []byte {
		var m []byte
		for _, k := range keys {
			t := stripe.KeyTag(k)
			m = append(m, byte(t>>16), byte(t>>8), byte(t))
		}
		return m
	}
	lp := lostPosition{pos: 1}
	named := []map[uint32]stripe.PositionState{
		nil, // a holder that failed
		{4: {Stripe: 4, Sealed: true, HasManifest: true, Manifest: tagsOf(in, out)}},
	}
	g := goneOf(lp, sh, 4, named, nil)
	if g.unnamed || !slices.Equal(g.tags, []uint32{stripe.KeyTag(in)}) {
		t.Fatalf("goneOf = %+v; want the tag of %s only", g, in)
	}
	for name, states := range map[string][]map[uint32]stripe.PositionState{
		"no manifest": {{4: {Stripe: 4, Sealed: true}}},
		"open":        {{4: {Stripe: 4, Open: true}}},
		"no state":    {nil, nil},
	} {
		if g := goneOf(lp, sh, 4, states, nil); !g.unnamed {
			t.Errorf("%s: goneOf = %+v, want unnamed", name, g)
		}
	}
}
