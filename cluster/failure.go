package cluster

import "slices"

// MarkFailed records the failure detector's decision that a node is gone
// (DESIGN.md §4: the control plane decides, bumps the epoch, and only then
// does anyone act). If a spare is available, the first one (in join order)
// takes the failed node's place in every placement and becomes up (Ring
// §5.5); otherwise the node stays in the placements and the survivors stand
// in for its positions (Map.Holders). Either way each shard it coordinated
// passes to a new coordinator (the spare, or the next up node of its
// placement), marked Recovering until that node has recovered the shard's
// records, and every position it held is listed for rebuild.
type MarkFailed struct {
	ID NodeID `json:"id"`
}

// ShardRecovered ends a shard's recovery. Only the shard's current
// coordinator may end it (By), so a proposal made under an older map, for a
// coordinator that has since failed too, changes nothing.
type ShardRecovered struct {
	Shard int    `json:"shard"`
	By    NodeID `json:"by"`
	// StripesPending says stripe keys of the shard are still to be
	// restored (Shard.StripesPending).
	StripesPending bool `json:"stripes_pending,omitempty"`
	// Losses are the keys the recovery found lost beyond their schemes'
	// tolerance: in the map with the shard's serving, so that no later
	// failure lets them read as absent (losses.go).
	Losses []Loss `json:"losses,omitempty"`
}

// StripesRestored says the shard's coordinator (By) has restored every
// stripe key its recovery deferred.
type StripesRestored struct {
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
	spare := m.pickSpare(n)
	for i, sh := range m.Shards {
		if sh.Retired {
			continue
		}
		if coord, ok := m.CoordinatorOf(&sh); ok && coord.ID == c.ID {
			next.Shards[i].Recovering = true
		}
		for j, id := range sh.Placement {
			if id != c.ID {
				continue
			}
			if spare >= 0 {
				// The failed node coordinated here or not: either way
				// the spare takes its very place (a shard it coordinated
				// is Recovering, and the spare recovers it).
				next.Shards[i].Placement[j] = m.Nodes[spare].ID
				next.Shards[i].Standby = slices.DeleteFunc(next.Shards[i].Standby, func(id NodeID) bool { return id == c.ID })
			}
			next.Shards[i].addRebuild(j)
		}
	}
	if spare >= 0 {
		next.Nodes[spare].State = Up
		next.keepCoordinators(m, m.Nodes[spare].ID)
	}
	next.keepMigrationEndsApart(m)
	next.leaveStandby()
	return next, nil
}

// keepMigrationEndsApart puts, in a migration's source shard whose
// coordinator just failed, the importing shard's coordinator on standby:
// the source's next coordinator must be another node, since one node
// coordinating both ends could not tell their keys apart (decision 0016).
// (The importing shard's own successor passes over the source's
// coordinator in coordinatorIndex.) m is the map before the failure; the
// receiver is the Clone being edited.
func (m *Map) keepMigrationEndsApart(prev *Map) {
	for i := range m.Shards {
		t := &m.Shards[i]
		if !t.Importing || i >= len(prev.Shards) {
			continue
		}
		src := &m.Shards[t.From]
		importer, ok := prev.CoordinatorOf(&prev.Shards[i])
		if !src.Recovering || !ok || importer.State != Up || !slices.Contains(src.Placement, importer.ID) ||
			slices.Contains(src.Standby, importer.ID) {
			continue
		}
		if n, ok := m.Node(importer.ID); ok && n.State == Up {
			src.Standby = append(src.Standby, importer.ID)
		}
	}
}

// leaveStandby takes the coordinator of every recovering shard off
// standby: for want of another node it coordinates, so it recovers the
// shard's records and keeps them from now on, and a node that comes back
// empty later must not take coordination from it. m is a Clone being
// edited.
func (m *Map) leaveStandby() {
	ix := buildIndex(m) // placements and states are final; only Standby changes below
	for i := range m.Shards {
		sh := &m.Shards[i]
		if !sh.Recovering || len(sh.Standby) == 0 {
			continue
		}
		if c := coordinatorIndex(m, ix, sh, -1); c >= 0 {
			id := m.Nodes[c].ID
			sh.Standby = slices.DeleteFunc(sh.Standby, func(s NodeID) bool { return s == id })
			if len(sh.Standby) == 0 {
				sh.Standby = nil
			}
		}
	}
}

