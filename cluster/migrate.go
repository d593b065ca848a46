package cluster

import (
	"slices"
	"sync/atomic"

	"github.com/memgest/memgest/keyslot"
)

// This file is the map's side of growing and shrinking the cluster online
// (decision 0016): slots pass from one shard to a new one with another
// placement, key by key, while they keep serving.
//
// A migration is a shard that is importing (Shard.Importing) the slots of
// its range from the shard named by Shard.From. Until MigrationDone the
// map routes those slots to From's coordinator, which still holds the keys
// not moved yet, sends each one to the importing shard's coordinator, and
// forwards there every command on a key it no longer holds. The importing
// shard's coordinator places what it holds by its own placement: its
// view of the map (ViewFor) gives those slots its shard. When the source
// holds none of them any more, MigrationDone routes them to the new shard
// and shrinks the source's range; a source left without slots is Retired
// (it keeps its id, which its stripe lists are named by).

// Migrate starts moving slots First..Last out of shard From into a new
// shard (the next id) placed on Placement. The range must be the start or
// the end of From's range, or all of it; From must not be importing itself
// nor already giving slots to another shard; the placement must be
// distinct up nodes, as long as every placement of the map, with a
// coordinator other than From's.
type Migrate struct {
	From      int      `json:"from"`
	First     int      `json:"first"`
	Last      int      `json:"last"`
	Placement []NodeID `json:"placement"`
}

// MigrationDone ends the import of shard Shard: its slots are routed to
// it, and its source shrinks (or retires). Only the source's coordinator
// (By), which has just found it holds none of the keys any more, may end
// it.
type MigrationDone struct {
	Shard int    `json:"shard"`
	By    NodeID `json:"by"`
}

// Promote makes a spare a data node: up, in no placement until a
// migration places it.
type Promote struct {
	ID NodeID `json:"id"`
}

// Drain marks a node to be emptied (Off false) or no longer (Off true): a
// rebalance moves every slot and piece it holds to other nodes, after
// which RemoveNode takes it out.
type Drain struct {
	ID  NodeID `json:"id"`
	Off bool   `json:"off,omitempty"`
}

// RemoveNode ends a drained node's membership: it must be in no placement
// of a shard that still has slots (or imports them) and no longer vote.
type RemoveNode struct {
	ID NodeID `json:"id"`
}

// Replace puts node To at position Pos of shard Shard, where no scheme of
// the catalogue places anything (Pos at or past the widest scheme's
// width), so nothing moves: a rebalance uses it to take a draining node
// out of positions that hold nothing.
type Replace struct {
	Shard int    `json:"shard"`
	Pos   int    `json:"pos"`
	To    NodeID `json:"to"`
}

// Rebalance is a running rebalance's settings.
type Rebalance struct {
	// Rate bounds the bytes per second each migration's source moves.
	Rate int64 `json:"rate"`
	// Parallel is how many migrations run at once at most.
	Parallel int `json:"parallel"`
}

// DefaultMigrateRate bounds each migration's source while no rebalance
// sets a rate (a drain's, or a migration proposed by hand): 64 MiB/s.
const DefaultMigrateRate = 64 << 20

// MigrateRate is the bytes per second each migration's source may move
// now: the running rebalance's rate, else DefaultMigrateRate.
func (m *Map) MigrateRate() int64 {
	if m.Rebalance != nil {
		return m.Rebalance.Rate
	}
	return DefaultMigrateRate
}

// Rebalance bounds.
const (
	MinMigrateRate = 64 << 10
	MaxMigrateRate = 64 << 30
	MaxParallel    = 64
)

// SetRebalance starts a rebalance with Rate and Parallel, changes a
// running one's, or stops it (Off): migrations under way finish, no new
// one starts.
type SetRebalance struct {
	Off      bool  `json:"off,omitempty"`
	Rate     int64 `json:"rate,omitempty"`
	Parallel int   `json:"parallel,omitempty"`
}

func (SetRebalance) op() string { return "set_rebalance" }

