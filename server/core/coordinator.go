package core

import (
	"log/slog"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/cluster/control"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/config"
	"github.com/memgest/memgest/server/lostkeys"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
)

// Coordinator is the coordinator core of a node: the records of the keys
// it coordinates and the pieces it holds for others, versions, in-flight
// writes, commit and abort, group commit, moves between schemes, the
// directory, the lease that lets it serve, and the peer client. It reaches
// every scheme through its kind (scheme/kind) and never names one; the
// node (Node) embeds it and adds what composes a server around it:
// listeners, heartbeats, failure detection, repair and the commands.
type Coordinator struct {
	Cfg     config.Config
	Log     *slog.Logger
	NodeID  cluster.NodeID
	Started time.Time // on failureClock: leases count from it
	// failureClock decides leases and failure detection (Config.InMemory's
	// Clock in tests; nil for the system clock).
	failureClock config.Clock

	Ctl      *control.Plane
	Primary  *store.Store // records of the keys this node coordinates
	Pieces   *store.Store // redundancy this node holds for coordinators
	Peers    *transport.Pool
	Inflight *inflight
	groups   commitGroups // redundancy of concurrent writes, sent together
	Workers  *workerPool
	Versions versionClock
	Stats    counters
	Metrics  *nodeMetrics // request-path instruments for /metrics

	// Leases are the connections heartbeats take, apart from the data
	// frames: a heartbeat queued behind a huge value let a lease lapse.
	Leases *transport.Pool

	Lease      lease               // permission to serve, renewed by heartbeats
	Rebuild    workProgress        // the rebuild this node runs, for /status and INFO
	Migration  workProgress        // the migrations this node runs as their source
	Lost       lostkeys.Set        // keys recovery found beyond their scheme's tolerance
	Unfinished UnfinishedDeletions // deletions whose releases failed (purge.go)
	Directory  directorySender
	Router     *peer.Router // who serves each peer message (peer.go)
	bound      boundSchemes // the catalogue's schemes bound to their kinds (schemes.go)
	moves      packedMoves  // keys moving between the primary store and packed schemes (packed.go)
	Health     integrity    // checksum failures found and repaired
	MemUsed    memGauge
	ExpireQ    chan []byte
	Temp       Temperature // a temperature policy's access sketch and moves (temperature.go)

	// Kinds binds the catalogue's schemes to the packages implementing
	// them; the node builds it (Kinds.go), so the core names no kind.
	Kinds kind.Registry
	// PackedHeld says whether a packed scheme may hold objects on this
	// node (nil: none can), see packedInUse.
	PackedHeld func() bool

	// Deletions counts deletions per slot, for WATCH (deletions.go). Last,
	// after every pointer: the collector scans a struct only up to its
	// last pointer, and this is 128 KiB of counters.
	Deletions Deletions
}

// NewCoordinator builds a node's core for cfg; the node sets its id, its
// control plane and its router while it starts.
func NewCoordinator(cfg config.Config, log *slog.Logger, started time.Time, clock config.Clock, pool []transport.Option) *Coordinator {
	return &Coordinator{Cfg: cfg, Log: log, Started: started, failureClock: clock,
		Inflight:  NewInflight(),
		Workers:   newWorkerPool(),
		ExpireQ:   make(chan []byte, expireQueueSize),
		Temp:      Temperature{Promote: make(chan []byte, promoteQueue)},
		Primary:   store.New(store.WithMaxValueSize(int(cfg.MaxValueSize))),
		Pieces:    store.New(store.WithMaxValueSize(int(cfg.MaxValueSize) + 1024)),
		Peers:     transport.NewPool(pool...),
		Leases:    transport.NewPool(pool...),
		Directory: directorySender{wake: make(chan struct{}, 1)},
		Metrics:   NewMetrics(),
	}
}
