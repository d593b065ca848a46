package cluster

import (
	"slices"

	"github.com/memgest/memgest/keyslot"
)

// This file plans a rebalance (decision 0016): from the map alone, the
// next migrations that drain the nodes marked Draining and give every
// data node a fair share of the slots it coordinates and of every
// position of the placements. It plans by slots, not bytes: keys hash
// evenly over slots, so slots stand for bytes but for skew.

// balanceSlack is how many slots a node may coordinate above or below its
// share before a rebalance moves any: less than this is not worth a
// migration.
const balanceSlack = 64

// NextSteps returns the commands that start the next steps of a
// rebalance of m, at most max of them: migrations out of shards not
// already exporting, Replaces that take draining nodes out of positions
// that hold nothing, and RemoveNode for draining nodes left in no
// placement (the caller hands a voter's vote over before proposing it).
// It returns nothing once m is balanced and no node is draining.
func NextSteps(m *Map, max int) []Command {
	if m.State != OK {
		return nil
	}
	p := newPlanner(m)
	var out []Command
	for len(out) < max {
		c := p.next()
		if c == nil {
			break
		}
		out = append(out, c)
	}
	return out
}

// planner keeps the loads of a map as its planned steps would leave them.
type planner struct {
	m     *Map
	data  []NodeID          // up nodes not draining
	coord map[NodeID]int    // slots each node coordinates (planned)
	pos   []map[NodeID]int  // slots at each position, per node
	busy  map[int]bool      // shards exporting, or planned to
	done  map[NodeID]bool   // draining nodes already planned out
	moved map[[2]int]NodeID // Replaces planned: shard, position → node
}

func newPlanner(m *Map) *planner {
	p := &planner{m: m, coord: map[NodeID]int{}, busy: map[int]bool{}, done: map[NodeID]bool{}, moved: map[[2]int]NodeID{}}
	for _, n := range m.Nodes {
		if n.State == Up && !n.Draining {
			p.data = append(p.data, n.ID)
		}
	}
	p.pos = make([]map[NodeID]int, m.Width())
	for i := range p.pos {
		p.pos[i] = map[NodeID]int{}
	}
	for i := range m.Shards {
		sh := &m.Shards[i]
		if sh.Retired {
			continue
		}
		if sh.Importing {
			p.busy[sh.From] = true
		}
		p.count(p.coordinatorOf(sh), sh.Placement, m.slotsKept(sh))
	}
	return p
}

// slotsKept is how many slots sh keeps once its export (if any) ends.
func (m *Map) slotsKept(sh *Shard) int {
	n := sh.Last - sh.First + 1
	if imp := m.ImporterFrom(sh.ID); imp != nil && !sh.Importing {
		n -= imp.Last - imp.First + 1
	}
	return n
}

// coordinatorOf is who coordinates sh's slots for the loads: its
// coordinator, or for want of one (its nodes down) its first node.
func (p *planner) coordinatorOf(sh *Shard) NodeID {
	if c, ok := p.m.CoordinatorOf(sh); ok {
		return c.ID
	}
	return sh.Placement[0]
}

// count adds slots to the loads of placement's nodes, coordinated by
// coord.
func (p *planner) count(coord NodeID, placement []NodeID, slots int) {
	p.coord[coord] += slots
	for i, id := range placement {
		if i < len(p.pos) {
			p.pos[i][id] += slots
		}
	}
}

// next plans one step: drains first, then the coordinators' balance.
func (p *planner) next() Command {
	if c := p.nextDrain(); c != nil {
		return c
	}
	return p.nextBalance()
}