func (c SetRebalance) apply(m *Map) (*Map, error) {
	if c.Off {
		if m.Rebalance == nil {
			return m, nil
		}
		next := m.Clone()
		next.Rebalance = nil
		return next, nil
	}
	if c.Rate < MinMigrateRate || c.Rate > MaxMigrateRate {
		return nil, errorf(ErrBadCommand, "a migration rate must be %d..%d bytes/s, got %d", MinMigrateRate, MaxMigrateRate, c.Rate)
	}
	if c.Parallel < 1 || c.Parallel > MaxParallel {
		return nil, errorf(ErrBadCommand, "parallel migrations must be 1..%d, got %d", MaxParallel, c.Parallel)
	}
	r := Rebalance{Rate: c.Rate, Parallel: c.Parallel}
	if m.Rebalance != nil && *m.Rebalance == r {
		return m, nil
	}
	next := m.Clone()
	next.Rebalance = &r
	return next, nil
}

func (Migrate) op() string       { return "migrate" }
func (MigrationDone) op() string { return "migration_done" }
func (Promote) op() string       { return "promote" }
func (Drain) op() string         { return "drain" }
func (RemoveNode) op() string    { return "remove_node" }
func (Replace) op() string       { return "replace" }

func (c Migrate) apply(m *Map) (*Map, error) {
	if m.State != OK {
		return nil, errorf(ErrBadCommand, "the cluster has not formed yet")
	}
	if c.From < 0 || c.From >= len(m.Shards) {
		return nil, errorf(ErrBadCommand, "no shard %d", c.From)
	}
	src := &m.Shards[c.From]
	switch {
	case src.Retired:
		return nil, errorf(ErrBadCommand, "shard %d is retired", c.From)
	case src.Importing:
		return nil, errorf(ErrBadCommand, "shard %d is importing", c.From)
	case m.ImporterFrom(c.From) != nil:
		return nil, errorf(ErrBadCommand, "shard %d is already giving slots to shard %d", c.From, m.ImporterFrom(c.From).ID)
	case c.First < src.First || c.Last > src.Last || c.First > c.Last || (c.First != src.First && c.Last != src.Last):
		return nil, errorf(ErrBadCommand, "slots %d-%d are not the start, the end or the whole of shard %d's %d-%d", c.First, c.Last, c.From, src.First, src.Last)
	}
	if err := m.checkNewPlacement(c.Placement); err != nil {
		return nil, err
	}
	if coord, ok := m.CoordinatorOf(src); ok && coord.ID == c.Placement[0] {
		return nil, errorf(ErrBadCommand, "the new shard's coordinator %s coordinates shard %d already", coord.ID, c.From)
	}
	next := m.Clone()
	next.Shards = append(next.Shards, Shard{
		ID: len(m.Shards), First: c.First, Last: c.Last,
		Placement: slices.Clone(c.Placement), Importing: true, From: c.From,
	})
	return next, nil
}

// checkNewPlacement refuses a placement that is not Width distinct up
// nodes that are not draining.
func (m *Map) checkNewPlacement(p []NodeID) error {
	if len(p) != m.Width() {
		return errorf(ErrBadCommand, "a placement has %d nodes, not %d", len(p), m.Width())
	}
	for i, id := range p {
		n, ok := m.Node(id)
		if !ok || n.State != Up || n.Draining || slices.Contains(p[:i], id) {
			return errorf(ErrBadNode, "node %s is unknown, not up, draining or repeated in the placement", id)
		}
	}
	return nil
}

// ImporterFrom returns the shard importing slots from shard i, or nil.
func (m *Map) ImporterFrom(i int) *Shard {
	for j := range m.Shards {
		if m.Shards[j].Importing && m.Shards[j].From == i {
			return &m.Shards[j]
		}
	}
	return nil
}

