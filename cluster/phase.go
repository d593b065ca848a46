package cluster

import "slices"

// Phase is where a node stands in MemEC's failure handling (§5.2), derived
// from the map:
//
//   - "normal": nothing of the node's is being recovered or rebuilt;
//   - "intermediate": it coordinates a shard whose failed coordinator's
//     records it is recovering (the shard answers TRYAGAIN meanwhile);
//   - "degraded": it serves a shard that lost pieces with a failed node and
//     has not got them back (reads decode around them);
//   - "coordinated-normal": it is a replacement (spare, stand-in position,
//     rejoined node) whose positions are being filled by a rebuild;
//   - "failed": the node itself is marked failed.
//
// A node in several roles shows the earliest phase of the list above it
// is in, intermediate first.
func (m *Map) Phase(id NodeID) string {
	n, ok := m.Node(id)
	switch {
	case !ok:
		return "unknown"
	case n.State == Failed:
		return "failed"
	}
	phase := "normal"
	rank := map[string]int{"normal": 0, "coordinated-normal": 1, "degraded": 2, "intermediate": 3}
	worse := func(p string) {
		if rank[p] > rank[phase] {
			phase = p
		}
	}
	for i := range m.Shards {
		sh := &m.Shards[i]
		coord, ok := m.CoordinatorOf(sh)
		switch {
		case ok && coord.ID == id && sh.Recovering:
			worse("intermediate")
		case ok && coord.ID == id && len(sh.Rebuild) > 0:
			worse("degraded")
		case m.fillsRebuild(sh, id):
			worse("coordinated-normal")
		}
	}
	return phase
}

// fillsRebuild says whether id holds a position of sh listed for rebuild.
func (m *Map) fillsRebuild(sh *Shard, id NodeID) bool {
	for _, p := range sh.Rebuild {
		if p < len(sh.Placement) && sh.Placement[p] == id {
			return true
		}
	}
	return slices.Contains(sh.Standby, id) && len(sh.Rebuild) > 0
}
