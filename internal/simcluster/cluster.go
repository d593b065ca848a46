package simcluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/transport"
)

// Options size and tune a Cluster; the zero value of a field takes the
// default named.
type Options struct {
	// Nodes is how many data nodes form the cluster (≥ 1).
	Nodes int
	// Spares is how many spares join once it has formed.
	Spares int
	// Voters is the number of Raft voters: 3, or 1 for fewer than 3 nodes.
	Voters int
	// FailureTimeout is the failure detector's timeout on the fake clock:
	// 1 s.
	FailureTimeout time.Duration
	// Configure, when set, edits each node's configuration (i is its
	// index) before it starts.
	Configure func(i int, cfg *server.Config)
}

// Timing of the real-time loops of a node in memory: short, so that a
// step's effects arrive quickly; the fake clock decides the outcomes.
const (
	heartbeatInterval = 50 * time.Millisecond
	raftTimeout       = 200 * time.Millisecond
	// waitTimeout bounds every wait for a condition, in real time.
	waitTimeout = 30 * time.Second
	// commandTimeout bounds one command.
	commandTimeout = 10 * time.Second
)

// Cluster is a memgest cluster in one process (package doc).
type Cluster struct {
	t      testing.TB
	seed   uint64
	rand   *rand.Rand
	clock  *Clock
	net    *transport.InmemNetwork
	opts   Options
	log    *slog.Logger
	nodes  []*member
	tracer trace
	conns  int // connections opened (Connect), to name them in the trace
}

// member is one node the cluster started.
type member struct {
	srv   *server.Node
	id    cluster.NodeID
	peer  string // peer address on the in-memory network
	alive bool   // started and not killed
}

// Start starts a cluster of o.Nodes nodes and o.Spares spares, seeded
// with seed, and waits until it has formed and every node holds a lease.
// The test's cleanup closes every node.
func Start(t testing.TB, seed uint64, o Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, seed: seed, rand: newRand(seed), clock: NewClock(time.Now()),
		net: transport.NewInmemNetwork(), opts: o.withDefaults(), log: nodeLog()}
	t.Cleanup(c.closeAll)
	t.Cleanup(c.logTraceOnFailure)
	for i := range c.opts.Nodes + c.opts.Spares {
		c.startNode(i >= c.opts.Nodes)
	}
	c.WaitMap("formed", func(m *cluster.Map) bool { return m.State == cluster.OK && len(m.Nodes) == len(c.nodes) })
	c.awaitRenewals(c.clock.Now(), nil)
	c.Settle("start")
	return c
}

func (o Options) withDefaults() Options {
	if o.Nodes < 1 {
		o.Nodes = 1
	}
	if o.Voters == 0 {
		o.Voters = 1
		if o.Nodes >= 3 {
			o.Voters = 3
		}
	}
	if o.FailureTimeout == 0 {
		o.FailureTimeout = time.Second
	}
	return o
}