func (c MigrationDone) apply(m *Map) (*Map, error) {
	if c.Shard < 0 || c.Shard >= len(m.Shards) || !m.Shards[c.Shard].Importing {
		return m, nil // done already, or never began: a repeat
	}
	to := &m.Shards[c.Shard]
	if coord, ok := m.CoordinatorOf(&m.Shards[to.From]); !ok || coord.ID != c.By {
		return m, nil // planned under a source coordinator that changed since
	}
	next := m.Clone()
	t, s := &next.Shards[c.Shard], &next.Shards[to.From]
	t.Importing, t.From = false, 0
	switch {
	case t.First == s.First && t.Last == s.Last:
		s.Retired = true
		s.Recovering, s.StripesPending, s.Rebuild, s.Standby, s.StandIns = false, false, nil, nil, nil
	case t.First == s.First:
		s.First = t.Last + 1
	default:
		s.Last = t.First - 1
	}
	return next, nil
}

func (c Promote) apply(m *Map) (*Map, error) {
	n, ok := m.Node(c.ID)
	switch {
	case !ok:
		return nil, errorf(ErrBadNode, "no node %s", c.ID)
	case n.State == Up:
		return m, nil
	case n.State != Spare:
		return nil, errorf(ErrBadNode, "node %s is %s, not a spare", c.ID, n.State)
	}
	next := m.Clone()
	next.Nodes[m.index().node[c.ID]].State = Up
	return next, nil
}

func (c Drain) apply(m *Map) (*Map, error) {
	n, ok := m.Node(c.ID)
	if !ok {
		return nil, errorf(ErrBadNode, "no node %s", c.ID)
	}
	if n.Draining == !c.Off {
		return m, nil
	}
	if !c.Off && m.countData()-m.DrainingNodes()-1 < m.Width() && m.placedNode(c.ID) {
		return nil, errorf(ErrTooFewNodes, "draining %s would leave fewer than %d data nodes, the placement's width", c.ID, m.Width())
	}
	next := m.Clone()
	next.Nodes[m.index().node[c.ID]].Draining = !c.Off
	return next, nil
}

// countData counts the up nodes (data nodes and placed spares alike).
func (m *Map) countData() int { return m.countState(Up) }

// DrainingNodes counts the up nodes marked draining.
func (m *Map) DrainingNodes() int {
	count := 0
	for _, n := range m.Nodes {
		if n.State == Up && n.Draining {
			count++
		}
	}
	return count
}

func (c RemoveNode) apply(m *Map) (*Map, error) {
	n, ok := m.Node(c.ID)
	switch {
	case !ok:
		return nil, errorf(ErrBadNode, "no node %s", c.ID)
	case n.State == Left:
		return m, nil
	case n.Voter:
		return nil, errorf(ErrVoter, "node %s still votes: hand its vote over first", c.ID)
	case m.placedNode(c.ID):
		return nil, errorf(ErrBadNode, "node %s still holds positions in a placement: drain it first", c.ID)
	}
	next := m.Clone()
	i := m.index().node[c.ID]
	next.Nodes[i].State, next.Nodes[i].Draining = Left, false
	return next, nil
}

// placedNode says whether id is in the placement of a shard that has
// slots or imports them.
func (m *Map) placedNode(id NodeID) bool {
	for i := range m.Shards {
		if !m.Shards[i].Retired && slices.Contains(m.Shards[i].Placement, id) {
			return true
		}
	}
	return false
}

func (c Replace) apply(m *Map) (*Map, error) {
	if c.Shard < 0 || c.Shard >= len(m.Shards) || m.Shards[c.Shard].Retired {
		return nil, errorf(ErrBadCommand, "no shard %d with slots", c.Shard)
	}
	sh := &m.Shards[c.Shard]
	if c.Pos < m.widestScheme() || c.Pos >= len(sh.Placement) {
		return nil, errorf(ErrBadCommand, "position %d of shard %d is within the widest scheme's %d nodes or past the placement", c.Pos, c.Shard, m.widestScheme())
	}
	if sh.Placement[c.Pos] == c.To {
		return m, nil
	}
	if len(sh.StandIns) > 0 || len(sh.Rebuild) > 0 || sh.Recovering {
		return nil, errorf(ErrBadCommand, "shard %d is being repaired; replace after", c.Shard)
	}
	if n, ok := m.Node(c.To); !ok || n.State != Up || n.Draining || slices.Contains(sh.Placement, c.To) {
		return nil, errorf(ErrBadNode, "node %s is unknown, not up, draining or placed in shard %d already", c.To, c.Shard)
	}
	next := m.Clone()
	next.Shards[c.Shard].Placement[c.Pos] = c.To
	return next, nil
}

