package control

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Plane is a node's handle on the control plane: a Raft member whose
// state machine is the cluster map. Every node runs one. Reads (Map,
// Subscribe, Wait) are local and never block on Raft; changes (Propose,
// AddMember) go through the leader.
type Plane struct {
	cfg    Config
	log    hclog.Logger
	raft   *raft.Raft
	hub    *hub
	store  raftStore
	trans  raft.Transport
	member sync.Mutex // serialises AddMember's voter count and change
	once   sync.Once
	err    error
	// caughtUp is the last term in which this node, as leader, saw a
	// barrier through: every entry committed before it is in the map.
	caughtUp atomic.Uint64
}

// Start opens (or creates) the Raft state in cfg.DataDir and joins the
// Raft group. With cfg.Bootstrap and no existing state it founds a cluster:
// it becomes the sole voter and leader, then commits Init and AddNode{Self}
// before returning. Otherwise the map is replayed from DataDir (snapshot at
// once, log entries once a leader commits them) or, for a new member, arrives
// after the leader's AddMember; use Wait to block until it has.
func Start(cfg Config) (*Plane, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Plane{cfg: cfg, log: cfg.logger(), hub: newHub(cluster.EmptyMap())}
	fresh, err := c.open()
	if err != nil {
		c.shutdown()
		return nil, err
	}
	if cfg.Bootstrap && fresh {
		if err := c.bootstrap(); err != nil {
			c.shutdown()
			return nil, err
		}
	}
	return c, nil
}

// open creates the stores, the transport and the Raft node, reporting
// whether DataDir held no Raft state.
func (c *Plane) open() (fresh bool, err error) {
	snaps, err := c.openStores()
	if err != nil {
		return false, err
	}
	logs, err := raft.NewLogCache(256, c.store)
	if err != nil {
		return false, fmt.Errorf("cluster: log cache: %w", err)
	}
	has, err := raft.HasExistingState(logs, c.store, snaps)
	if err != nil {
		return false, fmt.Errorf("cluster: read raft state: %w", err)
	}
	c.trans = gate(c.transport())
	c.raft, err = raft.NewRaft(c.cfg.raftConfig(c.log), &fsm{hub: c.hub}, logs, c.store, snaps, c.trans)
	if err != nil {
		return false, fmt.Errorf("cluster: start raft: %w", err)
	}
	return !has, nil
}

// raftStore is the Raft log and stable store: bbolt in DataDir, or memory.
type raftStore interface {
	raft.LogStore
	raft.StableStore
	Close() error
}

// memoryStore is raft.InmemStore with the Close a bolt store has.
type memoryStore struct{ *raft.InmemStore }

func (memoryStore) Close() error { return nil }

// openStores opens the log and stable store (c.store) and returns the
// snapshot store: in DataDir, or in memory with InMemory.
func (c *Plane) openStores() (raft.SnapshotStore, error) {
	if c.cfg.InMemory {
		c.store = memoryStore{raft.NewInmemStore()}
		return raft.NewInmemSnapshotStore(), nil
	}
	dir := c.cfg.DataDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: data dir: %w", err)
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), NoSync: c.cfg.NoSync})
	if err != nil {
		return nil, fmt.Errorf("cluster: open raft store: %w", err)
	}
	c.store = bolt
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, c.cfg.RetainSnapshots, c.log)
	if err != nil {
		return nil, fmt.Errorf("cluster: open snapshot store: %w", err)
	}
	return snaps, nil
}

func (c *Plane) transport() raft.Transport {
	if c.cfg.Transport != nil {
		return c.cfg.Transport
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  c.cfg.Stream,
		MaxPool: 3,
		Timeout: c.cfg.TransportTimeout,
		Logger:  c.log,
	})
}

// bootstrap founds a cluster of one voter, waits to lead it, and commits
// the cluster constants and this node.
func (c *Plane) bootstrap() error {
	self := raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(c.cfg.Self.ID), Address: raft.ServerAddress(c.cfg.Self.PeerAddr)}
	if err := c.raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{self}}).Error(); err != nil {
		return fmt.Errorf("cluster: bootstrap: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	if err := c.awaitLeadership(ctx); err != nil {
		return err
	}
	node := c.cfg.Self
	node.Voter = true
	for _, cmd := range []cluster.Command{cluster.Init{Expect: c.cfg.Expect, Voters: c.cfg.Voters, Password: c.cfg.Password}, cluster.AddNode{Node: node}} {
		if _, err := c.Propose(ctx, cmd); err != nil {
			return fmt.Errorf("cluster: bootstrap: %w", err)
		}
	}
	return nil
}