// nodeLog is where the nodes log: nowhere, unless SIMCLUSTER_LOG is set
// (a test's t.Log cannot take lines from goroutines that outlive it).
func nodeLog() *slog.Logger {
	if os.Getenv("SIMCLUSTER_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// raftLog is where the nodes' Raft logs go: with the nodes' logs.
func raftLog() io.Writer {
	if os.Getenv("SIMCLUSTER_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}

// secret is every cluster's cluster secret: the guard runs its handshake
// on every in-memory connection as over TCP.
var secret = []byte("simcluster-secret-0123456789")

// config is node i's configuration.
func (c *Cluster) config(i int, spare bool) server.Config {
	cfg := server.DefaultConfig()
	cfg.Port, cfg.PeerPort, cfg.HTTPPort, cfg.DataDir = 7000+i, 17000+i, 0, ""
	cfg.InMemory = &server.InMemory{Network: c.net, ID: c.newID(), Secret: secret, Clock: c.clock,
		RaftTimeout: raftTimeout, RaftLog: raftLog()}
	cfg.BootstrapExpect, cfg.Voters, cfg.Spare = c.opts.Nodes, c.opts.Voters, spare
	// PeerTimeout stays the default 5 s: seven race-built nodes sharing two
	// busy cores with other tests saw peer calls of 2 s time out.
	cfg.FailureTimeout, cfg.HeartbeatInterval = c.opts.FailureTimeout, heartbeatInterval
	cfg.RebuildShare, cfg.ScrubRate = 1, 0
	cfg.LogLevel = "error"
	if i > 0 {
		cfg.Join = c.joinAddr()
	}
	if c.opts.Configure != nil {
		c.opts.Configure(i, &cfg)
	}
	return cfg
}

// newID draws a node id from the seed.
func (c *Cluster) newID() cluster.NodeID {
	return cluster.NodeID(fmt.Sprintf("%016x%016x%08x", c.rand.Uint64(), c.rand.Uint64(), c.rand.Uint32()))
}

// joinAddr is the peer address of the first live node.
func (c *Cluster) joinAddr() string {
	for _, m := range c.nodes {
		if m.alive {
			return m.peer
		}
	}
	c.t.Fatal("simcluster: no live node to join")
	return ""
}

// startNode starts the next node and waits until the live nodes' maps
// have it, so that nodes join in index order on every run.
func (c *Cluster) startNode(spare bool) int {
	c.t.Helper()
	i := len(c.nodes)
	cfg := c.config(i, spare)
	srv, err := server.Start(cfg, c.log)
	if err != nil {
		c.t.Fatalf("simcluster: start node %d: %v", i, err)
	}
	c.nodes = append(c.nodes, &member{srv: srv, id: cfg.InMemory.ID, peer: peerAddr(cfg), alive: true})
	c.WaitMap("node "+strconv.Itoa(i)+" joined", func(m *cluster.Map) bool {
		_, ok := m.Node(cfg.InMemory.ID)
		return ok
	})
	return i
}

func peerAddr(cfg server.Config) string {
	return cfg.Bind + ":" + strconv.Itoa(cfg.PeerPort)
}

// traceShown is how many of a failed test's last trace lines it logs.
const traceShown = 40

// logTraceOnFailure logs the end of the trace and the map when the test
// failed.
func (c *Cluster) logTraceOnFailure() {
	if !c.t.Failed() {
		return
	}
	lines := c.Trace()
	c.t.Logf("simcluster: the last %d of %d trace lines:\n%s", min(traceShown, len(lines)), len(lines),
		strings.Join(lines[max(0, len(lines)-traceShown):], "\n"))
	c.t.Logf("simcluster: now %s", c.States())
}

// closeAll closes every live node.
func (c *Cluster) closeAll() {
	for _, m := range c.nodes {
		if m.alive {
			m.alive = false
			m.srv.Close()
		}
	}
}

// Seed is the cluster's seed.
func (c *Cluster) Seed() uint64 { return c.seed }

// Rand is the cluster's seeded source: draw every random choice of a
// scenario from it, in a fixed order, so that the seed replays it — and
// never inside a loop whose number of turns depends on timing (retries
// while a shard recovers, a concurrent reader), which would shift every
// later draw. It is not safe for concurrent use.
func (c *Cluster) Rand() *rand.Rand { return c.rand }

// Len is the number of nodes started, killed ones included.
func (c *Cluster) Len() int { return len(c.nodes) }

// Alive says whether node i runs.
func (c *Cluster) Alive(i int) bool { return c.nodes[i].alive }

// Node is node i's server (to read its map, say).
func (c *Cluster) Node(i int) *server.Node { return c.nodes[i].srv }

// Index is the index of the node with id, or -1.
func (c *Cluster) Index(id cluster.NodeID) int {
	for i, m := range c.nodes {
		if m.id == id {
			return i
		}
	}
	return -1
}

// Do runs a command on node i, records it and its reply in the trace and
// returns the reply.
func (c *Cluster) Do(i int, args ...string) resp.Reply {
	r := c.DoQuiet(i, args...)
	c.tracer.add("n%d %s → %s", i, renderArgs(args), Render(r))
	return r
}

// DoQuiet runs a command on node i without tracing it: for commands whose
// replies are not deterministic (reads racing a concurrent move, say).
func (c *Cluster) DoQuiet(i int, args ...string) resp.Reply {
	if !c.nodes[i].alive {
		c.t.Fatalf("simcluster: command on node %d, which is not running", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return c.nodes[i].srv.Do(ctx, args...)
}

// DoSession runs commands in order on one client connection to node i,
// tracing each, and returns their replies.
func (c *Cluster) DoSession(i int, cmds ...[]string) []resp.Reply {
	if !c.nodes[i].alive {
		c.t.Fatalf("simcluster: commands on node %d, which is not running", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	out := c.nodes[i].srv.DoSession(ctx, cmds...)
	for j, args := range cmds {
		c.tracer.add("n%d %s → %s", i, renderArgs(args), Render(out[j]))
	}
	return out
}

// Kill closes node i abruptly, as a crash would end it: its connections
// close and it never answers again.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	c.tracer.add("kill n%d", i)
	m := c.nodes[i]
	if !m.alive {
		c.t.Fatalf("simcluster: kill node %d, which is not running", i)
	}
	m.alive = false
	m.srv.Close()
}

// Partition cuts every peer link of node i, both ways (frames and Raft);
// clients (Do) still reach it. Heal ends it.
func (c *Cluster) Partition(i int) {
	c.tracer.add("partition n%d", i)
	for j, m := range c.nodes {
		if j != i {
			c.net.Partition(c.nodes[i].peer, m.peer)
		}
	}
}

// Heal ends every partition.
func (c *Cluster) Heal() {
	c.tracer.add("heal")
	c.net.Heal()
}

// AddSpare starts a spare, waits until the cluster has it, and returns its
// index.
func (c *Cluster) AddSpare() int {
	c.t.Helper()
	i := c.startNode(true)
	c.tracer.add("spare n%d joined", i)
	return i
}

// Leader is the index of the node leading the control plane, as the live
// nodes see it (-1 if none does now). Not deterministic after the leader
// died: keep it out of the trace.
func (c *Cluster) Leader() int {
	for i, m := range c.nodes {
		if m.alive && m.srv.IsLeader() {
			return i
		}
	}
	return -1
}
