package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/cluster/control"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/internal/lograte"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/commands"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/detect"
	"github.com/memgest/memgest/server/repair"
	"github.com/memgest/memgest/transport"
)

// Version is memgest's version, reported by INFO and `memgest version`.
var Version = "0.3.0-dev"

// Node is one running memgest server: the composition root that wires the
// stores, the control plane, the peer transport and the RESP listener.
type Node struct {
	*core.Coordinator

	incarnation atomic.Uint64    // this run of the node, new after a wipe (failure.go)
	detector    *detect.Detector // the leader's failure detector
	repair      *repair.Repairer // recovery, rebuild, sweep and scrub
	stripes     *stripe.Engine   // stripe:K+M chunks and parity, and the chunks recovery deferred

	votes   sync.Mutex  // held while a change of the Raft voters is chosen and made (voters.go)
	leaders leaderWatch // since when this node has known no Raft leader (quorum.go)

	trust       trust             // cluster secret and TLS (trust.go)
	ownPassword *cluster.Password // --requirepass, before the map has the cluster's (auth.go)
	failed      chan error        // a reason the node cannot go on (Failed)

	mux      *transport.Mux
	raftLn   net.Listener
	framesLn net.Listener
	peerSrv  *transport.Server
	cmds     *commands.Server // the RESP commands and the client port
	http     *httpServer
	stop     context.CancelFunc
	bg       sync.WaitGroup
	closeErr error
	once     sync.Once
}

// Start brings a node up: listeners, Raft (bootstrapping or joining), RESP
// and HTTP. It returns once the node serves; the cluster may still be
// forming (data commands answer -CLUSTERDOWN until it has formed).
func Start(cfg Config, log *slog.Logger) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, created, err := loadTrust(cfg)
	if err != nil {
		return nil, err
	}
	if created {
		log.Warn("generated a cluster secret: give it to joining nodes with --cluster-secret-file", "file", t.secretPath)
	}
	clock, started := cfg.FailureClock(), time.Now()
	if clock != nil {
		started = clock.Now()
	}
	n := &Node{
		Coordinator: core.NewCoordinator(cfg, rateLimited(log), started, clock, peerPoolOptions(cfg, t.guard)),
		trust:       t,
		detector:    detect.New(clock),
		failed:      make(chan error, 1),
	}
	if cfg.RequirePass != "" {
		if n.ownPassword, err = cluster.NewPassword(cfg.RequirePass); err != nil {
			return nil, err
		}
	}
	n.compose()
	n.incarnation.Store(newIncarnation())
	n.Lease.Fresh.Store(true)
	if err := n.start(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// compose builds the node's rooms around its core: the stripe engine, the
// kind registry bound to it, the repair path, the commands, and the router
// that serves each peer message.
func (n *Node) compose() {
	n.stripes = stripe.NewEngine(stripeHost{n}, stripe.Config{PeerTimeout: n.Cfg.PeerTimeout}, n.Log)
	n.Kinds, n.PackedHeld = kindsFor(n.stripes), n.stripes.InUse
	n.repair = repair.New(n.Coordinator, n.stripes)
	n.cmds = commands.New(n.Coordinator, n.stripes, n.ownPassword, Version)
	n.Router = n.newRouter()
}

func (n *Node) start() error {
	id, existed, err := n.nodeID()
	if err != nil {
		return err
	}
	n.NodeID = id
	n.Lease.Restarted.Store(existed)
	if err := n.listenPeers(); err != nil {
		return err
	}
	if err := n.startControl(); err != nil {
		return err
	}
	// Peer frames are served only once the control plane exists: their
	// handlers read the map. Connections wait in the listener until then.
	go n.peerSrv.Serve(n.framesLn)
	if n.Cfg.InMemory != nil {
		n.startLoops() // no client or HTTP port: tests call Do
		return nil
	}
	if err := n.listenClients(); err != nil {
		return err
	}
	if n.Cfg.HTTPPort != 0 {
		if n.http, err = n.startHTTP(); err != nil {
			return err
		}
	}
	n.startLoops()
	return nil
}

// startLoops starts the node's background loops.
func (n *Node) startLoops() {
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	n.background(ctx, n.expireCycle)
	n.background(ctx, n.MemUsed.Refresh(n.Coordinator))
	n.background(ctx, n.heartbeatLoop)
	n.background(ctx, n.repair.JobLoop)
	n.background(ctx, n.cmds.ExportLoop)
	n.background(ctx, n.rebalanceLoop)
	n.background(ctx, n.detectLoop)
	n.background(ctx, n.voterLoop)
	n.background(ctx, n.DirectoryLoop)
	n.background(ctx, n.repair.ScrubLoop)
	n.background(ctx, n.repair.SweepLoop)
	n.background(ctx, n.compactLoop)
	n.background(ctx, n.temperatureLoop)
	n.background(ctx, n.cmds.PubSubLoop)
	n.background(ctx, n.checkOwnPassword)
	n.background(ctx, n.cmds.SampleLoop)
	if n.Cfg.Join != "" {
		n.background(ctx, n.joinLoop)
	}
}

func (n *Node) background(ctx context.Context, f func(context.Context)) {
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		f(ctx)
	}()
}

