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
	st.mu.Unlock()
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
