package config

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/transport"
)

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

// FailureClock is c's failure clock: InMemory's, or nil for the system clock,
// which monoNow reads as time.Since (the monotonic clock alone: a
// production node checks its lease several times per command, and
// time.Now reads the wall clock too).
func (c Config) FailureClock() Clock {
	if c.InMemory != nil && c.InMemory.Clock != nil {
		return c.InMemory.Clock
	}
	return nil
}

// RaftLogOutput is where Raft logs: stderr, or InMemory.RaftLog.
func (c Config) RaftLogOutput() io.Writer {
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
		return errors.New("config: an in-memory node needs InMemory.Network")
	case m.ID != "" && !m.ID.Valid():
		return errors.New("config: InMemory.ID is not a node id")
	case len(m.Secret) < transport.MinSecretLen:
		return errors.New("config: InMemory.Secret is shorter than transport.MinSecretLen")
	}
	return nil
}