// self is this node as the cluster map records it.
func (n *Node) self() cluster.Node {
	return cluster.Node{ID: n.NodeID, ClientAddr: n.Cfg.ClientAddr(), PeerAddr: n.Cfg.PeerAddr(), HTTPAddr: n.Cfg.HTTPAddr(),
		Zone: n.Cfg.Zone, Host: n.Cfg.Host}
}

func (n *Node) listenPeers() error {
	l, err := n.listenPeerPort()
	if err != nil {
		return fmt.Errorf("server: peer port: %w", err)
	}
	n.mux = transport.NewMux(l, transport.WithGuard(n.trust.guard), transport.WithRefused(n.peerRefused))
	frames := n.mux.Listener(transport.TagFrames)
	n.raftLn = n.mux.Listener(transport.TagRaft) // registered before Serve
	n.peerSrv = transport.NewServer(n.Router.Serve, transport.WithMaxPayload(int(n.Cfg.MaxValueSize)+64<<10))
	n.framesLn = frames
	go n.mux.Serve()
	return nil
}

func (n *Node) startControl() error {
	ccfg := control.DefaultConfig()
	ccfg.Self = n.self()
	ccfg.DataDir = filepath.Join(n.Cfg.DataDir, "raft")
	ccfg.Bootstrap = n.Cfg.Join == ""
	ccfg.Expect = n.Cfg.BootstrapExpect
	ccfg.Voters = n.Cfg.Voters
	ccfg.Logger = raftLogger(n.Cfg.LogLevel, n.Cfg.RaftLogOutput())
	ccfg.Password = n.ownPassword
	ccfg.Stream = &raftStream{Listener: n.raftLn, advertise: n.Cfg.PeerAddr(), dial: dialOptions(n.Cfg, n.trust.guard)}
	if m := n.Cfg.InMemory; m != nil {
		ccfg.InMemory = true
		if m.RaftTimeout > 0 {
			ccfg.HeartbeatTimeout, ccfg.ElectionTimeout, ccfg.LeaderLeaseTimeout = m.RaftTimeout, m.RaftTimeout, m.RaftTimeout
		}
	}
	ctl, err := control.Start(ccfg)
	if err != nil {
		return err
	}
	n.Ctl = ctl
	n.Router.Maps = ctl
	return nil
}

// joinLoop asks the cluster to admit this node until it is in the map.
func (n *Node) joinLoop(ctx context.Context) {
	if _, ok := n.Ctl.Map().Node(n.NodeID); ok {
		return // restarted member: Raft already has us
	}
	if err := n.join(ctx, n.self()); err != nil && ctx.Err() == nil {
		n.Log.Error("join failed", "via", n.Cfg.Join, "err", err)
	}
}

func (n *Node) listenClients() error {
	l, err := net.Listen("tcp", net.JoinHostPort(n.Cfg.Bind, fmt.Sprint(n.Cfg.Port)))
	if err != nil {
		return fmt.Errorf("server: client port: %w", err)
	}
	if n.trust.clientTLS != nil {
		l = tls.NewListener(l, n.trust.clientTLS)
	}
	n.cmds.Serve(l)
	return nil
}

// ID is this node's cluster id.
func (n *Node) ID() cluster.NodeID { return n.NodeID }

// ClientAddr is the RESP address clients use.
func (n *Node) ClientAddr() string { return n.Cfg.ClientAddr() }

// Failed delivers the reason when the node finds it cannot go on (its
// --requirepass is not the cluster's, say); the caller should Close it.
func (n *Node) Failed() <-chan error { return n.failed }

// failWith reports a reason the node cannot go on, once.
func (n *Node) failWith(err error) {
	select {
	case n.failed <- err:
	default:
	}
}

// peerRefused counts and logs a peer connection the guard refused: a
// stranger, or a node without the cluster secret. The log is rate-limited
// (a line of one kind at most every lograte.Every; the error does not
// count towards a line's kind).
func (n *Node) peerRefused(err error) {
	n.Metrics.AuthFailed(core.AuthPeer)
	n.Log.Warn("refused a peer connection", "err", err)
}

