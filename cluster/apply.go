package cluster

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

// Apply returns the map that results from applying c to m. A change returns
// a new map with epoch m.Epoch+1; a command that changes nothing (re-adding
// a node with the same addresses, re-creating the same scheme, setting the
// current default) returns m itself, epoch unchanged. A refused command
// returns m itself and an *Error whose message is meant for users. m is
// never modified. Apply is pure and deterministic: every Raft member applies
// the same log to the same maps.
func Apply(m *Map, c Command) (*Map, error) {
	if c == nil {
		return m, errorf(ErrBadCommand, "no command")
	}
	if _, isInit := c.(Init); !isInit && m.Expect == 0 {
		return m, errorf(ErrNotInitialised, "the map is not initialised yet (no Init command applied)")
	}
	next, err := c.apply(m)
	if err != nil {
		return m, err
	}
	if next == m {
		return m, nil
	}
	next.Epoch = m.Epoch + 1
	next.idx = buildIndex(next)
	next.keepStandIns(m)
	next.idx = buildIndex(next) // keepStandIns may list positions for rebuild
	return next, nil
}

func (c Init) apply(m *Map) (*Map, error) {
	if m.Expect != 0 {
		if m.Expect == c.Expect && m.Voters == c.Voters {
			return m, nil
		}
		return nil, errorf(ErrBadCommand, "the cluster is already initialised (expect %d, voters %d)", m.Expect, m.Voters)
	}
	if c.Expect < 1 || c.Expect > keyslot.Count {
		return nil, errorf(ErrBadCommand, "expect must be 1..%d nodes, got %d", keyslot.Count, c.Expect)
	}
	if !ValidVoters(c.Voters) {
		return nil, errorf(ErrBadCommand, "voters must be 1, 3, 5 or 7, got %d", c.Voters)
	}
	if !c.Password.valid() {
		return nil, errorf(ErrBadCommand, "malformed password digest")
	}
	next := m.Clone()
	next.Expect, next.Voters, next.Password = c.Expect, c.Voters, c.Password
	return next, nil
}

func (c AddNode) apply(m *Map) (*Map, error) {
	n := c.Node
	if err := CheckNode(n); err != nil {
		return nil, err
	}
	gone, err := m.checkAddrs(n)
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		return m.reuseAddrs(n, c.Spare, gone)
	}
	if old, ok := m.Node(n.ID); ok {
		return m.updateNode(old, n), nil
	}
	return m.admit(n, c.Spare), nil
}

// CheckNode refuses malformed node descriptions.
func CheckNode(n Node) *Error {
	if !n.ID.Valid() {
		return errorf(ErrBadNode, "node id %q is not 40 lowercase hex characters", n.ID)
	}
	if n.PeerAddr == "" || n.ClientAddr == "" {
		return errorf(ErrBadNode, "node %s needs a client and a peer address", n.ID)
	}
	for _, d := range [][2]string{{"zone", n.Zone}, {"host", n.Host}} {
		if err := checkDomain(d[0], d[1]); err != nil {
			return errorf(ErrBadNode, "node %s: %s", n.ID, err.Msg)
		}
	}
	return nil
}

// checkAddrs refuses a node whose addresses another live node uses: two
// nodes at one address would make routing ambiguous. It returns the
// positions in Nodes of the failed or left nodes that hold one of n's
// addresses, which AddNode frees (reuseAddrs): a node restarted with a
// fresh id on its old address (it lost its data directory) comes back
// that way.
func (m *Map) checkAddrs(n Node) ([]int, error) {
	if isFreedAddr(n.PeerAddr) || isFreedAddr(n.ClientAddr) {
		return nil, errorf(ErrBadNode, "node %s: addresses ending in %q name the nodes whose address was given to another", n.ID, freedSuffix)
	}
	var gone []int
	for i, o := range m.Nodes {
		if o.ID == n.ID || o.PeerAddr != n.PeerAddr && o.ClientAddr != n.ClientAddr {
			continue
		}
		if o.State != Failed && o.State != Left {
			return nil, errorf(ErrBadNode, "node %s: address already used by node %s", n.ID, o.ID)
		}
		gone = append(gone, i)
	}
	return gone, nil
}