// keepCoordinators puts to, a node that holds nothing yet and has just
// taken places, on standby in every shard where it would otherwise take
// coordination from the shard's coordinator in prev, which is still up:
// coordination never moves off a live node, which holds the shard's
// records (a spare that takes a standby's position before the coordinator
// would otherwise serve an empty store). m is a Clone of prev being
// edited, with to up.
func (m *Map) keepCoordinators(prev *Map, to NodeID) {
	ix := buildIndex(m) // placements and states are final; only Standby changes below
	for i := range m.Shards {
		sh := &m.Shards[i]
		was, ok := prev.CoordinatorOf(&prev.Shards[i])
		if !ok || slices.Contains(sh.Standby, to) {
			continue
		}
		if j, ok := ix.node[was.ID]; !ok || m.Nodes[j].State != Up {
			continue // the failed coordinator: to may take its place and recover
		}
		if c := coordinatorIndex(m, ix, sh, -1); c >= 0 && m.Nodes[c].ID == to {
			sh.Standby = append(sh.Standby, to)
		}
	}
}

// addRebuild lists placement position p for rebuild, in a new round.
func (sh *Shard) addRebuild(p int) {
	if !slices.Contains(sh.Rebuild, p) {
		sh.Rebuild = append(sh.Rebuild, p)
	}
	sh.RebuildRound++
}

// pickSpare is the position in Nodes of the spare that takes the places
// of failed node f, or -1 when there is none. The placement rule
// (domain.go) decides: a spare in f's zone and on f's host keeps every
// placement's spread exactly, so it comes first; then one in f's zone;
// then the least crowded by the up nodes; then join order. Without
// domains that is the first spare in join order.
func (m *Map) pickSpare(f Node) int {
	var spares []Node
	var at []int
	for i, n := range m.Nodes {
		if n.State == Spare {
			spares, at = append(spares, n), append(at, i)
		}
	}
	if len(spares) == 0 {
		return -1
	}
	if i := slices.IndexFunc(spares, func(n Node) bool { return n.Zone == f.Zone && n.Host == f.Host && n.Host != "" }); i >= 0 {
		return at[i]
	}
	if i := slices.IndexFunc(spares, func(n Node) bool { return n.Zone == f.Zone && n.Zone != "" }); i >= 0 {
		return at[i]
	}
	c := newCrowd()
	for _, n := range m.Nodes {
		if n.State == Up && n.ID != f.ID {
			c.add(n)
		}
	}
	return at[c.leastCrowded(spares)]
}

// fillFromSpares gives the places of failed nodes still in placements to
// spares, one failed node per spare, in join order. m is a Clone being
// edited.
func (m *Map) fillFromSpares() {
	for _, f := range m.Nodes {
		if f.State != Failed || !m.placedNode(f.ID) {
			continue
		}
		spare := m.pickSpare(f)
		if spare < 0 {
			return
		}
		m.Nodes[spare].State = Up
		m.takePlaces(f.ID, m.Nodes[spare].ID)
	}
}

// takePlaces puts node to (up, holding nothing yet) in every position of
// from, which failed some time ago, and lists those positions for rebuild.
// Where to comes before the shard's current coordinator, it goes on
// standby: that node has kept the shard's records since the failure (keys
// written since included, which no piece lists), so it stays coordinator.
// (A coordinator is never on standby itself: leaveStandby.)
// (Swapping the two instead would move two positions at once and leave
// split keys short of two shards until the rebuild.) m is a Clone being
// edited.
func (m *Map) takePlaces(from, to NodeID) {
	for i := range m.Shards {
		sh := &m.Shards[i]
		j := slices.Index(sh.Placement, from)
		if j < 0 || sh.Retired { // a retired shard holds nothing to rebuild
			continue
		}
		coord := m.firstUp(sh, to)
		sh.Placement[j] = to
		sh.Standby = slices.DeleteFunc(sh.Standby, func(id NodeID) bool { return id == from })
		sh.addRebuild(j)
		switch {
		case coord < 0:
			sh.Recovering = true // nobody held its records: recover from pieces
		case coord > j && !slices.Contains(sh.Standby, to):
			sh.Standby = append(sh.Standby, to)
		}
	}
}

