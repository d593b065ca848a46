package cluster

import "slices"

// MarkFailed records the failure detector's decision that a node is gone
// (DESIGN.md §4: the control plane decides, bumps the epoch, and only then
// does anyone act). If a spare is available, the first one (in join order)
// takes the failed node's place in every placement and becomes up (Ring
// §5.5); otherwise the node just leaves every placement's live set. Either
// way each shard it coordinated passes to a new coordinator (the spare, or
// the next up node of its placement), marked Recovering until that node has
// recovered the shard's records.
type MarkFailed struct {
	ID NodeID `json:"id"`
}

// ShardRecovered ends a shard's recovery. Only the shard's current
// coordinator may end it (By), so a proposal made under an older map, for a
// coordinator that has since failed too, changes nothing.
type ShardRecovered struct {
	Shard int    `json:"shard"`
	By    NodeID `json:"by"`
}

func (c MarkFailed) apply(m *Map) (*Map, error) {
	n, ok := m.Node(c.ID)
	if !ok {
		return nil, errorf(ErrBadNode, "no node %s", c.ID)
	}
	if n.State == Failed || n.State == Left {
		return m, nil
	}
	next := m.Clone()
	next.Nodes[m.index().node[c.ID]].State = Failed
	spare := m.firstSpare()
	if spare >= 0 {
		next.Nodes[spare].State = Up
	}
	for i, sh := range m.Shards {
		if coord, ok := m.Coordinator(sh.First); ok && coord.ID == c.ID {
			next.Shards[i].Recovering = true
		}
		if spare >= 0 {
			for j, id := range sh.Placement {
				if id == c.ID {
					next.Shards[i].Placement[j] = m.Nodes[spare].ID
					if !slices.Contains(next.Shards[i].Rebuild, j) {
						next.Shards[i].Rebuild = append(next.Shards[i].Rebuild, j)
					}
				}
			}
		}
	}
	return next, nil
}

// firstSpare is the position in Nodes of the first spare, or -1.
func (m *Map) firstSpare() int {
	for i, n := range m.Nodes {
		if n.State == Spare {
			return i
		}
	}
	return -1
}

func (c ShardRecovered) apply(m *Map) (*Map, error) {
	if c.Shard < 0 || c.Shard >= len(m.Shards) {
		return nil, errorf(ErrBadCommand, "no shard %d", c.Shard)
	}
	sh := m.Shards[c.Shard]
	coord, ok := m.Coordinator(sh.First)
	if !sh.Recovering || !ok || coord.ID != c.By {
		return m, nil
	}
	next := m.Clone()
	next.Shards[c.Shard].Recovering = false
	return next, nil
}

// RebuildDone records that the shard's coordinator (By) has re-created the
// pieces of the listed placement positions; positions added by a later
// failure stay listed.
type RebuildDone struct {
	Shard     int    `json:"shard"`
	By        NodeID `json:"by"`
	Positions []int  `json:"positions"`
}

func (c RebuildDone) apply(m *Map) (*Map, error) {
	if c.Shard < 0 || c.Shard >= len(m.Shards) {
		return nil, errorf(ErrBadCommand, "no shard %d", c.Shard)
	}
	sh := m.Shards[c.Shard]
	coord, ok := m.Coordinator(sh.First)
	if !ok || coord.ID != c.By || len(sh.Rebuild) == 0 {
		return m, nil
	}
	left := slices.DeleteFunc(slices.Clone(sh.Rebuild), func(p int) bool { return slices.Contains(c.Positions, p) })
	if len(left) == len(sh.Rebuild) {
		return m, nil
	}
	next := m.Clone()
	next.Shards[c.Shard].Rebuild = left
	if len(left) == 0 {
		next.Shards[c.Shard].Rebuild = nil
	}
	return next, nil
}

// SetVoters records Raft suffrage changes in the map (ReplaceVoter).
type SetVoters struct {
	Nodes []VoterFlag `json:"nodes"`
}

// VoterFlag is one node's suffrage.
type VoterFlag struct {
	ID    NodeID `json:"id"`
	Voter bool   `json:"voter"`
}

func (c SetVoters) apply(m *Map) (*Map, error) {
	next := m.Clone()
	changed := false
	for _, f := range c.Nodes {
		i, ok := m.index().node[f.ID]
		if !ok {
			return nil, errorf(ErrBadNode, "no node %s", f.ID)
		}
		if next.Nodes[i].Voter != f.Voter {
			next.Nodes[i].Voter, changed = f.Voter, true
		}
	}
	if !changed {
		return m, nil
	}
	return next, nil
}
