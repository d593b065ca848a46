package core

import (
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
	"github.com/prometheus/client_golang/prometheus"
)

// This file holds the instruments the request path updates as it goes:
// latency histograms per command and per scheme, operations and peer bytes
// per scheme, degraded requests, refused connections. The rest of /metrics is read from the
// node's state at scrape time (nodeCollector, http.go). Label values are
// resolved once per command or scheme and cached, so a request pays an
// atomic add or two and no label hashing.

// latencyBuckets span a loopback request (tens of µs) to a slow peer
// timeout (seconds).
var latencyBuckets = prometheus.ExponentialBuckets(25e-6, 2, 17) // 25 µs … 1.6 s

// Degraded request kinds (memgest_degraded_requests_total's label): a
// command refused while its shard recovers, a read that rebuilt a value
// from other nodes' pieces, a command that first decoded lost stripe
// chunks holding its key.
const (
	DegradedRecovering = "recovering"
	degradedRefetched  = "refetched"
	DegradedRestored   = "stripe_restored"
)

// Kinds of refused credentials (memgest_auth_failures_total's label).
const (
	AuthPeer   = "peer"
	AuthClient = "client"
	AuthHTTP   = "http"
)

// AuthFailed counts one refusal of the given kind.
func (nm *nodeMetrics) AuthFailed(kind string) { nm.authFailures.WithLabelValues(kind).Inc() }

// Outcomes of a key command whose lease lapsed while it ran
// (memgest_lease_lapsed_commands_total's label).
const (
	lapsedRenewed      = "renewed"
	lapsedReadRefused  = "read_refused"
	lapsedWriteUnknown = "write_unknown"
)

// Scheme operation kinds (memgest_scheme_operations_total's op label).
const (
	opRead  = "read"
	opWrite = "write"
)

// nodeMetrics are a node's request-path instruments. Its zero value is not
// usable: see newNodeMetrics.
type nodeMetrics struct {
	commandLatency *prometheus.HistogramVec // command
	writeLatency   *prometheus.HistogramVec // scheme: redundancy sent and committed
	schemeOps      *prometheus.CounterVec   // scheme, op
	peerBytes      *prometheus.CounterVec   // scheme: redundancy payload sent
	writtenBytes   *prometheus.CounterVec   // scheme: key and value bytes of committed writes
	degraded       *prometheus.CounterVec   // kind
	degradedKinds  map[string]prometheus.Counter
	authFailures   *prometheus.CounterVec // kind: peer, client, http
	Heartbeat      prometheus.Histogram   // send to renewal of an acknowledged heartbeat
	LeaseLapses    prometheus.Counter     // leases that ran out while the node was a member
	lapsed         *prometheus.CounterVec // outcome: commands whose lease lapsed while they ran
	lapsedKinds    map[string]prometheus.Counter
	RejectedConns  prometheus.Counter // client connections refused at maxclients

	byCommand sync.Map // a command's identity (observeCommand) → prometheus.Observer
	byScheme  sync.Map // uint16 scheme id → *schemeInstruments
}

// schemeInstruments are one scheme's label values, resolved once.
type schemeInstruments struct {
	write       prometheus.Observer
	reads       prometheus.Counter
	writes      prometheus.Counter
	redundancyB prometheus.Counter
	writtenB    prometheus.Counter
}

func NewMetrics() *nodeMetrics {
	nm := &nodeMetrics{
		commandLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memgest_command_duration_seconds", Buckets: latencyBuckets,
			Help: "Time from a client command's dispatch to its reply on the node the client is connected to, by command.",
		}, []string{"command"}),
		writeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "memgest_scheme_write_duration_seconds", Buckets: latencyBuckets,
			Help: "Time a coordinator takes to send a write's redundancy and commit it, by scheme.",
		}, []string{"scheme"}),
		schemeOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgest_scheme_operations_total",
			Help: "Reads and writes of keys coordinated here, by scheme and op (read, write).",
		}, []string{"scheme", "op"}),
		peerBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgest_peer_redundancy_bytes_total",
			Help: "Bytes of redundancy (replicas, shards, stripe objects and deltas) this node sent to peers for its writes, by scheme.",
		}, []string{"scheme"}),
		writtenBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgest_scheme_written_bytes_total",
			Help: "Key and value bytes of the writes this node coordinated and committed, by scheme: with memgest_peer_redundancy_bytes_total, the peer bytes each logical byte written costs.",
		}, []string{"scheme"}),
		degraded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgest_degraded_requests_total",
			Help: "Client requests served or refused in degraded mode, by kind (recovering, refetched, stripe_restored).",
		}, []string{"kind"}),
		degradedKinds: map[string]prometheus.Counter{},
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgest_auth_failures_total",
			Help: "Connections and requests refused for want of credentials, by kind: peer (a peer connection without the cluster secret or a certificate of the CA), client (a wrong AUTH), http (a wrong or missing password on /status or /debug/pprof).",
		}, []string{"kind"}),
		Heartbeat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "memgest_heartbeat_duration_seconds", Buckets: latencyBuckets,
			Help: "Time from sending a heartbeat to the lease it renewed, for acknowledged heartbeats.",
		}),
		LeaseLapses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memgest_lease_lapses_total",
			Help: "Times this node's lease ran out before a heartbeat renewed it, the node not having been marked failed.",
		}),
		lapsed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "memgest_lease_lapsed_commands_total",
			Help: "Key commands coordinated here whose lease had lapsed when they ended, by outcome: " +
				"renewed (answered once a heartbeat renewed it, no fence between), read_refused (a read " +
				"answered TRYAGAIN), write_unknown (a write answered that it may or may not have taken effect).",
		}, []string{"outcome"}),
		lapsedKinds: map[string]prometheus.Counter{},
		RejectedConns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "memgest_rejected_connections_total",
			Help: "Client connections refused because the node served maxclients already (INFO's rejected_connections).",
		}),
	}
	for _, kind := range []string{AuthPeer, AuthClient, AuthHTTP} {
		nm.authFailures.WithLabelValues(kind) // present at zero from the start
	}
	for _, kind := range []string{DegradedRecovering, degradedRefetched, DegradedRestored} {
		nm.degradedKinds[kind] = nm.degraded.WithLabelValues(kind) // present at zero from the start
	}
	for _, o := range []string{lapsedRenewed, lapsedReadRefused, lapsedWriteUnknown} {
		nm.lapsedKinds[o] = nm.lapsed.WithLabelValues(o)
	}
	return nm
}

