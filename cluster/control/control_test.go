package control

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
)

var verbose = flag.Bool("cluster.verbose", false, "show Raft's logs in control plane tests")

// testMember is one node of an in-process test cluster.
type testMember struct {
	node cluster.Node
	dir  string
	ctl  *Plane
}

func newMember(t *testing.T, i int) *testMember {
	n := testNode(i)
	n.PeerAddr = "127.0.0.1:0"
	return &testMember{node: n, dir: filepath.Join(t.TempDir(), fmt.Sprint(i))}
}

func testConfig(m *testMember, stream raft.StreamLayer) Config {
	cfg := DefaultConfig()
	cfg.Self, cfg.DataDir, cfg.Stream = m.node, m.dir, stream
	cfg.Logger = hclog.NewNullLogger()
	cfg.NoSync = true // CI disks stall fsync for a second at times
	if *verbose {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: string(m.node.ID[34:]), Level: hclog.Debug, Output: os.Stderr})
	}
	return cfg
}

// start (re)starts the member on its DataDir and peer address.
func (m *testMember) start(t *testing.T, edit func(*Config)) {
	t.Helper()
	s := listenStream(t, m.node.PeerAddr)
	m.node.PeerAddr = s.Addr().String()
	cfg := testConfig(m, s)
	if edit != nil {
		edit(&cfg)
	}
	ctl, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start %s: %v", m.node.ID[34:], err)
	}
	m.ctl = ctl
	t.Cleanup(func() { ctl.Close() })
}