// reuseAddrs admits (or updates) n at addresses that failed or left nodes,
// at positions gone of Nodes, hold (decision 0017). Each of them gets an
// address that names it and reaches nothing (freedAddr), votes no more,
// and leaves (Left) if it was failed. A failed node still placed in a
// shard with slots (no spare took its places) leaves only once a node
// took its places: n, new to the cluster, takes them as a late spare
// would (takePlaces, which lists every position for rebuild). A member
// already known, or a second such node, cannot take them: refused, so
// the positions keep a failed node, whose pieces are known to be missing,
// rather than a node that left.
func (m *Map) reuseAddrs(n Node, spare bool, gone []int) (*Map, error) {
	_, known := m.Node(n.ID)
	heir := -1 // the failed node still placed whose places n takes
	for _, i := range gone {
		o := m.Nodes[i]
		if o.State != Failed || !m.placedNode(o.ID) {
			continue
		}
		switch {
		case known:
			return nil, errorf(ErrBadNode, "node %s: address already used by failed node %s, which still holds positions no spare took; only a node new to the cluster may take them", n.ID, o.ID)
		case heir >= 0:
			return nil, errorf(ErrBadNode, "node %s: addresses used by failed nodes %s and %s, which both still hold positions; a new node takes the places of one", n.ID, m.Nodes[heir].ID, o.ID)
		}
		heir = i
	}
	next := m.Clone()
	for _, i := range gone {
		o := &next.Nodes[i]
		o.ClientAddr, o.PeerAddr, o.HTTPAddr = freedAddr(o.ID), freedAddr(o.ID), ""
		o.Voter, o.Draining = false, false
		if i != heir {
			o.State = Left
		}
	}
	if known {
		old, _ := next.Node(n.ID)
		return next.updateNode(old, n), nil
	}
	if heir < 0 {
		return next.admit(n, spare), nil
	}
	from := next.Nodes[heir].ID
	for i := range next.Shards {
		// A failed node coordinates nothing: its standby entries mean
		// nothing, and would outlive its place (takePlaces keeps them).
		sh := &next.Shards[i]
		sh.Standby = slices.DeleteFunc(sh.Standby, func(id NodeID) bool { return id == from })
		if len(sh.Standby) == 0 {
			sh.Standby = nil
		}
	}
	n.State = Up
	next.Nodes = append(next.Nodes, n)
	next.takePlaces(from, n.ID)
	next.Nodes[heir].State = Left
	return next, nil
}

// freedSuffix ends every freed address: the .invalid top-level domain
// never resolves (RFC 6761), and port 0 is never dialled.
const freedSuffix = ".invalid:0"

// freedAddr is the address of a node whose address AddNode gave to
// another: unique, since it holds the node's id, and reaching nothing.
func freedAddr(id NodeID) string { return string(id) + freedSuffix }

func isFreedAddr(addr string) bool { return strings.HasSuffix(addr, freedSuffix) }

// updateNode changes the addresses and voter flag of a known node; its
// state and place in the placement are kept.
func (m *Map) updateNode(old, n Node) *Map {
	if old.sameEndpoint(n) {
		return m
	}
	next := m.Clone()
	i := m.index().node[n.ID]
	n.State, n.Draining = old.State, old.Draining
	next.Nodes[i] = n
	return next
}

// admit adds a new node: up while forming (fixing the placement when the
// Expect-th up node arrives), a spare afterwards or when asked to be one.
func (m *Map) admit(n Node, spare bool) *Map {
	next := m.Clone()
	if m.State == OK || spare {
		n.State = Spare
		next.Nodes = append(next.Nodes, n)
		next.fillFromSpares() // a failed node may be waiting for a spare
		return next
	}
	n.State = Up
	next.Nodes = append(next.Nodes, n)
	if next.countState(Up) >= next.Expect {
		next.form()
	}
	return next
}

// countState counts the nodes in state s.
func (m *Map) countState(s NodeState) int {
	count := 0
	for _, n := range m.Nodes {
		if n.State == s {
			count++
		}
	}
	return count
}

// form fixes the placement over the Up nodes in join order.
func (m *Map) form() {
	var up []Node
	for _, n := range m.Nodes {
		if n.State == Up {
			up = append(up, n)
		}
	}
	m.Shards = PlaceNodes(up, keyslot.Count)
	m.State = OK
}

func (c CreateScheme) apply(m *Map) (*Map, error) {
	sp, err := checkSpec(c.Spec)
	if err != nil {
		return nil, err
	}
	if c.Alias != "" {
		if err := scheme.CheckAlias(c.Alias); err != nil {
			return nil, wrapf(ErrBadCommand, err, "%s", trimScheme(err))
		}
	}
	if existing, ok := m.entryFor(c.Alias, sp); ok {
		if existing.Spec != sp {
			return nil, errorf(ErrSchemeConflict, "scheme %q already names %s", existing.Alias, existing.Spec)
		}
		return m, nil
	}
	if err := m.checkFits(sp); err != nil {
		return nil, err
	}
	return m.addScheme(c.Alias, sp)
}