// Register adds the instruments to reg.
func (nm *nodeMetrics) Register(reg *prometheus.Registry) {
	reg.MustRegister(nm.commandLatency, nm.writeLatency, nm.schemeOps, nm.peerBytes, nm.writtenBytes, nm.degraded,
		nm.Heartbeat, nm.LeaseLapses, nm.lapsed, nm.authFailures, nm.RejectedConns)
}

// clockStart anchors monotime.
var clockStart = time.Now()

// Monotime is the monotonic clock in nanoseconds since the process started:
// one clock read, where time.Now reads two (wall and monotonic). The
// command path stamps with it; clock reads were 12% of the CPU of
// pipelined SETs on one node before (docs/benchmarks/analysis.md).
func Monotime() int64 { return int64(time.Since(clockStart)) }

// ObserveCommand records one command's duration under its registry name
// and returns it in nanoseconds; cmd identifies the command (its registry
// entry), so that the histogram is resolved once per command.
func (nm *nodeMetrics) ObserveCommand(cmd any, name string, since int64) int64 {
	return nm.ObserveCommands(cmd, name, since, 1)
}

// ObserveCommands records count commands that ran together (a blind SET
// group) and took the time since since (a monotime), and returns that
// time in nanoseconds.
func (nm *nodeMetrics) ObserveCommands(cmd any, name string, since int64, count int) int64 {
	o, ok := nm.byCommand.Load(cmd)
	if !ok {
		o, _ = nm.byCommand.LoadOrStore(cmd, nm.commandLatency.WithLabelValues(name))
	}
	took := Monotime() - since
	for range count {
		o.(prometheus.Observer).Observe(Seconds(took))
	}
	return took
}

// scheme returns the instruments of scheme entry e.
func (nm *nodeMetrics) scheme(e cluster.SchemeEntry) *schemeInstruments {
	if si, ok := nm.byScheme.Load(e.ID); ok {
		return si.(*schemeInstruments)
	}
	name := e.Name()
	si := &schemeInstruments{
		write:       nm.writeLatency.WithLabelValues(name),
		reads:       nm.schemeOps.WithLabelValues(name, opRead),
		writes:      nm.schemeOps.WithLabelValues(name, opWrite),
		redundancyB: nm.peerBytes.WithLabelValues(name),
		writtenB:    nm.writtenBytes.WithLabelValues(name),
	}
	v, _ := nm.byScheme.LoadOrStore(e.ID, si)
	return v.(*schemeInstruments)
}

// wrote records a committed write of scheme e that began at since (a
// monotime) and wrote logical bytes of key and value.
func (nm *nodeMetrics) wrote(e cluster.SchemeEntry, since int64, logical int) {
	si := nm.scheme(e)
	si.writes.Inc()
	if logical > 0 {
		si.writtenB.Add(float64(logical))
	}
	si.write.Observe(Seconds(Monotime() - since))
}

func Seconds(ns int64) float64 { return float64(ns) / 1e9 }

// read records a read of a key of scheme e.
func (nm *nodeMetrics) read(e cluster.SchemeEntry) { nm.scheme(e).reads.Inc() }

// SentRedundancy records b bytes of scheme e's redundancy sent to peers.
func (nm *nodeMetrics) SentRedundancy(e cluster.SchemeEntry, b int) {
	if b > 0 {
		nm.scheme(e).redundancyB.Add(float64(b))
	}
}

// DegradedRequest counts one request of the given kind.
func (nm *nodeMetrics) DegradedRequest(kind string) { nm.degradedKinds[kind].Inc() }

// lapsedCommand counts one command whose lease lapsed, by outcome.
func (nm *nodeMetrics) lapsedCommand(outcome string) { nm.lapsedKinds[outcome].Inc() }

// piecesBytes is what sending pieces puts in PutPieces payloads.
func piecesBytes(pieces []kind.Piece) int {
	total := 0
	for _, p := range pieces {
		total += peer.Piece(p).EncodedLen()
	}
	return total
}