// widestScheme is how many positions the catalogue's widest scheme
// occupies.
func (m *Map) widestScheme() int {
	w := 1
	for _, e := range m.Schemes {
		w = max(w, e.Spec.Nodes())
	}
	return w
}

// Importing lists the shards importing slots, in shard order.
func (m *Map) Importing() []*Shard {
	var out []*Shard
	for i := range m.Shards {
		if m.Shards[i].Importing {
			out = append(out, &m.Shards[i])
		}
	}
	return out
}

// Migrating says whether some shard imports slots.
func (m *Map) Migrating() bool { return len(m.index().importer) > 0 }

// ImporterOf returns the shard importing slot, or nil when the slot is not
// migrating.
func (m *Map) ImporterOf(slot int) *Shard {
	ix := m.index()
	if len(ix.importer) == 0 || slot < 0 || slot >= keyslot.Count {
		return nil
	}
	for _, i := range ix.importer {
		if sh := &m.Shards[i]; slot >= sh.First && slot <= sh.Last {
			return sh
		}
	}
	return nil
}

// CoordinatorOf returns the coordinator of shard sh (a shard of m): the
// first up node of its placement not on standby, and for an importing
// shard not the coordinator of its source. A retired shard has none.
func (m *Map) CoordinatorOf(sh *Shard) (Node, bool) {
	ix := m.index()
	if sh.ID < 0 || sh.ID >= len(ix.coord) {
		return Node{}, false
	}
	if c := ix.coord[sh.ID]; c >= 0 {
		return m.Nodes[c], true
	}
	return Node{}, false
}

// ViewFor is the map as node self's data path must see it: where self
// coordinates an importing shard, that shard's slots are its own for
// placement (ShardOf, HoldersOf), while Coordinator still routes them to
// the source. For every other node it is m itself, and a view's view is
// the view. Views are made once per map and node and kept without a lock,
// so a node asking on every command pays a pointer load and a short scan.
func (m *Map) ViewFor(self NodeID) *Map {
	ix := m.index()
	if len(ix.importer) == 0 || m.idx == nil || ix.route != nil {
		return m
	}
	for {
		kept := ix.views.Load()
		if kept != nil {
			for _, v := range *kept {
				if v.self == self {
					return v.m
				}
			}
		}
		v := nodeView{self: self, m: m}
		for _, i := range ix.importer {
			if c := ix.coord[i]; c >= 0 && m.Nodes[c].ID == self {
				v.m = m.withSlotsOf(v.m, i)
			}
		}
		var next []nodeView
		if kept != nil {
			next = slices.Clone(*kept)
		}
		next = append(next, v)
		if ix.views.CompareAndSwap(kept, &next) {
			return v.m
		}
	}
}

// withSlotsOf returns view (m, or a view of m) with shard i's slots
// placed in shard i.
func (m *Map) withSlotsOf(view *Map, i int) *Map {
	if view == m {
		c := *m
		cix := *m.idx
		cix.route = m.idx.slotShard
		cix.slotShard = slices.Clone(m.idx.slotShard)
		cix.views = new(atomic.Pointer[[]nodeView])
		c.idx = &cix
		view = &c
	}
	for s := m.Shards[i].First; s <= m.Shards[i].Last; s++ {
		view.idx.slotShard[s] = uint16(i)
	}
	return view
}

// nodeView is a map's ViewFor one node.
type nodeView struct {
	self NodeID
	m    *Map
}
