package cluster

// Holders returns the nodes holding positions 0..width-1 of sh's placement
// for a scheme that occupies width nodes. A position whose node is up is
// held by it. A position whose node failed, with no spare to take its place,
// passes to a stand-in: the first up node after the scheme's first width
// positions that stands in for no earlier position (failed positions are
// served in placement order). So a scheme keeps its full width on the
// survivors while enough of them remain, and every scheme narrower than the
// placement gets its redundancy back after a failure (issue 4: "the failed
// node's positions are taken over by surviving nodes"). A position with no
// stand-in left keeps its failed node: the scheme then runs with reduced
// tolerance, and writers skip that piece.
//
// Positions 0..width-1 of the result are distinct nodes. A stand-in may
// change when a later failure hits a lower position; the shard's rebuild
// re-creates every stood-in position (Shard.Rebuild), and readers check each
// piece's index, so a piece left at a node's former position is never read
// as another.
func (m *Map) Holders(sh *Shard, width int) []Node {
	width = min(width, len(sh.Placement))
	out := make([]Node, width)
	next := width // where to look for the next stand-in
	for p := range out {
		n, _ := m.Node(sh.Placement[p])
		out[p] = n
		if n.State == Up {
			continue
		}
		for ; next < len(sh.Placement); next++ {
			if s, _ := m.Node(sh.Placement[next]); s.State == Up {
				out[p] = s
				next++
				break
			}
		}
	}
	return out
}

// StoodIn says whether position p of sh's placement is held by a stand-in
// (Holders) rather than by its own node: its node is not up.
func (m *Map) StoodIn(sh *Shard, p int) bool {
	n, ok := m.Node(sh.Placement[p])
	return !ok || n.State != Up
}