func (c *Plane) awaitLeadership(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !c.IsLeader() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("cluster: bootstrap: not leader after %s: %w", c.cfg.StartTimeout, ctx.Err())
		}
	}
	return nil
}

// Map returns the latest map this node has applied. It is never nil; before
// the node has applied its first entry it is an uninitialised map of epoch 0
// with only the builtin scheme.
//
// It is the node's view of the map (cluster.Map.ViewFor): where this node
// coordinates a shard importing slots, those slots are its shard's for
// placement while they still route to their source.
func (c *Plane) Map() *cluster.Map { return c.hub.load().ViewFor(c.cfg.Self.ID) }

// Subscribe delivers maps as this node applies them, starting with the
// current one. The channel holds one map; a slow reader skips intermediate
// maps but always receives the latest, and epochs only grow. The channel is
// closed by cancel or by Close.
func (c *Plane) Subscribe() (<-chan *cluster.Map, func()) { return c.hub.subscribe() }

// Wait blocks until cond holds for the local map and returns that map. A
// restarted or joining node can wait for its own entry, e.g.
// func(m *Map) bool { _, ok := m.Node(self); return ok }.
func (c *Plane) Wait(ctx context.Context, cond func(*cluster.Map) bool) (*cluster.Map, error) {
	m, err := c.hub.wait(ctx, func(m *cluster.Map) bool { return cond(m.ViewFor(c.cfg.Self.ID)) })
	if m != nil {
		m = m.ViewFor(c.cfg.Self.ID)
	}
	return m, err
}

// WaitEpoch blocks until the local map reaches at least epoch. The data path
// uses it for frames made under a newer map than this node has seen.
func (c *Plane) WaitEpoch(ctx context.Context, epoch uint64) (*cluster.Map, error) {
	return c.Wait(ctx, func(m *cluster.Map) bool { return m.Epoch >= epoch })
}

// IsLeader reports whether this node is the Raft leader now.
func (c *Plane) IsLeader() bool { return c.raft != nil && c.raft.State() == raft.Leader }

// VerifyLeader confirms with a quorum of voters that this node is still
// the leader, so that a deposed leader that has not noticed yet cannot
// vouch for anything (the failure detector's leases rely on it), and that
// its map holds every entry a previous leader committed: Raft applies those
// only once the new leader's first entry commits, and a lease granted from
// a map without a MarkFailed would let a failed node serve beside its
// successor. The first call of each term waits for a barrier.
func (c *Plane) VerifyLeader() error {
	if err := c.leading(); err != nil {
		return err
	}
	term := c.raft.CurrentTerm()
	if err := c.raft.VerifyLeader().Error(); err != nil {
		return cluster.ErrNotLeader
	}
	if c.caughtUp.Load() == term {
		return nil
	}
	if err := c.raft.Barrier(c.cfg.TransportTimeout).Error(); err != nil {
		return cluster.ErrNotLeader
	}
	c.caughtUp.Store(term)
	return nil
}

// Barrier waits, on the leader, until every entry of the Raft log before it
// is applied to the map, so that the map read next is the current one.
func (c *Plane) Barrier(timeout time.Duration) error {
	return c.raft.Barrier(timeout).Error()
}

// leading is nil on the leader, ErrClosed after Close, else ErrNotLeader.
func (c *Plane) leading() error {
	if c.raft == nil {
		return cluster.ErrNotLeader // NewStatic
	}
	switch c.raft.State() {
	case raft.Leader:
		return nil
	case raft.Shutdown:
		return cluster.ErrClosed
	}
	return cluster.ErrNotLeader
}

// Leader returns the current leader as this node knows it: its id and its
// PeerAddr (from the map, else Raft's address). false if there is none.
func (c *Plane) Leader() (cluster.NodeID, string, bool) {
	if c.raft == nil {
		return "", "", false // NewStatic
	}
	addr, id := c.raft.LeaderWithID()
	if id == "" {
		return "", "", false
	}
	if n, ok := c.Map().Node(cluster.NodeID(id)); ok {
		return n.ID, n.PeerAddr, true
	}
	return cluster.NodeID(id), string(addr), true
}