// checkSpec returns the canonical form of sp (fields other than its kind's
// parameters zeroed), refusing invalid specs.
func checkSpec(sp scheme.Spec) (scheme.Spec, error) {
	canon, err := scheme.Parse(sp.String())
	if err != nil {
		return sp, wrapf(ErrBadCommand, err, "%s", trimScheme(err))
	}
	return canon, nil
}

// trimScheme drops the "scheme: " prefix of an error from package scheme,
// since ours says "cluster: " already.
func trimScheme(err error) string {
	return strings.TrimPrefix(err.Error(), "scheme: ")
}

// entryFor finds the entry a CreateScheme would duplicate: the alias's
// entry, or for a bare spec its bare entry.
func (m *Map) entryFor(alias string, sp scheme.Spec) (SchemeEntry, bool) {
	if alias != "" {
		if i := m.aliasIndex(alias); i >= 0 {
			return m.Schemes[i], true
		}
		return SchemeEntry{}, false
	}
	return m.named(sp.String())
}

// checkFits refuses a scheme wider than the shard placements.
func (m *Map) checkFits(sp scheme.Spec) error {
	need, have := sp.Nodes(), m.Width()
	if need <= have {
		return nil
	}
	if m.State == Forming {
		return errorf(ErrTooFewNodes, "scheme %s needs %d nodes, the cluster will have %d", sp, need, have)
	}
	return errorf(ErrTooFewNodes, "scheme %s needs %d nodes, the cluster has %d", sp, need, have)
}

// addScheme appends an entry with the next id. Ids are never reused.
func (m *Map) addScheme(alias string, sp scheme.Spec) (*Map, error) {
	if m.NextSchemeID == math.MaxUint16 {
		return nil, errorf(ErrBadCommand, "the scheme catalogue has used all %d ids", math.MaxUint16-1)
	}
	next := m.Clone()
	next.Schemes = append(next.Schemes, SchemeEntry{ID: m.NextSchemeID, Spec: sp, Alias: alias})
	next.NextSchemeID++
	return next, nil
}

func (c DropScheme) apply(m *Map) (*Map, error) {
	e, ok := m.named(c.Name)
	switch {
	case !ok:
		return nil, m.noScheme(c.Name)
	case e.ID == NoneID:
		return nil, errorf(ErrProtected, "scheme none is built in and cannot be dropped")
	case e.ID == m.Default:
		return nil, errorf(ErrProtected, "scheme %s is the default; set another default first", e.Name())
	case m.Policy.Names(e.ID):
		return nil, errorf(ErrProtected, "scheme %s is named by the %s policy; change the policy first (SCHEME.POLICY)", e.Name(), m.Policy.Kind)
	}
	next := m.Clone()
	next.Schemes = slices.DeleteFunc(next.Schemes, func(x SchemeEntry) bool { return x.ID == e.ID })
	return next, nil
}

// noScheme explains a failed lookup by exact name, pointing at the alias
// that serves a spec when there is one.
func (m *Map) noScheme(name string) error {
	if e, ok := m.Scheme(name); ok {
		return errorf(ErrNoScheme, "no scheme named %q (keys with that spec use scheme %q)", name, e.Name())
	}
	return errorf(ErrNoScheme, "no scheme named %q", name)
}

func (c SetDefault) apply(m *Map) (*Map, error) {
	if e, ok := m.Scheme(c.Name); ok {
		return m.withDefault(e.ID), nil
	}
	sp, err := scheme.Parse(c.Name)
	if err != nil {
		if errors.Is(err, scheme.ErrSpec) && strings.Contains(c.Name, ":") {
			return nil, wrapf(ErrBadCommand, err, "%s", trimScheme(err))
		}
		return nil, m.noScheme(c.Name)
	}
	next, err := CreateScheme{Spec: sp}.apply(m)
	if err != nil {
		return nil, err
	}
	e, _ := next.named(sp.String())
	next.Default = e.ID // next is our own clone
	return next, nil
}

func (m *Map) withDefault(id uint16) *Map {
	if m.Default == id {
		return m
	}
	next := m.Clone()
	next.Default = id
	return next
}
