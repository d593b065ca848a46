package control

import (
	"errors"
	"fmt"
	"time"

	"github.com/memgest/memgest/cluster"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/memgest/memgest/keyslot"
)

// Config configures a node's control plane. Start it from DefaultConfig.
type Config struct {
	// Self is this node. ID is also its Raft server id and PeerAddr its Raft
	// address: the address other members dial through their Stream.
	Self cluster.Node

	// DataDir holds the Raft log and stable store (raft.db, bbolt) and the
	// snapshots (snapshots/). Created if missing. Restarting on the same
	// DataDir rejoins with the same map. Unused with InMemory.
	DataDir string

	// InMemory keeps the Raft log, stable store and snapshots in memory
	// (raft.NewInmemStore, raft.NewInmemSnapshotStore) instead of DataDir,
	// for in-process test clusters (internal/simcluster): nothing touches
	// disk, and a Control closed is gone for good.
	InMemory bool

	// Bootstrap makes this node found a new cluster if DataDir holds no Raft
	// state: it becomes the sole voter and proposes Init{Expect, Voters} and
	// AddNode{Self}. Ignored when state exists. Other nodes start without
	// Bootstrap and wait for the leader's AddMember. If a bootstrapping
	// Start fails, delete DataDir before trying again.
	Bootstrap bool

	// Expect is the number of nodes the placement is computed over (the
	// cluster forms when the Expect-th node joins). Read only when
	// bootstrapping; afterwards it lives in the map.
	Expect int

	// Voters is the fewest members that vote in Raft: 1, 3, 5 or 7. Members
	// vote while there are fewer voters than cluster.VoterTarget, which is
	// at least Voters and more when the catalogue's schemes tolerate more
	// failures; later ones are non-voters (they still receive the log and
	// so the map). Read only when bootstrapping; it lives in the map.
	Voters int
	// Password is the clients' password the bootstrap node's Init puts in
	// the map; nil for none. Read only when Bootstrap is set.
	Password *cluster.Password

	// Stream carries Raft's traffic. The caller supplies it so Raft can share
	// the node's peer port: its Accept returns the inbound connections the
	// peer listener identified as Raft, its Dial opens an outbound Raft
	// connection, and its Addr is Self.PeerAddr. Control owns it once
	// Start has validated cfg: Close, or a failing Start, closes it.
	// Required unless Transport is set.
	Stream raft.StreamLayer

	// Transport, when set, is used instead of building a network transport
	// over Stream (tests use raft.NewInmemTransport). Control closes it if it
	// implements raft.WithClose.
	Transport raft.Transport

	// Logger receives Raft's and the control plane's logs. Nil means
	// warnings and errors only, to stderr, so Raft stays quiet.
	Logger hclog.Logger

	// HeartbeatTimeout is how long a follower waits without hearing from the
	// leader before starting an election. The defaults suit loopback and LAN
	// clusters: a leader loss is noticed in well under a second.
	HeartbeatTimeout time.Duration
	// ElectionTimeout bounds a candidate's election; ≥ HeartbeatTimeout.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader stays leader without reaching
	// a quorum; ≤ HeartbeatTimeout. Too short and a leader steps down when a
	// loaded machine delays a new member's first reply for a moment.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is the longest a leader waits before sending an empty
	// append (it bounds commit latency when idle).
	CommitTimeout time.Duration
	// TransportTimeout bounds one Raft network I/O (used with Stream only).
	TransportTimeout time.Duration
	// StartTimeout bounds how long a bootstrapping Start waits to become
	// leader and commit Init and AddNode{Self}.
	StartTimeout time.Duration

	// SnapshotThreshold is how many log entries trigger a snapshot (the map
	// is small; snapshots mainly bound restart time).
	SnapshotThreshold uint64
	// SnapshotInterval is how often Raft checks SnapshotThreshold.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries are kept behind a snapshot, so a
	// briefly lagging member catches up from the log instead of a snapshot.
	TrailingLogs uint64
	// RetainSnapshots is how many snapshot files are kept in DataDir.
	RetainSnapshots int

	// NoSync skips fsync in the Raft log store. Unsafe: a machine crash can
	// lose acknowledged map changes, and with them Raft's safety. For tests
	// and throwaway development clusters on slow disks only.
	NoSync bool
}

// DefaultConfig returns a Config with every tunable set for a loopback or
// LAN cluster of 1 to 7 voters. The caller fills in Self, DataDir,
// Bootstrap, Expect and Stream.
func DefaultConfig() Config {
	return Config{
		Expect:             1,
		Voters:             3,
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		CommitTimeout:      20 * time.Millisecond,
		TransportTimeout:   5 * time.Second,
		StartTimeout:       10 * time.Second,
		SnapshotThreshold:  1024,
		SnapshotInterval:   30 * time.Second,
		TrailingLogs:       1024,
		RetainSnapshots:    2,
	}
}

// Validate reports the first problem with c, as "cluster: config: ...".
func (c Config) Validate() error {
	for _, err := range []error{c.validateSelf(), c.validateCluster(), c.validateTimes()} {
		if err != nil {
			return fmt.Errorf("cluster: config: %w", err)
		}
	}
	return nil
}

func (c Config) validateSelf() error {
	if err := cluster.CheckNode(c.Self); err != nil {
		return errors.New("Self: " + err.Msg)
	}
	if c.DataDir == "" && !c.InMemory {
		return errors.New("DataDir is required (or InMemory)")
	}
	if c.Stream == nil && c.Transport == nil {
		return errors.New("Stream (or Transport) is required")
	}
	return nil
}

func (c Config) validateCluster() error {
	if c.Expect < 1 || c.Expect > keyslot.Count {
		return fmt.Errorf("Expect must be 1..%d, got %d", keyslot.Count, c.Expect)
	}
	if !cluster.ValidVoters(c.Voters) {
		return fmt.Errorf("Voters must be 1, 3, 5 or 7, got %d", c.Voters)
	}
	if c.SnapshotThreshold == 0 || c.RetainSnapshots < 1 {
		return errors.New("SnapshotThreshold and RetainSnapshots must be positive")
	}
	return nil
}

func (c Config) validateTimes() error {
	for _, d := range []time.Duration{c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout, c.CommitTimeout, c.StartTimeout, c.SnapshotInterval} {
		if d < 5*time.Millisecond {
			return errors.New("timeouts and intervals must be at least 5ms")
		}
	}
	if c.Stream != nil && c.Transport == nil && c.TransportTimeout <= 0 {
		return errors.New("TransportTimeout must be positive")
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout || c.ElectionTimeout < c.HeartbeatTimeout {
		return errors.New("want LeaderLeaseTimeout ≤ HeartbeatTimeout ≤ ElectionTimeout")
	}
	return nil
}

// raftConfig translates c for hashicorp/raft.
func (c Config) raftConfig(logger hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.Self.ID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	rc.SnapshotThreshold = c.SnapshotThreshold
	rc.SnapshotInterval = c.SnapshotInterval
	rc.TrailingLogs = c.TrailingLogs
	rc.Logger = logger
	// A member taken out of the configuration while alive (a failed
	// non-voter that comes back, a leader that gave up its own vote) keeps
	// its Raft running, so that AddMember can readmit it; with Raft's
	// default it shut down and stayed out until its process restarted.
	rc.ShutdownOnRemove = false
	return rc
}

func (c Config) logger() hclog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn})
}