// Propose commits cmd through Raft and returns the resulting map (the
// current map when cmd changed nothing). A refused command returns Apply's
// *Error unchanged. Leader only: elsewhere it returns ErrNotLeader and the
// caller forwards cmd (EncodeCommand) to Leader(). If ctx ends first the
// command may still commit later; map commands are idempotent or fail
// harmlessly when repeated, so callers may retry.
func (c *Plane) Propose(ctx context.Context, cmd cluster.Command) (*cluster.Map, error) {
	if err := c.leading(); err != nil {
		return nil, err
	}
	data, err := cluster.EncodeCommand(cmd)
	if err != nil {
		return nil, err
	}
	f := c.raft.Apply(data, timeoutOf(ctx))
	if err := await(ctx, f); err != nil {
		return nil, raftError(err)
	}
	switch r := f.Response().(type) {
	case *cluster.Map:
		return r, nil
	case error:
		return nil, r
	}
	return nil, fmt.Errorf("cluster: unexpected state machine response %T", f.Response())
}

// AddMember admits the node of add (leader only): it joins Raft as a voter
// while there are fewer voters than cluster.VoterTarget of the map with it
// added, else as a non-voter, and then add is committed (with add.Spare the
// node joins the map as a spare). A known member keeps its suffrage (its
// address is updated if it changed), so a restarted node may call it
// again. The command is checked against the current map first, so a
// refused node never becomes a Raft member. AddMember is idempotent: on
// ErrNotLeader (also when leadership is lost midway) retry it on the new
// leader.
func (c *Plane) AddMember(ctx context.Context, add cluster.AddNode) (*cluster.Map, error) {
	n := add.Node
	if err := c.leading(); err != nil {
		return nil, err
	}
	c.member.Lock()
	defer c.member.Unlock()
	next, err := cluster.Apply(c.Map(), add)
	if err != nil {
		return nil, err
	}
	voter, change, err := c.suffrage(n, cluster.VoterTarget(next))
	if err != nil {
		return nil, err
	}
	n.Voter = voter
	add.Node = n
	if change != nil {
		if err := await(ctx, change(raft.ServerID(n.ID), raft.ServerAddress(n.PeerAddr), 0, timeoutOf(ctx))); err != nil {
			return nil, raftError(err)
		}
	}
	return c.Propose(ctx, add)
}

// ReplaceVoter keeps the control plane at its size of voters after a voter
// failed (leader only): the failed node leaves the Raft configuration, the
// live node with takes its vote (a non-voter promoted in place), and the
// map's voter flags follow. Without it a second voter failure would cost
// the quorum of three.
//
// A leader that gives up its own vote (a restarted node that won an
// election marks itself failed) promotes with and records the flags first,
// and leaves the configuration last: once out of it, it leads nothing, so
// nothing after could commit. A failed voter that is down leaves first
// instead, so that the configuration change never needs its vote.
func (c *Plane) ReplaceVoter(ctx context.Context, failed cluster.NodeID, with cluster.Node) (*cluster.Map, error) {
	if err := c.leading(); err != nil {
		return nil, err
	}
	c.member.Lock()
	defer c.member.Unlock()
	remove := func() error {
		return await(ctx, c.raft.RemoveServer(raft.ServerID(failed), 0, timeoutOf(ctx)))
	}
	promote := func() error {
		return await(ctx, c.raft.AddVoter(raft.ServerID(with.ID), raft.ServerAddress(with.PeerAddr), 0, timeoutOf(ctx)))
	}
	flags := cluster.SetVoters{Nodes: []cluster.VoterFlag{{ID: failed, Voter: false}, {ID: with.ID, Voter: true}}}
	if failed != c.cfg.Self.ID {
		if err := remove(); err != nil {
			return nil, raftError(err)
		}
		if err := promote(); err != nil {
			return nil, raftError(err)
		}
		return c.Propose(ctx, flags)
	}
	if err := promote(); err != nil {
		return nil, raftError(err)
	}
	m, err := c.Propose(ctx, flags)
	if err != nil {
		return nil, err
	}
	if err := remove(); err != nil {
		return nil, raftError(err)
	}
	return m, nil
}

// PromoteVoter gives the live non-voter with a vote (leader only), so that
// the control plane grows towards the voters the map calls for
// (cluster.VoterTarget, passed as upTo), and records it in the map
// (SetVoters). It changes nothing in Raft once the configuration has upTo
// voters: a node AddMember admitted as a voter meanwhile may have filled
// the place. A node that already votes in Raft only has its flag
// recorded. It returns the map after the change.
func (c *Plane) PromoteVoter(ctx context.Context, with cluster.Node, upTo int) (*cluster.Map, error) {
	if err := c.leading(); err != nil {
		return nil, err
	}
	c.member.Lock()
	defer c.member.Unlock()
	members, err := c.Members()
	if err != nil {
		return nil, err
	}
	voters, votes := 0, false
	for _, m := range members {
		if m.Voter {
			voters++
			votes = votes || m.ID == with.ID
		}
	}
	switch {
	case votes:
	case voters >= upTo:
		return c.Map(), nil
	default:
		if err := await(ctx, c.raft.AddVoter(raft.ServerID(with.ID), raft.ServerAddress(with.PeerAddr), 0, timeoutOf(ctx))); err != nil {
			return nil, raftError(err)
		}
	}
	return c.Propose(ctx, cluster.SetVoters{Nodes: []cluster.VoterFlag{{ID: with.ID, Voter: true}}})
}