// firstUp is the position of sh's coordinator if except were not up, or
// -1 when no other node is up.
func (m *Map) firstUp(sh *Shard, except NodeID) int {
	fallback := -1
	for p, id := range sh.Placement {
		n, ok := m.Node(id)
		if !ok || n.State != Up || id == except {
			continue
		}
		if !slices.Contains(sh.Standby, id) {
			return p
		}
		if fallback < 0 {
			fallback = p
		}
	}
	return fallback
}

// Rejoin readmits a node that was marked failed and has since emptied its
// memory (restarted, or wiped itself on learning it was fenced): it comes
// back holding nothing. If it still has places in placements (no spare took
// them), it takes them back as up, its pieces listed for rebuild, on
// standby where it would take coordination from the node that kept a
// shard's records (takePlaces). Otherwise it becomes a spare, and takes the places of a
// failed node if one is waiting for a spare.
type Rejoin struct {
	ID NodeID `json:"id"`
}

func (c Rejoin) apply(m *Map) (*Map, error) {
	n, ok := m.Node(c.ID)
	if !ok {
		return nil, errorf(ErrBadNode, "no node %s", c.ID)
	}
	if n.State != Failed {
		return m, nil
	}
	next := m.Clone()
	i := m.index().node[c.ID]
	if next.placedNode(c.ID) {
		next.Nodes[i].State = Up
		next.takePlaces(c.ID, c.ID)
	} else {
		next.Nodes[i].State = Spare
		next.fillFromSpares()
	}
	next.leaveStandby()
	return next, nil
}

func (c ShardRecovered) apply(m *Map) (*Map, error) {
	if c.Shard < 0 || c.Shard >= len(m.Shards) {
		return nil, errorf(ErrBadCommand, "no shard %d", c.Shard)
	}
	sh := m.Shards[c.Shard]
	coord, ok := m.CoordinatorOf(&sh)
	if !sh.Recovering || !ok || coord.ID != c.By {
		return m, nil
	}
	for _, l := range c.Losses {
		if err := l.validate(); err != nil {
			return nil, err
		}
	}
	next, err := m.withLosses(c.Losses)
	if err != nil {
		return nil, err
	}
	if next == m {
		next = m.Clone()
	}
	next.Shards[c.Shard].Recovering = false
	next.Shards[c.Shard].StripesPending = c.StripesPending
	return next, nil
}

func (c StripesRestored) apply(m *Map) (*Map, error) {
	if c.Shard < 0 || c.Shard >= len(m.Shards) {
		return nil, errorf(ErrBadCommand, "no shard %d", c.Shard)
	}
	sh := m.Shards[c.Shard]
	coord, ok := m.CoordinatorOf(&sh)
	if !sh.StripesPending || sh.Recovering || !ok || coord.ID != c.By {
		return m, nil
	}
	next := m.Clone()
	next.Shards[c.Shard].StripesPending = false
	return next, nil
}

// RebuildDone records that the shard's coordinator (By) has re-created the
// pieces of the listed placement positions; positions added by a later
// failure stay listed.
type RebuildDone struct {
	Shard     int    `json:"shard"`
	By        NodeID `json:"by"`
	Positions []int  `json:"positions"`
	// Round is the shard's RebuildRound the rebuild was planned in.
	Round uint64 `json:"round,omitempty"`
}

func (c RebuildDone) apply(m *Map) (*Map, error) {
	if c.Shard < 0 || c.Shard >= len(m.Shards) {
		return nil, errorf(ErrBadCommand, "no shard %d", c.Shard)
	}
	sh := m.Shards[c.Shard]
	coord, ok := m.CoordinatorOf(&sh)
	if !ok || coord.ID != c.By || len(sh.Rebuild) == 0 || c.Round != sh.RebuildRound {
		return m, nil // a later round lists what this rebuild may have missed
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
