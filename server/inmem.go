package server

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/transport"
)

// This file lets a node run without sockets or disk, for in-process test
// clusters (internal/simcluster): its peer port on a transport.InmemNetwork
// (frames and Raft through the same Mux and guard as over TCP), the Raft
// state in memory, no client or HTTP port (tests call Do), and the clock
// that decides leases and failure detection injected. A Config without
// InMemory is a production node and none of this applies.

// InMemory runs a node in memory (Config.InMemory).
type InMemory struct {
	// Network carries the node's peer port: it listens at its peer address
	// there and dials peers through it. Raft runs over the same Mux as the
	// data frames rather than over raft.InmemTransport, so a Partition of
	// the network cuts a node's Raft traffic and its frames together, as a
	// pulled cable does, and the guard's handshake and the Mux are the
	// production ones.
	Network *transport.InmemNetwork
	// ID is the node's id; empty gives a random one. A harness deriving
	// ids from a seed gets the same placement on every run.
	ID cluster.NodeID
	// Secret is the cluster secret every peer connection proves, at least
	// transport.MinSecretLen bytes; no file is read or written.
	Secret []byte
	// Clock is what leases and the failure detector read (failure.go);
	// nil is the system clock.
	Clock Clock
	// RaftTimeout, when positive, is the control plane's heartbeat,
	// election and leader-lease timeout (control.Config): a leader lost in
	// memory is replaced sooner than the LAN defaults allow.
	RaftTimeout time.Duration
	// RaftLog receives the control plane's Raft log; nil is stderr.
	RaftLog io.Writer
}

// Clock is the time that decides whether a node's lease holds and whether
// the leader's failure detector thinks a node silent: what
// FailureTimeout is measured on. Timers (heartbeat and detector ticks,
// request timeouts) and everything else stay on the system clock, so a
// clock that stands still keeps every lease valid and marks no node failed
// until it is moved on.
type Clock interface {
	Now() time.Time
}

// clock is c's failure clock: InMemory's, or nil for the system clock,
// which monoNow reads as time.Since (the monotonic clock alone: a
// production node checks its lease several times per command, and
// time.Now reads the wall clock too).
func (c Config) clock() Clock {
	if c.InMemory != nil && c.InMemory.Clock != nil {
		return c.InMemory.Clock
	}
	return nil
}

// raftLogOutput is where Raft logs: stderr, or InMemory.RaftLog.
func (c Config) raftLogOutput() io.Writer {
	if c.InMemory != nil && c.InMemory.RaftLog != nil {
		return c.InMemory.RaftLog
	}
	return os.Stderr
}

// validateInMemory checks what an in-memory node needs instead of a data
// directory and listeners.
func (c Config) validateInMemory() error {
	m := c.InMemory
	switch {
	case m.Network == nil:
		return errors.New("server: an in-memory node needs InMemory.Network")
	case m.ID != "" && !m.ID.Valid():
		return errors.New("server: InMemory.ID is not a node id")
	case len(m.Secret) < transport.MinSecretLen:
		return errors.New("server: InMemory.Secret is shorter than transport.MinSecretLen")
	}
	return nil
}

// listenPeerPort is the listener of the peer port: TCP, or the in-memory
// network's.
func (n *Node) listenPeerPort() (net.Listener, error) {
	if m := n.cfg.InMemory; m != nil {
		return m.Network.Listen(n.cfg.peerAddr())
	}
	return net.Listen("tcp", net.JoinHostPort(n.cfg.Bind, strconv.Itoa(n.cfg.PeerPort)))
}

// Do runs one command as a RESP2 client connection of its own would and
// returns its reply: how in-process tests drive a node, which has no
// client port in memory. It works on any node.
func (n *Node) Do(ctx context.Context, args ...string) resp.Reply {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	cs := &connState{id: nextConnID.Add(1), proto: 2, authed: !n.authRequired(), addr: "inmem", created: time.Now()}
	return n.execute(ctx, cs, b)
}

// Map is the node's current cluster map (read-only).
func (n *Node) Map() *cluster.Map { return n.ctl.Map() }

// IsLeader says whether the node leads the control plane now.
func (n *Node) IsLeader() bool { return n.ctl.IsLeader() }

// LeaseRenewedAt is the failure clock's reading when the heartbeat that
// last renewed this node's lease was sent; the zero time before the first.
// A harness moving a fake clock on waits for it to pass the clock's
// reading, so that no live node falls silent in the detector's eyes.
func (n *Node) LeaseRenewedAt() time.Time {
	until := n.lease.until.Load()
	if until == 0 {
		return time.Time{}
	}
	return n.started.Add(time.Duration(until - n.leaseLength()))
}

// DirectoryEntries is how many key-directory entries (and tombstones)
// this node keeps for coordinators (directory.go). Coordinators send them
// in the background after a commit, so a test that must know a key's loss
// will be named waits for them before it kills the coordinator.
func (n *Node) DirectoryEntries() int {
	return int(n.pieces.Stats().ByScheme[dirSchemeID].Keys)
}