// DropVoter takes the failed voter failed, whose vote no live node can
// take, out of the Raft configuration (leader only) and clears its flag in
// the map (SetVoters). A group whose members all live survives at least
// as many further failures as a larger one that counts a dead member (four
// voters with one dead survive no more failures; the three alive, one),
// and the dead member's address is free again for a node that replaces it
// (decision 0017). It refuses a node the map does not mark failed, and the
// leader's own vote: once out of the configuration it could commit
// nothing (ReplaceVoter hands it on instead).
func (c *Plane) DropVoter(ctx context.Context, failed cluster.NodeID) (*cluster.Map, error) {
	if err := c.leading(); err != nil {
		return nil, err
	}
	c.member.Lock()
	defer c.member.Unlock()
	switch n, ok := c.Map().Node(failed); {
	case failed == c.cfg.Self.ID:
		return nil, fmt.Errorf("cluster: dropping the leader's own vote: %w", cluster.ErrVoter)
	case ok && n.State != cluster.Failed:
		return nil, fmt.Errorf("cluster: dropping the vote of %s, which is %s: %w", failed, n.State, cluster.ErrBadNode)
	}
	if err := await(ctx, c.raft.RemoveServer(raft.ServerID(failed), 0, timeoutOf(ctx))); err != nil {
		return nil, raftError(err)
	}
	return c.Propose(ctx, cluster.SetVoters{Nodes: []cluster.VoterFlag{{ID: failed, Voter: false}}})
}

// HandOverVote gives the vote of a live voter that is leaving (a drained
// node) to the live non-voter with (leader only): with is promoted, the
// map's voter flags follow, and only then is from demoted to a non-voter.
// Unlike ReplaceVoter, from stays in the Raft configuration, so it keeps
// receiving the map and sees itself marked left (cluster.RemoveNode);
// RemoveMember takes it out after that. A node that leaves Raft before
// that keeps its last map for good, and serves from it what it can no
// longer know.
func (c *Plane) HandOverVote(ctx context.Context, from cluster.NodeID, with cluster.Node) (*cluster.Map, error) {
	if err := c.leading(); err != nil {
		return nil, err
	}
	c.member.Lock()
	defer c.member.Unlock()
	if err := await(ctx, c.raft.AddVoter(raft.ServerID(with.ID), raft.ServerAddress(with.PeerAddr), 0, timeoutOf(ctx))); err != nil {
		return nil, raftError(err)
	}
	m, err := c.Propose(ctx, cluster.SetVoters{Nodes: []cluster.VoterFlag{{ID: from, Voter: false}, {ID: with.ID, Voter: true}}})
	if err != nil {
		return nil, err
	}
	if err := await(ctx, c.raft.DemoteVoter(raft.ServerID(from), 0, timeoutOf(ctx))); err != nil {
		return nil, raftError(err)
	}
	return m, nil
}

// GiveUpVote demotes from, a live voter that is leaving (a drained node)
// whose vote no live non-voter can take, to a non-voter (leader only), and
// clears its flag in the map. The group shrinks by one, which the cluster
// shrinking by one asks for: the nodes left can all vote already. As with
// HandOverVote, from stays in the Raft configuration until RemoveMember.
// It refuses the leader's own vote (a drained leader hands leadership
// over first).
func (c *Plane) GiveUpVote(ctx context.Context, from cluster.NodeID) (*cluster.Map, error) {
	if err := c.leading(); err != nil {
		return nil, err
	}
	if from == c.cfg.Self.ID {
		return nil, fmt.Errorf("cluster: giving up the leader's own vote: %w", cluster.ErrVoter)
	}
	c.member.Lock()
	defer c.member.Unlock()
	if err := await(ctx, c.raft.DemoteVoter(raft.ServerID(from), 0, timeoutOf(ctx))); err != nil {
		return nil, raftError(err)
	}
	return c.Propose(ctx, cluster.SetVoters{Nodes: []cluster.VoterFlag{{ID: from, Voter: false}}})
}

// Member is a node of the Raft configuration as this node knows it.
type Member struct {
	ID       cluster.NodeID
	PeerAddr string
	Voter    bool
}