func bootstrapWith(expect, voters int) func(*Config) {
	return func(c *Config) { c.Bootstrap, c.Expect, c.Voters = true, expect, voters }
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestControlSingleNode(t *testing.T) {
	a := newMember(t, 0)
	a.start(t, bootstrapWith(1, 1))
	m := a.ctl.Map()
	self, ok := m.Node(a.node.ID)
	if m.Epoch != 2 || m.State != cluster.OK || !ok || self.State != cluster.Up || !self.Voter {
		t.Fatalf("bootstrapped map: epoch %d state %v self %+v", m.Epoch, m.State, self)
	}
	if id, addr, ok := a.ctl.Leader(); !a.ctl.IsLeader() || !ok || id != a.node.ID || addr != a.node.PeerAddr {
		t.Fatalf("Leader() = %s %s %v", id, addr, ok)
	}
	sub, cancel := a.ctl.Subscribe()
	if got := <-sub; got != m {
		t.Fatal("Subscribe does not start with the current map")
	}
	m2, err := a.ctl.Propose(ctxT(t), cluster.CreateScheme{Alias: "hot", Spec: spec(t, "rep:1")})
	if err != nil || m2.Epoch != 3 || a.ctl.Map() != m2 || <-sub != m2 {
		t.Fatalf("Propose: %v, epoch %d", err, m2.Epoch)
	}
	cancel()
	if _, open := <-sub; open {
		t.Fatal("cancel did not close the subscription")
	}
	_, err = a.ctl.Propose(ctxT(t), cluster.CreateScheme{Spec: spec(t, "rep:2")})
	if !errors.Is(err, cluster.ErrTooFewNodes) || err.Error() != "cluster: scheme rep:2 needs 2 nodes, the cluster has 1" {
		t.Fatalf("refused command through Raft: %v", err)
	}
	if a.ctl.Map() != m2 {
		t.Fatal("a refused command changed the map")
	}
	if m3, err := a.ctl.Propose(ctxT(t), cluster.CreateScheme{Alias: "hot", Spec: spec(t, "rep:1")}); err != nil || m3 != m2 {
		t.Fatalf("idempotent command through Raft: %v, epoch %d", err, m3.Epoch)
	}
}

// Bootstrap + two joins reach the same map; the cluster forms with the
// expected placement; changes on the leader reach the followers; followers
// refuse proposals; a fourth node becomes a non-voting spare; the leader
// fails over; a restarted node catches up from its DataDir.
func TestControlCluster(t *testing.T) {
	nodes := []*testMember{newMember(t, 0), newMember(t, 1), newMember(t, 2), newMember(t, 3)}
	a := nodes[0]
	a.start(t, bootstrapWith(3, 3))
	for _, n := range nodes[1:] {
		n.start(t, nil)
	}
	for _, n := range nodes[1:3] {
		addMember(t, nodes[:3], n.node)
	}
	formed := waitSame(t, nodes[:3], func(m *cluster.Map) bool { return m.State == cluster.OK })
	growVoters(t, nodes[:3])
	formed = waitSame(t, nodes[:3], func(m *cluster.Map) bool { return m.VoterCount() == 3 })
	ids := []cluster.NodeID{nodes[0].node.ID, nodes[1].node.ID, nodes[2].node.ID}
	if !slices.EqualFunc(formed.Shards, cluster.Place(ids, keyslot.Count), func(a, b cluster.Shard) bool {
		return a.ID == b.ID && a.First == b.First && a.Last == b.Last && slices.Equal(a.Placement, b.Placement)
	}) {
		t.Fatalf("placement %+v", formed.Shards)
	}
	checkFollowers(t, nodes[:3])
	spare := nodes[3]
	addMember(t, nodes[:3], spare.node)
	m := waitSame(t, nodes, func(m *cluster.Map) bool { return len(m.Nodes) == 4 })
	if s, _ := m.Node(spare.node.ID); s.State != cluster.Spare || s.Voter {
		t.Fatalf("fourth node: %+v, want a non-voting spare", s)
	}
	checkSuffrage(t, waitLeader(t, nodes[:3]).ctl, 3, 1)
	hot := proposeToLeader(t, nodes[:3], cluster.CreateScheme{Alias: "hot", Spec: spec(t, "rep:3")})
	waitSame(t, nodes, func(x *cluster.Map) bool { return x.Epoch >= hot.Epoch })
	failover(t, nodes)
}

func failover(t *testing.T, nodes []*testMember) {
	ctx := ctxT(t)
	old := waitLeader(t, nodes[:3])
	before := old.ctl.Map().Epoch
	old.ctl.Close()
	live := slices.DeleteFunc(slices.Clone(nodes), func(m *testMember) bool { return m == old })
	m := proposeToLeader(t, live, cluster.SetDefault{Name: "hot"})
	if m.Epoch != before+1 {
		t.Fatalf("epoch %d after failover, want %d", m.Epoch, before+1)
	}
	waitSame(t, live, func(x *cluster.Map) bool { return x.Epoch >= m.Epoch })
	old.start(t, nil) // same DataDir, same address
	if got, err := old.ctl.WaitEpoch(ctx, m.Epoch); err != nil || got.DefaultScheme().Alias != "hot" {
		t.Fatalf("restarted node: %v", err)
	}
	waitSame(t, nodes, func(x *cluster.Map) bool { return x.Epoch >= m.Epoch })
}

// checkFollowers: followers know the leader and its peer address, and
// refuse to propose.
func checkFollowers(t *testing.T, voters []*testMember) {
	t.Helper()
	leader := waitLeader(t, voters)
	for _, f := range voters {
		if f == leader {
			continue
		}
		if id, addr, ok := f.ctl.Leader(); !ok || id != leader.node.ID || addr != leader.node.PeerAddr {
			t.Fatalf("follower sees leader %s %s %v, want %s", id, addr, ok, leader.node.ID)
		}
		if _, err := f.ctl.Propose(ctxT(t), cluster.SetDefault{Name: "none"}); !errors.Is(err, cluster.ErrNotLeader) {
			t.Fatalf("follower Propose: %v, want ErrNotLeader", err)
		}
		if _, err := f.ctl.AddMember(ctxT(t), cluster.AddNode{Node: testNode(9)}); !errors.Is(err, cluster.ErrNotLeader) {
			t.Fatalf("follower AddMember: %v, want ErrNotLeader", err)
		}
	}
}

func checkSuffrage(t *testing.T, c *Plane, voters, nonvoters int) {
	t.Helper()
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	count := map[raft.ServerSuffrage]int{}
	for _, s := range f.Configuration().Servers {
		count[s.Suffrage]++
	}
	if count[raft.Voter] != voters || count[raft.Nonvoter] != nonvoters {
		t.Fatalf("raft configuration %+v, want %d voters and %d non-voters", f.Configuration().Servers, voters, nonvoters)
	}
}

// waitSame waits until cond holds on every member and they all hold the
// same map, which it returns.
func waitSame(t *testing.T, members []*testMember, cond func(*cluster.Map) bool) *cluster.Map {
	t.Helper()
	ctx := ctxT(t)
	var first []byte
	for i, mem := range members {
		m, err := mem.ctl.Wait(ctx, cond)
		if err != nil {
			t.Fatalf("member %d: %v (map epoch %d)", i, err, mem.ctl.Map().Epoch)
		}
		b, _ := m.Marshal()
		if i == 0 {
			first = b
		} else if string(b) != string(first) {
			// It may have moved on meanwhile; compare at equal epochs only.
			if members[0].ctl.Map().Epoch == m.Epoch {
				t.Fatalf("members disagree:\n%s\n%s", first, b)
			}
		}
	}
	return members[0].ctl.Map()
}

// growVoters gives votes, on whichever member leads, as the server's voter
// loop does (cluster.VoterPromotions): the second member of a cluster
// joins as a non-voter, and gets its vote once a third has joined.
func growVoters(t *testing.T, members []*testMember) {
	t.Helper()
	retryOnLeader(t, members, func(c *Plane) error {
		m := c.Map()
		for _, n := range cluster.VoterPromotions(m, func(cluster.NodeID) bool { return true }) {
			if _, err := c.PromoteVoter(ctxT(t), n, cluster.VoterTarget(m)); err != nil {
				return err
			}
		}
		return nil
	})
}

// addMember asks whichever member leads to admit n, retrying on
// ErrNotLeader as a joining server does.
func addMember(t *testing.T, members []*testMember, n cluster.Node) {
	t.Helper()
	retryOnLeader(t, members, func(c *Plane) error {
		_, err := c.AddMember(ctxT(t), cluster.AddNode{Node: n})
		return err
	})
}

// proposeToLeader proposes cmd to whichever member leads, retrying on
// ErrNotLeader as the server's forwarding does, until it commits.
func proposeToLeader(t *testing.T, members []*testMember, cmd cluster.Command) *cluster.Map {
	t.Helper()
	var m *cluster.Map
	retryOnLeader(t, members, func(c *Plane) (err error) {
		m, err = c.Propose(ctxT(t), cmd)
		return err
	})
	return m
}

func retryOnLeader(t *testing.T, members []*testMember, op func(*Plane) error) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		for _, mem := range members {
			err := op(mem.ctl)
			if err == nil {
				return
			}
			if !errors.Is(err, cluster.ErrNotLeader) {
				t.Fatal(err)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader accepted the operation")
}

func waitLeader(t *testing.T, members []*testMember) *testMember {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, m := range members {
			if m.ctl.IsLeader() {
				return m
			}
		}
	}
	t.Fatal("no leader")
	return nil
}

// A node restarted on its DataDir gets the same map back, from a snapshot
// and from the log after it.
func TestControlRestartKeepsMap(t *testing.T) {
	a := newMember(t, 0)
	a.start(t, func(c *Config) { bootstrapWith(1, 1)(c); c.SnapshotThreshold = 1_000_000 })
	ctx := ctxT(t)
	mustPropose(t, a.ctl, cluster.CreateScheme{Alias: "hot", Spec: spec(t, "rep:1")})
	if err := a.ctl.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	want := mustPropose(t, a.ctl, cluster.SetDefault{Name: "hot"})
	wantBytes, _ := want.Marshal()
	if err := a.ctl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ctl.Propose(ctx, cluster.SetDefault{Name: "none"}); !errors.Is(err, cluster.ErrClosed) {
		t.Fatalf("Propose after Close: %v", err)
	}
	a.start(t, bootstrapWith(1, 1)) // Bootstrap is ignored: state exists
	got, err := a.ctl.WaitEpoch(ctx, want.Epoch)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := got.Marshal(); string(b) != string(wantBytes) {
		t.Fatalf("restarted map differs:\n%s\n%s", b, wantBytes)
	}
}

func mustPropose(t *testing.T, c *Plane, cmd cluster.Command) *cluster.Map {
	t.Helper()
	m, err := c.Propose(ctxT(t), cmd)
	if err != nil {
		t.Fatalf("Propose %+v: %v", cmd, err)
	}
	return m
}

// Config.Transport replaces Stream (in-memory transports for tests).
func TestControlInmemTransport(t *testing.T) {
	c := startInmem(t, nil)
	defer c.Close()
	if c.Map().State != cluster.OK {
		t.Fatal("not formed")
	}
}

// InMemory keeps every Raft store in memory: a member founds a cluster
// without a DataDir, and nothing is written to disk.
func TestControlInMemoryStores(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // a relative path written by mistake would land here
	addr, inmem := raft.NewInmemTransport("")
	node := testNode(0)
	node.PeerAddr = string(addr)
	cfg := testConfig(&testMember{node: node}, nil)
	cfg.Transport, cfg.InMemory = inmem, true
	bootstrapWith(1, 1)(&cfg)
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if m := mustPropose(t, c, cluster.SetDefault{Name: "none"}); m.State != cluster.OK {
		t.Fatalf("map not formed: %v", m.State)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Fatalf("an in-memory control plane wrote %d files", len(files))
	}
	cfg.InMemory = false
	if err := cfg.Validate(); err == nil {
		t.Fatal("Validate accepted neither DataDir nor InMemory")
	}
}

// startInmem starts a founding member, the only voter, over an in-memory
// transport, which wrap may wrap (nil: as it is).
func startInmem(t *testing.T, wrap func(*raft.InmemTransport) raft.Transport) *Plane {
	t.Helper()
	a := newMember(t, 0)
	addr, inmem := raft.NewInmemTransport("")
	a.node.PeerAddr = string(addr)
	cfg := testConfig(a, nil)
	cfg.Transport = inmem
	if wrap != nil {
		cfg.Transport = wrap(inmem)
	}
	bootstrapWith(1, 1)(&cfg)
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// AddMember checks the node against the map before touching Raft, so a
// refused node never becomes a member.
func TestAddMemberRefusedNodeStaysOut(t *testing.T) {
	a := newMember(t, 0)
	a.start(t, bootstrapWith(3, 3))
	clash := testNode(5)
	clash.PeerAddr = a.node.PeerAddr
	if _, err := a.ctl.AddMember(ctxT(t), cluster.AddNode{Node: clash}); !errors.Is(err, cluster.ErrBadNode) {
		t.Fatalf("AddMember with a taken address: %v", err)
	}
	checkSuffrage(t, a.ctl, 1, 0)
}

func TestProposeHonoursContext(t *testing.T) {
	a := newMember(t, 0)
	a.start(t, bootstrapWith(1, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := a.ctl.Propose(ctx, cluster.SetDefault{Name: "none"})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Propose: %v", err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer wcancel()
	if _, err := a.ctl.WaitEpoch(wctx, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitEpoch beyond the map: %v", err)
	}
	go a.ctl.Close()
	if _, err := a.ctl.WaitEpoch(context.Background(), 100); !errors.Is(err, cluster.ErrClosed) {
		t.Fatalf("WaitEpoch across Close: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := testConfig(&testMember{node: testNode(1), dir: "d"}, &tcpStream{})
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Config){
		"no id":       func(c *Config) { c.Self.ID = "" },
		"no peer":     func(c *Config) { c.Self.PeerAddr = "" },
		"no dir":      func(c *Config) { c.DataDir = "" },
		"no stream":   func(c *Config) { c.Stream = nil },
		"expect 0":    func(c *Config) { c.Expect = 0 },
		"voters 4":    func(c *Config) { c.Voters = 4 },
		"lease":       func(c *Config) { c.LeaderLeaseTimeout = time.Second },
		"election":    func(c *Config) { c.ElectionTimeout = 100 * time.Millisecond },
		"tiny commit": func(c *Config) { c.CommitTimeout = time.Millisecond },
		"snapshots":   func(c *Config) { c.RetainSnapshots = 0 },
		"transport":   func(c *Config) { c.TransportTimeout = 0 },
	} {
		c := good
		edit(&c)
		if err := c.Validate(); err == nil || err.Error()[:16] != "cluster: config:" {
			t.Errorf("%s: Validate = %v", name, err)
		}
		if _, err := Start(c); err == nil {
			t.Errorf("%s: Start accepted the config", name)
		}
	}
}

// RemoveMember takes a non-voter out of the Raft configuration and leaves
// voters in it, however asked; AddMember admits the removed node again,
// and it follows the map again.
func TestRemoveMemberOnlyNonVoters(t *testing.T) {
	nodes := []*testMember{newMember(t, 0), newMember(t, 1)}
	a := nodes[0]
	a.start(t, bootstrapWith(2, 1))
	nodes[1].start(t, nil)
	addMember(t, nodes, nodes[1].node)
	checkSuffrage(t, a.ctl, 1, 1)
	ctx := ctxT(t)
	if err := a.ctl.RemoveMember(ctx, a.node.ID); !errors.Is(err, cluster.ErrVoter) {
		t.Fatalf("removing the voter: %v, want ErrVoter", err)
	}
	if err := nodes[1].ctl.RemoveMember(ctx, nodes[1].node.ID); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("RemoveMember on a follower: %v, want ErrNotLeader", err)
	}
	for range 2 { // again: nothing to do
		if err := a.ctl.RemoveMember(ctx, nodes[1].node.ID); err != nil {
			t.Fatal(err)
		}
	}
	checkSuffrage(t, a.ctl, 1, 0)
	members, err := a.ctl.Members()
	if err != nil || len(members) != 1 || members[0] != (Member{ID: a.node.ID, PeerAddr: a.node.PeerAddr, Voter: true}) {
		t.Fatalf("members %+v, %v", members, err)
	}
	addMember(t, nodes, nodes[1].node)
	checkSuffrage(t, a.ctl, 1, 1)
	next, err := a.ctl.Propose(ctx, cluster.CreateScheme{Spec: spec(t, "rep:2")})
	if err != nil {
		t.Fatal(err)
	}
	waitSame(t, nodes, func(m *cluster.Map) bool { return m.Epoch >= next.Epoch })
}

// commitGate is an in-memory Raft transport whose AppendEntries a
// test can hold back: requests telling followers an index from
// hideCommitFrom on is committed are dropped, and requests carrying
// entries wait delayEntries first (heartbeats, which carry none, pass).
type commitGate struct {
	*raft.InmemTransport
	hideCommitFrom atomic.Uint64 // 0: hide nothing
	delayEntries   atomic.Int64  // nanoseconds
}

func (g *commitGate) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if from := g.hideCommitFrom.Load(); from != 0 && req.LeaderCommitIndex >= from {
		return errors.New("gated: commit index hidden")
	}
	if len(req.Entries) > 0 {
		time.Sleep(time.Duration(g.delayEntries.Load()))
	}
	return g.InmemTransport.AppendEntries(id, target, req, resp)
}

// AppendEntriesPipeline is refused, so that every entry goes through
// AppendEntries.
func (g *commitGate) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// A new leader vouches for nothing (VerifyLeader, which leases wait on)
// before its map holds every entry the previous leader committed. Raft
// applies those only once the new term's first entry commits; a lease
// granted from an older map could let a node the old leader had marked
// failed serve beside its successor (docs/failure-model.md, "Fencing").
// The old leader commits an entry but never tells the followers so; the
// new leader's first entry is held back while its heartbeats pass.
func TestNewLeaderVerifiesWithEveryCommittedEntry(t *testing.T) {
	members := make([]*testMember, 3)
	gates := make([]*commitGate, 3)
	for i := range members {
		members[i] = newMember(t, i)
		addr, inmem := raft.NewInmemTransport("")
		members[i].node.PeerAddr = string(addr)
		gates[i] = &commitGate{InmemTransport: inmem}
	}
	for _, a := range gates {
		for _, b := range gates {
			a.Connect(b.LocalAddr(), b.InmemTransport)
		}
	}
	for i, m := range members {
		cfg := testConfig(m, nil)
		cfg.Transport = gates[i]
		if i == 0 {
			bootstrapWith(3, 3)(&cfg)
		}
		ctl, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		m.ctl = ctl
		t.Cleanup(func() { ctl.Close() })
		if i > 0 {
			addMember(t, members[:i+1], m.node)
		}
	}
	waitSame(t, members, func(m *cluster.Map) bool { return m.State == cluster.OK })
	growVoters(t, members)
	checkSuffrage(t, waitLeader(t, members).ctl, 3, 0)

	old := waitLeader(t, members)
	i := slices.Index(members, old)
	gates[i].hideCommitFrom.Store(old.ctl.raft.LastIndex() + 1)
	mustPropose(t, old.ctl, cluster.CreateScheme{Alias: "committed", Spec: spec(t, "rep:2")})
	old.ctl.Close()
	live := slices.Delete(slices.Clone(members), i, i+1)
	for j, g := range gates {
		if j != i {
			g.delayEntries.Store(int64(500 * time.Millisecond))
		}
	}
	var verified *Plane
	retryOnLeader(t, live, func(c *Plane) error {
		verified = c
		return c.VerifyLeader()
	})
	if _, ok := verified.Map().Scheme("committed"); !ok {
		t.Fatalf("a verified leader's map (epoch %d) lacks the entry the previous leader committed", verified.Map().Epoch)
	}
}

// A leader that gives up its own vote (ReplaceVoter of itself: a restarted
// node that won an election marks itself failed) hands it to the other
// node and leaves the configuration, and is readmitted and follows the map
// afterwards: before, it left first and could commit nothing after, and
// Raft shut down on the removed node, which no AddMember could bring back
// (robustness seed 13, "kill the raft leader and a node, restart both").
func TestLeaderReplacesItsOwnVote(t *testing.T) {
	nodes := []*testMember{newMember(t, 0), newMember(t, 1)}
	a, b := nodes[0], nodes[1]
	a.start(t, bootstrapWith(2, 1))
	b.start(t, nil)
	addMember(t, nodes, b.node)
	ctx := ctxT(t)
	m, err := a.ctl.ReplaceVoter(ctx, a.node.ID, b.node)
	if err != nil {
		t.Fatalf("the leader replacing its own vote: %v", err)
	}
	if n, _ := m.Node(b.node.ID); !n.Voter {
		t.Fatalf("the map does not make %s the voter: %+v", b.node.ID, n)
	}
	for !b.ctl.IsLeader() {
		select {
		case <-ctx.Done():
			t.Fatal("the new voter never led")
		case <-time.After(10 * time.Millisecond):
		}
	}
	checkSuffrage(t, b.ctl, 1, 0)
	addMember(t, nodes, a.node)
	next, err := b.ctl.Propose(ctx, cluster.CreateScheme{Spec: spec(t, "rep:2")})
	if err != nil {
		t.Fatal(err)
	}
	waitSame(t, nodes, func(m *cluster.Map) bool { return m.Epoch >= next.Epoch })
}

// TestPromoteVoter: PromoteVoter grows the Raft configuration by one voter
// and records the flag in the map, up to the count it is given and no
// further (a node AddMember admitted as a voter may have filled the place
// meanwhile); a node that votes already only has its flag recorded.
// AddMember admits a joiner as a voter while the configuration has fewer
// than cluster.VoterTarget of the map with it added (never an even count
// of the nodes: four nodes keep three voters).
func TestPromoteVoter(t *testing.T) {
	nodes := []*testMember{newMember(t, 0), newMember(t, 1), newMember(t, 2), newMember(t, 3)}
	a := nodes[0]
	a.start(t, bootstrapWith(3, 1))
	for _, n := range nodes[1:] {
		n.start(t, nil)
	}
	for _, n := range nodes[1:3] {
		addMember(t, nodes[:3], n.node)
	}
	checkSuffrage(t, a.ctl, 1, 2)
	ctx := ctxT(t)
	if _, err := a.ctl.Propose(ctx, cluster.CreateScheme{Spec: spec(t, "rep:2")}); err != nil {
		t.Fatal(err)
	}
	if got := cluster.VoterTarget(a.ctl.Map()); got != 3 {
		t.Fatalf("VoterTarget with rep:2 = %d, want 3", got)
	}
	if _, err := nodes[1].ctl.PromoteVoter(ctx, nodes[2].node, 3); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("PromoteVoter on a follower: %v, want ErrNotLeader", err)
	}
	for range 2 { // again: only the flag, which is set already
		m, err := a.ctl.PromoteVoter(ctx, nodes[1].node, 3)
		if n, _ := m.Node(nodes[1].node.ID); err != nil || !n.Voter {
			t.Fatalf("PromoteVoter: %v, flag %v", err, n.Voter)
		}
		checkSuffrage(t, a.ctl, 2, 1)
	}
	m, err := a.ctl.PromoteVoter(ctx, nodes[2].node, 2)
	if n, _ := m.Node(nodes[2].node.ID); err != nil || n.Voter {
		t.Fatalf("PromoteVoter beyond its count: %v, flag %v", err, n.Voter)
	}
	checkSuffrage(t, a.ctl, 2, 1)
	if _, err := a.ctl.PromoteVoter(ctx, nodes[2].node, 3); err != nil {
		t.Fatal(err)
	}
	checkSuffrage(t, a.ctl, 3, 0)
	if _, err := a.ctl.Propose(ctx, cluster.CreateScheme{Spec: spec(t, "rep:3")}); err != nil {
		t.Fatal(err)
	}
	addMember(t, nodes, nodes[3].node) // VoterTarget 3 with it: four nodes have three voters
	checkSuffrage(t, a.ctl, 3, 1)
	m = waitSame(t, nodes, func(m *cluster.Map) bool { return len(m.Nodes) == 4 })
	if got := m.VoterCount(); got != 3 {
		t.Fatalf("the map flags %d voters, want 3", got)
	}
	fifth := newMember(t, 4)
	fifth.start(t, nil)
	nodes = append(nodes, fifth)
	addMember(t, nodes, fifth.node) // VoterTarget 5 with it: the joiner votes
	checkSuffrage(t, a.ctl, 4, 1)
}

// TestDropVoter: a failed voter no node can take the vote of leaves the
// Raft configuration and loses its flag in the map; a live voter's vote,
// and the leader's own, are never dropped.
func TestDropVoter(t *testing.T) {
	nodes := threeVoters(t)
	a, ctx := nodes[0], ctxT(t)
	if _, err := a.ctl.DropVoter(ctx, nodes[1].node.ID); !errors.Is(err, cluster.ErrBadNode) {
		t.Fatalf("dropping a live voter: %v, want ErrBadNode", err)
	}
	if _, err := a.ctl.DropVoter(ctx, a.node.ID); !errors.Is(err, cluster.ErrVoter) {
		t.Fatalf("dropping the leader's own vote: %v, want ErrVoter", err)
	}
	nodes[2].ctl.Close()
	if _, err := a.ctl.Propose(ctx, cluster.MarkFailed{ID: nodes[2].node.ID}); err != nil {
		t.Fatal(err)
	}
	m, err := a.ctl.DropVoter(ctx, nodes[2].node.ID)
	if n, _ := m.Node(nodes[2].node.ID); err != nil || n.Voter {
		t.Fatalf("DropVoter: %v, flag %v", err, n.Voter)
	}
	checkSuffrage(t, a.ctl, 2, 0)
	if _, err := a.ctl.Propose(ctx, cluster.SetDefault{Name: "none"}); err != nil {
		t.Fatalf("the two voters left decide: %v", err)
	}
}

// TestGiveUpVote: a leaving voter whose vote no node can take becomes a
// non-voter that still receives the map; the group of those left
// decides, and the leader's own vote is refused.
func TestGiveUpVote(t *testing.T) {
	nodes := threeVoters(t)
	a, ctx := nodes[0], ctxT(t)
	if _, err := a.ctl.GiveUpVote(ctx, a.node.ID); !errors.Is(err, cluster.ErrVoter) {
		t.Fatalf("giving up the leader's own vote: %v, want ErrVoter", err)
	}
	if _, err := nodes[1].ctl.GiveUpVote(ctx, nodes[2].node.ID); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("GiveUpVote on a follower: %v, want ErrNotLeader", err)
	}
	m, err := a.ctl.GiveUpVote(ctx, nodes[2].node.ID)
	if n, _ := m.Node(nodes[2].node.ID); err != nil || n.Voter {
		t.Fatalf("GiveUpVote: %v, flag %v", err, n.Voter)
	}
	checkSuffrage(t, a.ctl, 2, 1)
	m, err = a.ctl.Propose(ctx, cluster.SetDefault{Name: "none"})
	if err != nil {
		t.Fatalf("the two voters left decide: %v", err)
	}
	waitSame(t, nodes, func(got *cluster.Map) bool { return got.Epoch == m.Epoch }) // the non-voter still follows
}

// threeVoters starts three members, the first founding the cluster with
// --voters 3, and has all three vote: the second joined as a non-voter
// (two nodes keep one voter), which the server's voter loop would
// promote once the third has joined.
func threeVoters(t *testing.T) []*testMember {
	t.Helper()
	nodes := []*testMember{newMember(t, 0), newMember(t, 1), newMember(t, 2)}
	a := nodes[0]
	a.start(t, bootstrapWith(3, 3))
	for _, n := range nodes[1:] {
		n.start(t, nil)
		addMember(t, nodes, n.node)
	}
	if _, err := a.ctl.PromoteVoter(ctxT(t), nodes[1].node, 3); err != nil {
		t.Fatal(err)
	}
	checkSuffrage(t, a.ctl, 3, 0)
	return nodes
}
