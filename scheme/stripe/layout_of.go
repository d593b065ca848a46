package stripe

import (
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
)

// Layout describes key's chunk for SCHEME.OF (kind.Describer): the
// chunk, open or sealed, its list's holders with their roles (parity,
// and for hybrid the replica), and how many more failures the key
// survives now (keyTolerance). It reports false for a key this node
// holds in no chunk of the scheme.
func (s *Bound) Layout(m *cluster.Map, key []byte) (kind.Layout, bool) {
	st := s.eng.byID(s.Entry().ID)
	if st == nil {
		return kind.Layout{}, false
	}
	st.mu.Lock()
	id, _, found := st.data.Locate(key)
	_, sealed, _, _ := st.data.Read(id)
	r, inBatch := st.newerInBatch(key)
	st.mu.Unlock()
	if inBatch {
		return s.batchLayout(m, st, r)
	}
	if !found || int(id.List) >= len(m.Shards) {
		return kind.Layout{}, false
	}
	spec, sh := st.spec, &m.Shards[id.List]
	all := m.Holders(sh, spec.K+spec.M)
	if len(all) < spec.K+spec.M {
		return kind.Layout{}, false
	}
	var out kind.Layout
	lost := make([]bool, len(all))
	for p, node := range all {
		lost[p] = positionLost(sh, node, p)
		if p < spec.K {
			continue
		}
		role := "parity"
		if p-spec.K == replicaHolder(spec) {
			role = "replica"
		}
		out.Pieces = append(out.Pieces, kind.Placed{Role: role, Index: p - spec.K, Node: node,
			Rebuilding: node.State == cluster.Up && slices.Contains(sh.Rebuild, p)})
	}
	out.Tolerates = keyTolerance(spec, lost, int(id.Position))
	state := "open"
	if sealed {
		state = "sealed"
	}
	out.Details = []kind.Detail{
		{Name: "chunk", Value: fmt.Sprintf("%d/%d/%d", id.List, id.Position, id.Stripe)},
		{Name: "chunk_state", Value: state},
	}
	return out, true
}

// keyTolerance is how many more failures of its list a key in the chunk at
// data position pos survives, lost saying which of the list's K+M
// positions are lost now: the fewest further failures that lose the
// chunk, less one. A chunk is lost once every whole copy of it is (the
// data position, and for hybrid the replica holder) and more than M
// positions of the list are (K survivors no longer decode it; for hybrid
// the M−1 parities no longer cover the other losses).
func keyTolerance(spec scheme.Spec, lost []bool, pos int) int {
	down := 0
	for _, l := range lost {
		if l {
			down++
		}
	}
	copies := []int{pos}
	if r := replicaHolder(spec); r >= 0 {
		copies = append(copies, spec.K+r)
	}
	live := 0 // failures until every whole copy is lost
	for _, p := range copies {
		if !lost[p] {
			live++
		}
	}
	return max(max(spec.M+1-down, live)-1, 0)
}

// batchLayout describes a batch key's stripe for SCHEME.OF: the nodes of
// its pieces with their roles (data chunk q, parity j), which data chunk
// holds the key, and how many more failures the key survives.
func (s *Bound) batchLayout(m *cluster.Map, st *schemeState, r batchRef) (kind.Layout, bool) {
	holders, err := listHolders(m, st.spec, r.shard)
	if err != nil {
		return kind.Layout{}, false
	}
	sh := &m.Shards[r.shard]
	var out kind.Layout
	self := s.eng.host.Self()
	for role := range st.spec.K + batchParities(st.spec) {
		p := batchPosition(st.spec, role, r.c)
		node := holders[p]
		if role == 0 && node.ID == self {
			continue // kept here, with no piece of its own
		}
		name, index := "data", role
		if role >= st.spec.K {
			name, index = "parity", role-st.spec.K
		}
		out.Pieces = append(out.Pieces, kind.Placed{Role: name, Index: index, Node: node,
			Rebuilding: node.State == cluster.Up && slices.Contains(sh.Rebuild, p)})
	}
	copies, pieceNodes := batchCover(st.spec, sh, holders, r.c, self, st.batch.data.keeps, r.loc.Chunk)
	out.Tolerates = batchTolerance(len(pieceNodes), st.spec.K, copies, pieceNodes)
	out.Details = []kind.Detail{
		{Name: "chunk", Value: fmt.Sprintf("batch %d/%d/%d", r.shard, r.serial, r.loc.Chunk)},
		{Name: "chunk_state", Value: "batch"},
	}
	return out, true
}

// batchTolerance is how many more failures a batch object survives: it
// is readable while a node with its chunk whole lives or K of its
// stripe's pieces do, so losing it takes every copy holder that holds no
// piece, and enough piece holders to leave fewer than K pieces, the
// copy holders among them included.
func batchTolerance(pieces, k int, copies, pieceNodes map[cluster.NodeID]bool) int {
	offPiece, onPiece := 0, 0
	for id := range copies {
		if pieceNodes[id] {
			onPiece++
		} else {
			offPiece++
		}
	}
	return max(offPiece+max(pieces-k+1, onPiece)-1, 0)
}