// nextDrain moves a draining node out of one shard: a Replace where its
// position holds nothing, else the whole shard to a new placement.
func (p *planner) nextDrain() Command {
	m := p.m
	wide := m.widestScheme()
	for i := range m.Shards {
		sh := &m.Shards[i]
		if sh.Retired || p.busy[i] {
			continue
		}
		for pos, id := range sh.Placement {
			n, _ := m.Node(id)
			if !n.Draining || p.moved[[2]int{i, pos}] != "" {
				continue
			}
			if sh.Importing {
				break // it gets its slots first
			}
			if pos >= wide && len(sh.StandIns) == 0 && len(sh.Rebuild) == 0 && !sh.Recovering {
				taken := slices.Clone(sh.Placement)
				for k, n := range p.moved {
					if k[0] == i {
						taken = append(taken, n)
					}
				}
				near := slices.Delete(slices.Clone(sh.Placement), pos, pos+1)
				to := p.leastAt(pos, taken, near)
				if to == "" {
					return nil
				}
				p.moved[[2]int{i, pos}] = to
				return Replace{Shard: i, Pos: pos, To: to}
			}
			if pos >= wide {
				continue
			}
			return p.migrate(sh, sh.First, sh.Last)
		}
	}
	for _, n := range m.Nodes {
		if n.State == Up && n.Draining && !p.done[n.ID] && !m.placedNode(n.ID) {
			p.done[n.ID] = true
			return RemoveNode{ID: n.ID}
		}
	}
	return nil
}

// nextBalance moves slots from the node coordinating the most to the one
// coordinating the fewest, when they differ by more than the slack.
func (p *planner) nextBalance() Command {
	if len(p.data) == 0 {
		return nil
	}
	share := keyslot.Count / len(p.data)
	under := slices.MinFunc(p.data, func(a, b NodeID) int { return p.coord[a] - p.coord[b] })
	need := share - p.coord[under]
	if need <= balanceSlack {
		return nil
	}
	// The shard to take from: not busy, coordinated by the most loaded
	// node above its share, the largest of that node's.
	best, bestOver := -1, balanceSlack
	for i := range p.m.Shards {
		sh := &p.m.Shards[i]
		if sh.Retired || sh.Importing || p.busy[i] || len(sh.Placement) == 0 {
			continue
		}
		c, ok := p.m.CoordinatorOf(sh)
		if !ok || c.ID == under {
			continue
		}
		over := p.coord[c.ID] - share
		if over > bestOver || (over == bestOver && best >= 0 && p.m.slotsKept(sh) > p.m.slotsKept(&p.m.Shards[best])) {
			best, bestOver = i, over
		}
	}
	if best < 0 {
		return nil
	}
	sh := &p.m.Shards[best]
	take := min(need, bestOver, sh.Last-sh.First+1)
	return p.migrateTo(sh, sh.Last-take+1, sh.Last, under)
}

// migrate plans moving slots first..last of sh to a new placement
// coordinated by the data node coordinating the fewest slots.
func (p *planner) migrate(sh *Shard, first, last int) Command {
	c, _ := p.m.CoordinatorOf(sh)
	var cands []NodeID
	for _, id := range p.data {
		if id != c.ID {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	to := slices.MinFunc(cands, func(a, b NodeID) int { return p.coord[a] - p.coord[b] })
	return p.migrateTo(sh, first, last, to)
}

// migrateTo plans moving slots first..last of sh to a new placement
// coordinated by to, whose other positions go to the data nodes holding
// the fewest slots at each.
func (p *planner) migrateTo(sh *Shard, first, last int, to NodeID) Command {
	placement := []NodeID{to}
	for pos := 1; pos < p.m.Width(); pos++ {
		n := p.leastAt(pos, placement, placement)
		if n == "" {
			return nil
		}
		placement = append(placement, n)
	}
	slots := last - first + 1
	p.count(p.coordinatorOf(sh), sh.Placement, -slots)
	p.count(to, placement, slots)
	p.busy[sh.ID] = true
	return Migrate{From: sh.ID, First: first, Last: last, Placement: placement}
}

// leastAt is the data node not in taken that the placement rule
// (domain.go) picks for position pos next to the nodes of near: the one
// whose zone, then host, holds the fewest of near, and among those the one
// holding the fewest slots at pos; "" when every data node is taken.
func (p *planner) leastAt(pos int, taken, near []NodeID) NodeID {
	c := p.m.crowdOf(near)
	var best NodeID
	var bestNode Node
	for _, id := range p.data {
		if slices.Contains(taken, id) {
			continue
		}
		n, _ := p.m.Node(id)
		if best == "" || c.less(n, bestNode) || !c.less(bestNode, n) && p.pos[pos][id] < p.pos[pos][best] {
			best, bestNode = id, n
		}
	}
	return best
}