// Close stops serving and releases everything the node holds.
func (n *Node) Close() error {
	n.once.Do(func() {
		if n.stop != nil {
			n.stop()
		}
		var errs []error
		if n.cmds != nil {
			errs = append(errs, n.cmds.Close())
		}
		if n.http != nil {
			errs = append(errs, n.http.close())
		}
		if n.Ctl != nil {
			errs = append(errs, n.Ctl.Close())
		}
		if n.peerSrv != nil {
			errs = append(errs, n.peerSrv.Close())
		}
		if n.mux != nil {
			errs = append(errs, n.mux.Close())
		}
		errs = append(errs, n.Peers.Close(), n.Leases.Close())
		n.bg.Wait()
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// nodeID is the node's id: InMemory's, or the one kept in the data
// directory; existed says the node had it before (a restart).
func (n *Node) nodeID() (cluster.NodeID, bool, error) {
	if m := n.Cfg.InMemory; m != nil {
		if m.ID != "" {
			return m.ID, false, nil
		}
		return cluster.NewNodeID(), false, nil
	}
	return loadNodeID(n.Cfg.DataDir)
}

// loadNodeID reads the node id kept in dataDir, creating one on first start
// so a restarted node keeps its identity; existed says it was there.
func loadNodeID(dataDir string) (id cluster.NodeID, existed bool, err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", false, fmt.Errorf("server: data dir: %w", err)
	}
	path := filepath.Join(dataDir, "node-id")
	if b, err := os.ReadFile(path); err == nil {
		id := cluster.NodeID(strings.TrimSpace(string(b)))
		if !id.Valid() {
			return "", false, fmt.Errorf("server: %s holds an invalid node id", path)
		}
		return id, true, nil
	}
	id = cluster.NewNodeID()
	if err := os.WriteFile(path, []byte(string(id)+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("server: write node id: %w", err)
	}
	return id, false, nil
}

// raftStream is Raft's stream layer over the shared peer port: inbound Raft
// connections come from the Mux, outbound ones are dialled with the Raft tag.
type raftStream struct {
	net.Listener
	advertise string
	dial      []transport.Option // dialOptions
}

// Dial opens a Raft connection to a member's peer port, proving the
// cluster secret first.
func (s *raftStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return transport.DialTag(context.Background(), string(addr), transport.TagRaft, timeout, s.dial...)
}

// peerPoolOptions configures the pool of connections to other nodes.
func peerPoolOptions(cfg Config, guard *transport.Guard) []transport.Option {
	return append(dialOptions(cfg, guard), transport.WithMaxPayload(int(cfg.MaxValueSize)+64<<10))
}

// dialOptions are how a node dials peers, for frames and Raft alike: with
// the guard's handshake; over the in-memory network of an InMemory node;
// otherwise, in a binary built with the failpoints tag, through
// faults.Wrap, so that the robustness suite can cut or slow its links
// (DEBUG LINK).
func dialOptions(cfg Config, guard *transport.Guard) []transport.Option {
	opts := []transport.Option{transport.WithGuard(guard)}
	switch {
	case cfg.InMemory != nil:
		opts = append(opts, transport.WithDialer(cfg.InMemory.Network.Dialer(cfg.PeerAddr())))
	case faults.Built:
		opts = append(opts, transport.WithDialer(dialFaulty))
	}
	return opts
}

// dialFaulty dials a peer over TCP under its link fault (failpoints builds).
func dialFaulty(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return faults.Wrap(c, addr)
}

// Addr is the address other members dial.
func (s *raftStream) Addr() net.Addr { return advertised(s.advertise) }

type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }

// raftLogger keeps Raft's routine warnings (elections, log catch-up) out of
// the node's log unless debug or info logging is asked for, and writes a
// repeating line (a failed heartbeat to a dead member) once per
// lograte.Every.
func raftLogger(level string, out io.Writer) hclog.Logger {
	l := hclog.Error
	switch level {
	case "debug":
		l = hclog.Debug
	case "info":
		l = hclog.Warn
	}
	return lograte.Hclog(hclog.New(&hclog.LoggerOptions{Name: "raft", Level: l, Output: out}),
		lograte.NewLimiter(lograte.Every))
}

// rateLimited is the node's log writing a repeating line (a retried
// proposal, say) once per lograte.Every, with the count of those dropped.
func rateLimited(log *slog.Logger) *slog.Logger {
	return slog.New(lograte.NewHandler(log.Handler(), lograte.NewLimiter(lograte.Every)))
}

// checkOwnPassword stops the node when its --requirepass is not the
// cluster's: once the map is in, every node enforces the map's password, and
// one given another would mislead whoever configured it.
func (n *Node) checkOwnPassword(ctx context.Context) {
	if n.Cfg.RequirePass == "" {
		return
	}
	m, err := n.Ctl.WaitEpoch(ctx, 1)
	if err != nil {
		return // closing
	}
	if m.Password == nil || !m.Password.Matches(n.Cfg.RequirePass) {
		n.failWith(fmt.Errorf("server: --requirepass is not the cluster's password (set by its founding node or CONFIG SET requirepass); " +
			"start this node without --requirepass to use the cluster's, or change the cluster's with CONFIG SET requirepass"))
	}
}
