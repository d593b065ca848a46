package cluster

import "slices"

// StandIn records that an up node holds one position of a shard's placement
// for the schemes occupying Width nodes, in place of the position's node,
// which is not up (Map.Holders). Recording the choice keeps it stable: a
// stand-in keeps its position until it fails or the position's own node (or
// a spare) takes it back, whatever fails meanwhile.
type StandIn struct {
	Width int    `json:"width"`
	Pos   int    `json:"pos"`
	Node  NodeID `json:"node"`
}

// Holders returns the nodes holding positions 0..width-1 of sh's placement
// for a scheme that occupies width nodes. A position whose node is up is
// held by it. A position whose node failed, with no spare to take its place,
// passes to a stand-in: a node after the scheme's first width positions
// that stands in for no other position. So a scheme keeps its full width on
// the survivors while enough of them remain, and every scheme narrower than
// the placement gets its redundancy back after a failure (issue 4: "the
// failed node's positions are taken over by surviving nodes"). A position
// with no stand-in left keeps its failed node: the scheme then runs with
// reduced tolerance, and writers skip that piece.
//
// Positions 0..width-1 of the result are distinct nodes. For the widths of
// the catalogue's schemes the stand-ins are those recorded in the shard
// (Shard.StandIns, kept by Apply), so a later failure never moves a stand-in
// that still holds its pieces; a position whose stand-in changes is listed
// for rebuild. Positions without a recorded stand-in (a width no scheme
// uses) take, in position order, the free up node past the width that the
// placement rule (domain.go) picks: the one whose zone, then host, holds
// the fewest of the positions' up holders; the first in placement order
// without domains.
func (m *Map) Holders(sh *Shard, width int) []Node {
	width = min(width, len(sh.Placement))
	out := make([]Node, width)
	down := 0
	for p := range out {
		out[p], _ = m.Node(sh.Placement[p])
		if out[p].State != Up {
			down++
		}
	}
	if down == 0 {
		return out // the common case: nobody stands in
	}
	var used []NodeID // recorded stand-ins taken
	for _, s := range sh.StandIns {
		if s.Width != width || s.Pos >= width || out[s.Pos].State == Up || slices.Contains(used, s.Node) {
			continue
		}
		if n, ok := m.Node(s.Node); ok && n.State == Up && slices.Index(sh.Placement, s.Node) >= width {
			out[s.Pos] = n
			used = append(used, n.ID)
		}
	}
	var free []Node // up nodes past the width standing in for nothing
	for _, id := range sh.Placement[width:] {
		if s, _ := m.Node(id); s.State == Up && !slices.Contains(used, s.ID) {
			free = append(free, s)
		}
	}
	c := newCrowd() // the placement rule (domain.go), over the up holders
	for _, h := range out {
		if h.State == Up {
			c.add(h)
		}
	}
	for p := range out {
		if out[p].State == Up || len(free) == 0 {
			continue
		}
		k := c.leastCrowded(free)
		out[p] = free[k]
		c.add(free[k])
		free = slices.Delete(free, k, k+1)
	}
	return out
}

// StoodIn says whether position p of sh's placement is held by a stand-in
// (Holders) rather than by its own node: its node is not up.
func (m *Map) StoodIn(sh *Shard, p int) bool {
	n, ok := m.Node(sh.Placement[p])
	return !ok || n.State != Up
}

// keepStandIns records, in every shard of m (a Clone being edited), the
// stand-ins Holders chooses for each width of the catalogue, and lists for
// rebuild every position whose holder for some width changed from prev to
// an up node: that node lacks the position's pieces. Recorded stand-ins are
// kept while valid, so this lists only the positions whose stand-in failed
// or whose node came back (which takePlaces lists too).
func (m *Map) keepStandIns(prev *Map) {
	widths := m.schemeWidths()
	for i := range m.Shards {
		sh := &m.Shards[i]
		if sh.Retired {
			continue // holds nothing: no stand-ins, nothing to rebuild
		}
		var old *Shard
		if len(prev.Shards) == len(m.Shards) {
			old = &prev.Shards[i]
		}
		var kept []StandIn
		for _, w := range widths {
			if w >= len(sh.Placement) {
				continue // no node past the width to stand in
			}
			holders := m.Holders(sh, w)
			for p, h := range holders {
				if m.StoodIn(sh, p) && h.State == Up {
					kept = append(kept, StandIn{Width: w, Pos: p, Node: h.ID})
				}
			}
			if old != nil {
				listChangedHolders(sh, prev.Holders(old, w), holders)
			}
		}
		sh.StandIns = kept
	}
}

// listChangedHolders lists for rebuild each position of sh whose holder
// went from before to a different, up node in after.
func listChangedHolders(sh *Shard, before, after []Node) {
	for p, h := range after {
		if p < len(before) && before[p].ID != h.ID && h.State == Up {
			sh.addRebuild(p)
		}
	}
}

// schemeWidths lists, once each, how many placement positions the
// catalogue's schemes occupy.
func (m *Map) schemeWidths() []int {
	var out []int
	for _, e := range m.Schemes {
		if w := e.Spec.Nodes(); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}
