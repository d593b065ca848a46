package stripe

import (
	"errors"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// TestMayHoldKeysOfFollowsCoordination: a lost data position's chunks may
// hold a shard's keys only if the node that held the position may have
// coordinated the shard: it comes no later than the shard's coordinator
// in the shard's placement.
func TestMayHoldKeysOfFollowsCoordination(t *testing.T) {
	m := kindtest.Map(t, 6, "stripe:4+2")
	e := kindtest.Entry(t, m, "stripe:4+2")
	ring := slices.Clone(m.Shards[0].Placement) // shard g's placement is ring[g:] + ring[:g]
	// Nodes 3, 4 and 5 of the ring fail at once: shards 3, 4 and 5 pass
	// to node 0.
	for _, id := range ring[3:] {
		m = kindtest.Apply(t, m, cluster.MarkFailed{ID: id})
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
// (errUndecodable, so beyond tolerance each such chunk is given up
// at once); one whose parities disagree with the data may be written to
// (errBusy, retried).
func TestSolveChunkTellsUndecodableFromBusy(t *testing.T) {
	sp, _ := scheme.Parse("stripe:2+1/256")
	lp := lostPosition{entry: cluster.SchemeEntry{ID: 7, Spec: sp}, list: 0, pos: 0}
	id := ChunkID{List: 0, Position: 0, Stripe: 1}
	parity := chunkReply{Found: true, J: 0, Bytes: make([]byte, 256), Through: []uint32{3, 5}, SealedAt: []bool{true, true}}
	// Position 1's chunk is sealed in parity and its node is gone too.
	v := stripeView{parities: []chunkReply{parity}, data: make([]chunkReply, 2)}
	if _, err := solveChunk(lp, v, id, 3); !errors.Is(err, errUndecodable) {
		t.Fatalf("two positions lost, one parity: %v, want errUndecodable", err)
	}
	// Position 1's node is up and whole but no longer has the chunk: it
	// freed it (compaction) and the Free has not reached the parity holder
	// yet. That is an update in flight, not a second loss; it once failed
	// a restore with "2 positions lost".
	v.whole = []bool{false, true}
	if _, err := solveChunk(lp, v, id, 3); !errors.Is(err, errBusy) {
		t.Fatalf("a chunk its whole position freed, still in parity: %v, want errBusy", err)
	}
	v.whole = nil
	// Position 1's chunk is there, at another seq than parity holds it.
	v.data[1] = chunkReply{Found: true, Sealed: true, Seq: 6, Bytes: make([]byte, 256)}
	if _, err := solveChunk(lp, v, id, 3); !errors.Is(err, errBusy) {
		t.Fatalf("a parity behind the data: %v, want errBusy", err)
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
	in, out := kindtest.KeyInSlots(t, 0, 8191), kindtest.KeyInSlots(t, 8192, 16383)
	tagsOf := func(keys ...[]byte) []byte {
		var m []byte
		for _, k := range keys {
			t := keyslot.Tag(k)
			m = append(m, byte(t>>16), byte(t>>8), byte(t))
		}
		return m
	}
	lp := lostPosition{pos: 1}
	named := []map[uint32]PositionState{
		nil, // a holder that failed
		{4: {Stripe: 4, Sealed: true, HasManifest: true, Manifest: tagsOf(in, out)}},
	}
	g := goneOf(lp, sh, 4, named, nil)
	if g.unnamed || !slices.Equal(g.tags, []uint32{keyslot.Tag(in)}) {
		t.Fatalf("goneOf = %+v; want the tag of %s only", g, in)
	}
	for name, states := range map[string][]map[uint32]PositionState{
		"no manifest": {{4: {Stripe: 4, Sealed: true}}},
		"open":        {{4: {Stripe: 4, Open: true}}},
		"no state":    {nil, nil},
	} {
		if g := goneOf(lp, sh, 4, states, nil); !g.unnamed {
			t.Errorf("%s: goneOf = %+v, want unnamed", name, g)
		}
	}
}
