package cluster

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

// NoneID is the scheme id of the builtin `none`, registered in every map
// and never dropped.
const NoneID uint16 = 1

// ClusterState says whether the placement is fixed yet.
type ClusterState uint8

// Cluster states. The zero value is invalid.
const (
	// Forming: fewer than Expect nodes have joined; there are no shards.
	Forming ClusterState = iota + 1
	// OK: the placement is fixed and every slot has a shard.
	OK
)

var clusterStateNames = [...]string{Forming: "forming", OK: "ok"}

// String is the lowercase state name ("ok" as in CLUSTER INFO).
func (s ClusterState) String() string {
	if s.valid() {
		return clusterStateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

func (s ClusterState) valid() bool { return s == Forming || s == OK }

// MarshalText encodes the state by name.
func (s ClusterState) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, errorf(ErrBadMap, "invalid cluster state %d", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a state name.
func (s *ClusterState) UnmarshalText(b []byte) error {
	for i, name := range clusterStateNames {
		if name != "" && name == string(b) {
			*s = ClusterState(i)
			return nil
		}
	}
	return errorf(ErrBadMap, "unknown cluster state %q", b)
}

// Shard is a contiguous range of slots and the ordered, distinct nodes that
// hold its keys. The first Up node of Placement coordinates every key of the
// shard; a scheme occupying w nodes uses the first w entries.
type Shard struct {
	ID        int      `json:"id"`
	First     int      `json:"first"` // first slot, inclusive
	Last      int      `json:"last"`  // last slot, inclusive
	Placement []NodeID `json:"placement"`
	// Recovering is set when the shard's coordinator failed: the next up
	// node of the placement coordinates it, but serves it only once it has
	// recovered the shard's metadata and proposed ShardRecovered (Ring §5.5,
	// metadata first).
	Recovering bool `json:"recovering,omitempty"`
	// StripesPending is set by a ShardRecovered that served the shard
	// before restoring every stripe key of its failed coordinator: the
	// chunks holding the rest are still to be decoded (on first access,
	// or by a background pass) and must stay in their stripes' parity
	// until the coordinator proposes StripesRestored. Rebuilds wait.
	StripesPending bool `json:"stripes_pending,omitempty"`
	// Rebuild lists placement positions whose pieces were lost with a
	// failed node (or that an empty node took back): the coordinator
	// re-creates what the holders now at those positions lack (a spare, a
	// stand-in of Holders, the rejoined node) and proposes RebuildDone.
	Rebuild []int `json:"rebuild,omitempty"`
	// RebuildRound counts the changes to Rebuild's holders: a RebuildDone
	// planned in an earlier round clears nothing, because a position may
	// have changed hands since (a node that failed while its position was
	// being rebuilt onto a stand-in, then rejoined empty).
	RebuildRound uint64 `json:"rebuild_round,omitempty"`
	// Standby lists placed nodes that came back empty (a rejoined node, a
	// late spare) to a position before the node that kept the shard's
	// records since a failure: they hold pieces but do not coordinate the
	// shard while another up node of the placement can.
	Standby []NodeID `json:"standby,omitempty"`
	// StandIns records the up nodes standing in for positions whose node
	// is not up, per scheme width (Map.Holders). Apply keeps it.
	StandIns []StandIn `json:"stand_ins,omitempty"`
	// Importing is set while the shard is being filled with its slots
	// from shard From (Migrate): the slots are routed to From's
	// coordinator until MigrationDone (decision 0016).
	Importing bool `json:"importing,omitempty"`
	From      int  `json:"from,omitempty"`
	// Retired is set on a shard whose every slot moved to another: it
	// keeps its id (stripe lists are named by shard id), routes nothing
	// and has no coordinator.
	Retired bool `json:"retired,omitempty"`
}

// SchemeEntry is one scheme of the catalogue. Its ID is what objects carry;
// ids are never reused, so a stale object can never be read under another
// scheme's rules.
type SchemeEntry struct {
	ID    uint16
	Spec  scheme.Spec
	Alias string // "" for a bare spec, named by its canonical spelling
}

// Name is how users refer to the entry: its alias, or the canonical spec.
func (e SchemeEntry) Name() string {
	if e.Alias != "" {
		return e.Alias
	}
	return e.Spec.String()
}

// Map is the cluster map of DESIGN.md §1. A published Map is immutable:
// read it from any goroutine, never modify it. Build maps with NewMap, Apply
// or UnmarshalMap, which also build the lookup tables; Clone gives a copy to
// modify.
type Map struct {
	Epoch        uint64        `json:"epoch"`  // +1 on every change
	State        ClusterState  `json:"state"`  //
	Expect       int           `json:"expect"` // nodes expected before the placement is fixed
	Voters       int           `json:"voters"` // the fewest Raft voters (--voters: 1, 3, 5 or 7); VoterTarget may call for more
	Nodes        []Node        `json:"nodes"`  // in join order
	Shards       []Shard       `json:"shards"` // by slot range; empty while forming
	Schemes      []SchemeEntry `json:"schemes"`
	Default      uint16        `json:"default"`        // scheme id used when a write names none
	NextSchemeID uint16        `json:"next_scheme_id"` // the id the next created scheme gets
	// Password is the clients' password every node checks AUTH against;
	// nil: none.
	Password *Password `json:"password,omitempty"`
	// Policy picks the scheme of keys written without one (DESIGN.md
	// §7b); nil: the default scheme for new keys, and keys stay put.
	Policy *Policy `json:"policy,omitempty"`
	// Rebalance, while set, has the leader plan and start migrations
	// until the nodes are balanced and no node drains (decision 0016);
	// nil: none runs.
	Rebalance *Rebalance `json:"rebalance,omitempty"`
	// Losses are the reports of keys lost beyond their schemes' tolerance
	// (losses.go), kept here so that they outlive the node that found them.
	Losses []Loss `json:"losses,omitempty"`

	idx *index // derived lookup tables; nil on a Clone
}

// index holds tables derived from the exported fields.
type index struct {
	slotShard  []uint16 // slot → position in Shards; nil when there are no shards
	node       map[NodeID]int
	recovering int // shards flagged Recovering
	// stripesPending counts shards flagged StripesPending.
	stripesPending int
	rebuilding     int // shards with positions to Rebuild
	// coord is each shard's coordinator, by position in Nodes; -1: none.
	coord []int32
	// holders is each shard's Holders for each width of the catalogue's
	// schemes (HoldersOf), so the write path neither allocates nor looks
	// nodes up by id to find where a key's pieces go.
	holders [][]widthHolders
	// importer lists the importing shards by position in Shards.
	importer []int
	// route, in a view (ViewFor), is the map's own slot table, which
	// Coordinator keeps routing by; nil in a map itself.
	route []uint16
	// views are the map's views ViewFor made, by node.
	views *atomic.Pointer[[]nodeView]
}

// widthHolders is Map.Holders of one shard for one width.
type widthHolders struct {
	width int
	nodes []Node
}

// noShard marks a slot without a shard in index.slotShard.
const noShard = math.MaxUint16

// EmptyMap is a node's map before the Init command: epoch 0, not
// initialised, with only the built-in scheme none.
func EmptyMap() *Map {
	m := &Map{
		State:        Forming,
		Schemes:      []SchemeEntry{{ID: NoneID, Spec: scheme.Builtin()}},
		Default:      NoneID,
		NextSchemeID: NoneID + 1,
	}
	m.idx = buildIndex(m)
	return m
}

// NewMap returns the first map of a cluster (epoch 1): forming, expecting
// expect nodes with at least voters Raft voters, and `none` (id 1) as the
// default scheme. It panics unless 1 ≤ expect ≤ keyslot.Count and
// ValidVoters(voters).
func NewMap(expect, voters int) *Map {
	m, err := Apply(EmptyMap(), Init{Expect: expect, Voters: voters})
	if err != nil {
		panic(err)
	}
	return m
}

func (m *Map) index() *index {
	if m.idx != nil {
		return m.idx
	}
	return buildIndex(m) // a Clone being edited: correct, not cached
}

func buildIndex(m *Map) *index {
	ix := &index{node: make(map[NodeID]int, len(m.Nodes)), views: new(atomic.Pointer[[]nodeView])}
	for i, n := range m.Nodes {
		ix.node[n.ID] = i
	}
	if len(m.Shards) > 0 {
		ix.slotShard = make([]uint16, keyslot.Count)
		for i := range ix.slotShard {
			ix.slotShard[i] = noShard
		}
		ix.coord = make([]int32, len(m.Shards))
		for i, sh := range m.Shards {
			ix.coord[i] = coordinatorIndex(m, ix, &sh, -1)
			if sh.Importing {
				ix.importer = append(ix.importer, i)
			}
			if sh.Retired {
				ix.coord[i] = -1
				continue
			}
			// An importing shard recovers and rebuilds like any other
			// (its coordinator refuses its keys meanwhile), though it
			// routes no slot yet.
			if sh.Recovering {
				ix.recovering++
			}
			if sh.StripesPending {
				ix.stripesPending++
			}
			if len(sh.Rebuild) > 0 {
				ix.rebuilding++
			}
			if sh.Importing {
				ix.coord[i] = -1
				continue
			}
			for s := max(sh.First, 0); s <= min(sh.Last, keyslot.Count-1); s++ {
				ix.slotShard[s] = uint16(i)
			}
		}
		for _, i := range ix.importer {
			if from := m.Shards[i].From; from >= 0 && from < len(ix.coord) {
				ix.coord[i] = coordinatorIndex(m, ix, &m.Shards[i], ix.coord[from])
			}
		}
		ix.holders = holdersIndex(m, ix)
	}
	return ix
}

// holdersIndex computes index.holders. It runs before m's index is set, so
// it lends Holders a map with ix as its index.
func holdersIndex(m *Map, ix *index) [][]widthHolders {
	withIx := *m
	withIx.idx = ix
	widths := m.schemeWidths()
	out := make([][]widthHolders, len(m.Shards))
	for i := range m.Shards {
		out[i] = make([]widthHolders, len(widths))
		for j, w := range widths {
			out[i][j] = widthHolders{width: w, nodes: withIx.Holders(&m.Shards[i], w)}
		}
	}
	return out
}

// HoldersOf is Holders for the shard of slot, nil while forming or when
// slot is out of range. For the widths of the catalogue's schemes it
// returns a list kept in the map's index, which callers must not modify.
func (m *Map) HoldersOf(slot, width int) []Node {
	ix := m.index()
	if slot < 0 || slot >= len(ix.slotShard) || ix.slotShard[slot] == noShard {
		return nil
	}
	return m.ShardHolders(int(ix.slotShard[slot]), width)
}

// ShardHolders is Holders for the shard at position i of Shards, nil when
// there is none: by shard, not by slot, so it also answers for a shard
// importing slots that still route to its source, or a retired one (a
// stripe list is named by its shard). For the widths of the catalogue's
// schemes it returns a list kept in the map's index, which callers must
// not modify.
func (m *Map) ShardHolders(i, width int) []Node {
	ix := m.index()
	if i < 0 || i >= len(m.Shards) {
		return nil
	}
	if i < len(ix.holders) {
		for _, h := range ix.holders[i] {
			if h.width == width {
				return h.nodes
			}
		}
	}
	return m.Holders(&m.Shards[i], width)
}

// RecoveringShards counts the shards whose records are being recovered
// after their coordinator failed.
func (m *Map) RecoveringShards() int { return m.index().recovering }

// StripesPendingShards counts the shards served with stripe keys still to
// restore (Shard.StripesPending).
func (m *Map) StripesPendingShards() int { return m.index().stripesPending }

// RebuildingShards counts the shards with lost pieces still to re-create.
func (m *Map) RebuildingShards() int { return m.index().rebuilding }

// Node returns the node with the given id.
func (m *Map) Node(id NodeID) (Node, bool) {
	i, ok := m.index().node[id]
	if !ok {
		return Node{}, false
	}
	return m.Nodes[i], true
}

// ShardOf returns the shard holding slot, or nil while the cluster is
// forming or if slot is out of range. The shard belongs to the map: do not
// modify it.
func (m *Map) ShardOf(slot int) *Shard {
	t := m.index().slotShard
	if slot < 0 || slot >= len(t) || t[slot] == noShard {
		return nil
	}
	return &m.Shards[t[slot]]
}

// ShardByID returns shard id of m, or nil when m has none such (a shard
// appended by a map this one predates).
func (m *Map) ShardByID(id int) *Shard {
	if id < 0 || id >= len(m.Shards) {
		return nil
	}
	return &m.Shards[id]
}

// Keeps says whether sh keeps slot: it is not retired and slot is in its
// range (an importing shard's range is the slots it imports). A slot that
// leaves a shard never returns to it: a migration moves slots to a new
// shard.
func (sh *Shard) Keeps(slot int) bool {
	return !sh.Retired && slot >= sh.First && slot <= sh.Last
}

// Coordinator returns the coordinator of slot: the first node of its
// shard's placement whose state is Up (DESIGN.md §1), passing over the
// shard's Standby nodes unless no other node is up. It reports false while
// forming or when no node of the placement is up.
func (m *Map) Coordinator(slot int) (Node, bool) {
	ix := m.index()
	table := ix.slotShard
	if ix.route != nil {
		table = ix.route
	}
	if slot < 0 || slot >= len(table) || table[slot] == noShard {
		return Node{}, false
	}
	if c := ix.coord[table[slot]]; c >= 0 {
		return m.Nodes[c], true
	}
	return Node{}, false
}

// coordinatorIndex finds sh's coordinator (Coordinator) by position in
// m.Nodes, with ix's node lookup: -1 if no node of its placement is up.
// The node at position avoid (the source's coordinator, for an importing
// shard) is passed over: one node coordinating both ends of a migration
// could not tell their keys apart, so the import waits for another.
func coordinatorIndex(m *Map, ix *index, sh *Shard, avoid int32) int32 {
	standby := int32(-1)
	for _, id := range sh.Placement {
		i, ok := ix.node[id]
		if !ok || m.Nodes[i].State != Up || int32(i) == avoid {
			continue
		}
		if !slices.Contains(sh.Standby, id) {
			return int32(i)
		}
		if standby < 0 {
			standby = int32(i)
		}
	}
	return standby
}

// Scheme resolves a user's scheme name: an alias (case-insensitive), else a
// spec (scheme.Parse) matched by value, preferring its bare entry and then
// the lowest id with that spec. So "rep:3" finds a scheme aliased "hot" when
// hot is rep:3 and rep:3 has no bare entry.
func (m *Map) Scheme(name string) (SchemeEntry, bool) {
	if e, ok := m.named(name); ok {
		return e, true
	}
	sp, err := scheme.Parse(name)
	if err != nil {
		return SchemeEntry{}, false
	}
	i := slices.IndexFunc(m.Schemes, func(e SchemeEntry) bool { return e.Spec == sp })
	if i < 0 {
		return SchemeEntry{}, false
	}
	return m.Schemes[i], true
}

// named finds the entry whose Name is name: an alias (case-insensitive) or
// the bare entry of a spec. Unlike Scheme it never falls back to an alias by
// spec, so dropping "rep:3" never drops "hot".
func (m *Map) named(name string) (SchemeEntry, bool) {
	if i := m.aliasIndex(name); i >= 0 {
		return m.Schemes[i], true
	}
	sp, err := scheme.Parse(name)
	if err != nil {
		return SchemeEntry{}, false
	}
	i := slices.IndexFunc(m.Schemes, func(e SchemeEntry) bool { return e.Alias == "" && e.Spec == sp })
	if i < 0 {
		return SchemeEntry{}, false
	}
	return m.Schemes[i], true
}

func (m *Map) aliasIndex(alias string) int {
	if alias == "" {
		return -1
	}
	return slices.IndexFunc(m.Schemes, func(e SchemeEntry) bool { return strings.EqualFold(e.Alias, alias) })
}

// SchemeByID returns the catalogue entry with the given id.
func (m *Map) SchemeByID(id uint16) (SchemeEntry, bool) {
	i := slices.IndexFunc(m.Schemes, func(e SchemeEntry) bool { return e.ID == id })
	if i < 0 {
		return SchemeEntry{}, false
	}
	return m.Schemes[i], true
}

// DefaultScheme returns the entry used when a write names no scheme.
func (m *Map) DefaultScheme() SchemeEntry {
	e, _ := m.SchemeByID(m.Default)
	return e
}

// Width is how many nodes a scheme may occupy: the placement length once
// formed, what it will be while forming.
func (m *Map) Width() int {
	if len(m.Shards) == 0 {
		return min(m.Expect, MaxPlacement)
	}
	return len(m.Shards[0].Placement)
}

// Clone returns a deep copy to modify. Its lookups stay correct while it is
// edited but are slow until it goes through Apply or UnmarshalMap.
func (m *Map) Clone() *Map {
	c := *m
	c.idx = nil
	c.Nodes = slices.Clone(m.Nodes)
	c.Schemes = slices.Clone(m.Schemes)
	c.Shards = slices.Clone(m.Shards)
	c.Losses = slices.Clone(m.Losses) // each report's slices are never written in place
	for i := range c.Shards {
		c.Shards[i].Placement = slices.Clone(m.Shards[i].Placement)
		c.Shards[i].Rebuild = slices.Clone(m.Shards[i].Rebuild)
		c.Shards[i].Standby = slices.Clone(m.Shards[i].Standby)
		c.Shards[i].StandIns = slices.Clone(m.Shards[i].StandIns)
	}
	return &c
}