// Members lists the Raft configuration, the latest this node knows (on the
// leader, the one it replicates to).
func (c *Plane) Members() ([]Member, error) {
	if c.raft == nil {
		return nil, nil // NewStatic
	}
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, raftError(err)
	}
	var out []Member
	for _, s := range f.Configuration().Servers {
		out = append(out, Member{ID: cluster.NodeID(s.ID), PeerAddr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// RemoveMember takes a non-voter out of the Raft configuration (leader
// only), so that the leader stops replicating to it: a failed node the map
// no longer counts on. It never removes a voter, which would shrink the
// configuration a quorum is counted in without a replacement (ReplaceVoter
// hands a failed voter's vote on first, or DropVoter drops it when no node
// can take it): it refuses with ErrVoter. A node
// that is not a member is left as it is. AddMember admits it again.
func (c *Plane) RemoveMember(ctx context.Context, id cluster.NodeID) error {
	if err := c.leading(); err != nil {
		return err
	}
	c.member.Lock()
	defer c.member.Unlock()
	members, err := c.Members()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(members, func(m Member) bool { return m.ID == id })
	switch {
	case i < 0:
		return nil
	case members[i].Voter:
		return fmt.Errorf("cluster: removing %s: %w", id, cluster.ErrVoter)
	}
	if err := await(ctx, c.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx))); err != nil {
		return raftError(err)
	}
	return nil
}

// TransferLeadership hands Raft leadership to the voter to and waits until
// the transfer ends (leader only). Tests use it to take the leader out of
// the nodes a scenario involves; an operator's leader keeps its role
// otherwise.
func (c *Plane) TransferLeadership(ctx context.Context, to cluster.NodeID) error {
	if err := c.leading(); err != nil {
		return err
	}
	members, err := c.Members()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(members, func(m Member) bool { return m.ID == to })
	if i < 0 || !members[i].Voter {
		return fmt.Errorf("cluster: %s is no Raft voter to lead", to)
	}
	f := c.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(members[i].PeerAddr))
	if err := await(ctx, f); err != nil {
		return raftError(err)
	}
	return nil
}

type membershipChange func(raft.ServerID, raft.ServerAddress, uint64, time.Duration) raft.IndexFuture

// suffrage decides whether n votes, in a control plane that wants target
// voters, and which Raft change admits it (nil when it is already a member
// at that address).
func (c *Plane) suffrage(n cluster.Node, target int) (voter bool, change membershipChange, err error) {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, nil, raftError(err)
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.ID) {
			return c.rejoin(s, n)
		}
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if voters < target {
		return true, c.raft.AddVoter, nil
	}
	return false, c.raft.AddNonvoter, nil
}

func (c *Plane) rejoin(s raft.Server, n cluster.Node) (bool, membershipChange, error) {
	voter := s.Suffrage == raft.Voter
	if s.Address == raft.ServerAddress(n.PeerAddr) {
		return voter, nil, nil
	}
	if voter {
		return true, c.raft.AddVoter, nil
	}
	return false, c.raft.AddNonvoter, nil
}

// Close leaves the Raft group without telling it (the node counts as down
// until it restarts on the same DataDir), closes the transport and the
// stores, and ends every Subscribe channel and Wait. It is idempotent.
func (c *Plane) Close() error {
	c.once.Do(c.shutdown)
	return c.err
}

func (c *Plane) shutdown() {
	var errs []error
	if c.raft != nil {
		errs = append(errs, c.raft.Shutdown().Error())
	}
	if closer, ok := c.trans.(raft.WithClose); ok {
		errs = append(errs, closer.Close())
	} else if c.trans == nil && c.cfg.Stream != nil {
		errs = append(errs, c.cfg.Stream.Close()) // Start failed before wrapping it
	}
	if g, ok := c.trans.(*gatedTransport); ok {
		g.shut() // no heartbeat in Raft from here on
	}
	if c.store != nil {
		errs = append(errs, c.store.Close())
	}
	c.hub.close()
	if err := errors.Join(errs...); err != nil {
		c.err = fmt.Errorf("cluster: close: %w", err)
	}
}

// timeoutOf is what is left of ctx's deadline, or 0 (no limit) without one.
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}

// await waits for a Raft future or the end of ctx, whichever comes first.
func await(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// raftError maps Raft's errors to ours: lost or missing leadership is
// ErrNotLeader (forward and retry), shutdown is ErrClosed.
func raftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w (%w)", cluster.ErrNotLeader, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return cluster.ErrClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("cluster: raft: %w", err)
}
