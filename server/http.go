package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/cluster/control"
	"github.com/memgest/memgest/reliability"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/commands"
	"github.com/memgest/memgest/server/core"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// httpServer serves /metrics (Prometheus text format), /ready (a
// readiness probe's answer), /status (the cluster as JSON, for `memgest
// status`) and, with --enable-pprof, Go's /debug/pprof profiles. /metrics
// and /ready are open to whoever reaches the port (counts, and a word on
// this node's readiness; no keys or values); /status and the profiles need
// the cluster's password when it has one (HTTP basic auth, any user name).
// It speaks HTTPS when the node has TLS.
type httpServer struct {
	srv *http.Server
}

func (n *Node) startHTTP() (*httpServer, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(n.Cfg.Bind, strconv.Itoa(n.Cfg.HTTPPort)))
	if err != nil {
		return nil, errors.New("server: http port: " + err.Error())
	}
	if n.trust.httpTLS != nil {
		l = tls.NewListener(l, n.trust.httpTLS)
	}
	h := &httpServer{srv: &http.Server{Handler: n.httpRoutes(), ReadHeaderTimeout: 5 * time.Second}}
	go h.srv.Serve(l)
	return h, nil
}

// httpRoutes is the HTTP port's handler.
func (n *Node) httpRoutes() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(n.collector(), n.policyCollector())
	n.Metrics.Register(reg)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /ready", n.serveReady)
	mux.HandleFunc("/status", n.withPassword(n.serveStatus))
	if n.Cfg.EnablePprof {
		mux.HandleFunc("/debug/pprof/", n.withPassword(pprof.Index))
		mux.HandleFunc("/debug/pprof/profile", n.withPassword(pprof.Profile))
		mux.HandleFunc("/debug/pprof/trace", n.withPassword(pprof.Trace))
	}
	return mux
}

// withPassword serves h only to requests that carry the cluster's
// password as HTTP basic auth, when there is one.
func (n *Node) withPassword(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, known := n.cmds.ClientPassword()
		if p == nil && known {
			h(w, r)
			return
		}
		if _, pass, ok := r.BasicAuth(); ok && p != nil && p.Matches(pass) {
			h(w, r)
			return
		}
		n.Metrics.AuthFailed(core.AuthHTTP)
		w.Header().Set("WWW-Authenticate", `Basic realm="memgest"`)
		http.Error(w, "memgest: this endpoint needs the cluster's password (HTTP basic auth, any user name)", http.StatusUnauthorized)
	}
}

// serveReady answers a readiness probe (Kubernetes'): 200 and "ready"
// when this node serves what the map gives it and holds every piece its
// positions call for, else 503 and why not, in a few words (unready).
// It needs no password, so it says nothing a stranger reaching the port
// should not learn: no id, epoch, address or count.
func (n *Node) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if why := n.unready(); why != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, why+"\n")
		return
	}
	_, _ = io.WriteString(w, "ready\n")
}

// unready says why this node is not ready, or "" when it is: the cluster
// has formed, the node is in the map as up or spare, it has known a Raft
// leader within the failure timeout (noQuorum), its lease holds, and
// it neither recovers the records of a shard it coordinates nor holds a
// position awaiting a rebuild. A PodDisruptionBudget counts on the last:
// the next node is not taken down while this one is being refilled.
func (n *Node) unready() string {
	m := n.Ctl.Map()
	self, known := m.Node(n.NodeID)
	switch {
	case m.State != cluster.OK:
		return "forming: the cluster has not formed yet"
	case !known || self.State == cluster.Left || self.State == cluster.Joining:
		return "not a member: this node is not in the cluster map"
	case self.State == cluster.Failed:
		return "failed: the cluster marked this node failed"
	case n.Lease.Fenced.Load():
		return "fenced: this node waits to be readmitted"
	}
	if why := n.noQuorum(); why != "" {
		return why
	}
	switch {
	case !n.Serving():
		return "lease lapsed: no heartbeat renewed this node's lease"
	}
	return awaitsRepair(m, n.NodeID)
}

// awaitsRepair says what of node id's part in m is not whole yet:
// "recovering" while it coordinates a shard whose records it recovers,
// "rebuilding" while one of its own positions awaits a rebuild (as
// Map.Phase's coordinated-normal: a replacement, a rejoined node, one on
// standby); "" when neither. Map.Phase itself would not do: it tells only
// the worst of a node's roles (a spare that took a failed coordinator's
// places shows degraded while its own positions are rebuilt), and counts
// retired shards, whose rebuild lists nothing clears. A stand-in being
// filled for a failed node's position stays ready: after a failure with
// no spare, most survivors stand in somewhere, and they would all leave
// the clients' Service at once.
func awaitsRepair(m *cluster.Map, id cluster.NodeID) string {
	rebuilding := false
	for i := range m.Shards {
		sh := &m.Shards[i]
		if sh.Retired {
			continue
		}
		if c, ok := m.CoordinatorOf(sh); ok && c.ID == id && sh.Recovering {
			return "recovering: this node is recovering the records of a shard it took over"
		}
		if len(sh.Rebuild) == 0 {
			continue
		}
		for _, p := range sh.Rebuild {
			rebuilding = rebuilding || p < len(sh.Placement) && sh.Placement[p] == id
		}
		rebuilding = rebuilding || slices.Contains(sh.Standby, id)
	}
	if rebuilding {
		return "rebuilding: positions this node holds await a rebuild"
	}
	return ""
}

func (h *httpServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return h.srv.Shutdown(ctx)
}

// Status is the cluster as one node sees it: what `memgest status` prints.
// Serving reports whether every up node answered and holds a fresh lease.
func (st Status) Serving() bool {
	for _, n := range st.Nodes {
		if n.State == "up" && !n.Serving {
			return false
		}
	}
	return len(st.Nodes) > 0
}

type Status struct {
	Node   string `json:"node"`
	Epoch  uint64 `json:"epoch"`
	State  string `json:"state"`
	Leader string `json:"leader"`
	// Quorum says whether the answering node knows a Raft leader: one that
	// a quorum of voters elected and still follows (a leader that loses
	// its quorum steps down within Raft's leader lease). Without one no
	// map change commits and no lease is renewed: once leases lapse, every
	// key command answers CLUSTERDOWN. NoLeaderSeconds is how long the
	// answering node has known none.
	Quorum          bool    `json:"quorum"`
	NoLeaderSeconds float64 `json:"no_leader_seconds,omitempty"`
	// Voters counts the nodes the map flags as Raft voters, VotersUp those
	// of them not marked failed that answered this status's request, and
	// VoterTarget the voters the map calls for (cluster.VoterTarget).
	Voters      int            `json:"voters"`
	VotersUp    int            `json:"voters_up"`
	VoterTarget int            `json:"voter_target"`
	Nodes       []StatusNode   `json:"nodes"`
	Schemes     []StatusScheme `json:"schemes"`
	// Lost lists keys lost beyond their scheme's tolerance (up to 100 per
	// node); LostCount counts them all.
	Lost      []kind.LostKey `json:"lost,omitempty"`
	LostCount int            `json:"lost_count,omitempty"`
	// Rebuild sums the nodes' rebuild progress; ShardsRebuilding counts
	// the shards with lost pieces still to re-create.
	Rebuild          core.ProgressReport `json:"rebuild"`
	ShardsRebuilding int                 `json:"shards_rebuilding"`
	// Migration sums the progress of the migrations the nodes run as
	// sources; ShardsImporting counts the shards still importing slots;
	// Rebalance describes a running rebalance ("" when none runs).
	Migration       core.ProgressReport `json:"migration"`
	ShardsImporting int                 `json:"shards_importing"`
	Rebalance       string              `json:"rebalance,omitempty"`
}

// StatusNode is one node's line of the status.
type StatusNode struct {
	ID         string `json:"id"`
	ClientAddr string `json:"client_addr"`
	Zone       string `json:"zone"`           // failure domain (decision 0021); "" when unset
	Host       string `json:"host,omitempty"` // machine, when given
	State      string `json:"state"`
	Phase      string `json:"phase"` // MemEC §5.2: cluster.Map.Phase
	Voter      bool   `json:"voter"`
	Raft       string `json:"raft,omitempty"` // in the answering node's Raft configuration: voter, nonvoter, or "" (not a member)
	Slots      int    `json:"slots"`
	Keys       int64  `json:"keys"`
	Bytes      int64  `json:"bytes"`
	// Serving: the node answered and holds a fresh lease to serve its keys.
	Serving bool `json:"serving"`
	// Commands counts the client commands the node has processed since it
	// started (memgest status --watch shows its rate).
	Commands int64 `json:"commands"`
	// RebuildPending is the bytes the node's rebuild still has to send,
	// by redundancy left: [i] for pieces of keys that survive i more
	// failures until they are rebuilt.
	RebuildPending []int64 `json:"rebuild_pending_bytes,omitempty"`
	Error          string  `json:"error,omitempty"`
}

// StatusScheme is one scheme's line of the status.
type StatusScheme struct {
	Name      string `json:"name"`
	Spec      string `json:"spec"`
	Default   bool   `json:"default"`
	Tolerance int    `json:"tolerance"`
	// SurvivesDomainLoss: every key survives losing a whole failure
	// domain (zone, else host, else node) at once (decision 0021).
	SurvivesDomainLoss bool    `json:"survives_domain_loss"`
	Keys               int64   `json:"keys"`
	Logical            int64   `json:"logical_bytes"`
	Stored             int64   `json:"stored_bytes"`
	Overhead           float64 `json:"overhead"`
}

func (n *Node) serveStatus(w http.ResponseWriter, r *http.Request) {
	st := n.status(r.Context())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

func (n *Node) status(ctx context.Context) Status {
	m := n.Ctl.Map()
	_, leader, _ := n.Ctl.Leader()
	st := Status{Node: string(n.NodeID), Epoch: m.Epoch, State: m.State.String(), Leader: leader, ShardsRebuilding: m.RebuildingShards()}
	stats, err := n.cmds.ClusterStats(ctx)
	byNode := map[string]commands.NodeStats{}
	for _, s := range stats {
		byNode[string(s.Node)] = s
		st.Lost = append(st.Lost, s.Lost...)
		st.LostCount += s.LostCount
		st.Rebuild = st.Rebuild.Add(s.Rebuild)
		st.Migration = st.Migration.Add(s.Migration)
	}
	st.Rebuild.PendingBytes = core.PendingLevels(m, st.Rebuild.PendingBytes)
	n.quorumStatus(&st, m, func(id cluster.NodeID) bool { _, ok := byNode[string(id)]; return ok })
	st.ShardsImporting = len(m.Importing())
	if r := m.Rebalance; r != nil {
		st.Rebalance = fmt.Sprintf("running: %s/s per migration, %d at once", commands.HumanBytes(r.Rate), r.Parallel)
	}
	members, _ := n.Ctl.Members()
	for _, node := range m.Nodes {
		line := StatusNode{ID: string(node.ID), ClientAddr: node.ClientAddr, Zone: node.Zone, Host: node.Host, State: node.State.String(),
			Phase: m.Phase(node.ID), Voter: node.Voter, Raft: raftPlace(members, node.ID)}
		for _, sh := range m.Shards {
			if c, ok := m.CoordinatorOf(&sh); ok && c.ID == node.ID {
				line.Slots += sh.Last - sh.First + 1
			}
		}
		if s, ok := byNode[string(node.ID)]; ok {
			line.Keys, line.Bytes, line.Serving, line.Commands = s.Keys, s.PrimaryBytes+s.PieceBytes, s.Serving, s.Commands
			line.RebuildPending = core.PendingLevels(m, s.Rebuild.PendingBytes)
		} else if err != nil && node.State != cluster.Failed {
			line.Error = "no answer within the failure timeout"
		}
		st.Nodes = append(st.Nodes, line)
	}
	total := commands.SumSchemes(stats)
	def := m.DefaultScheme().ID
	for _, e := range m.Schemes {
		u := total[e.ID]
		if u == nil {
			u = &commands.SchemeUsage{}
		}
		line := StatusScheme{Name: e.Name(), Spec: e.Spec.String(), Default: e.ID == def, Tolerance: e.Spec.Tolerance(), SurvivesDomainLoss: m.SurvivesDomainLoss(e.Spec),
			Keys: u.Keys, Logical: u.Logical, Stored: u.Stored}
		if u.Logical > 0 {
			line.Overhead = float64(u.Stored) / float64(u.Logical)
		}
		st.Schemes = append(st.Schemes, line)
	}
	return st
}

// raftPlace is id's place in the Raft configuration members: "voter",
// "nonvoter", or "" when it is not a member.
func raftPlace(members []control.Member, id cluster.NodeID) string {
	for _, mem := range members {
		switch {
		case mem.ID != id:
		case mem.Voter:
			return "voter"
		default:
			return "nonvoter"
		}
	}
	return ""
}

// nodeCollector exposes the node's counters and per-scheme usage.
type nodeCollector struct {
	n                                      *Node
	commands, forwarded, expired           *prometheus.Desc
	epoch, keys, logical, stored, overhead *prometheus.Desc
	serving, nodes, recovering             *prometheus.Desc
	rebuilding, rebuildKeys, rebuildBytes  *prometheus.Desc
	rebuildPending                         *prometheus.Desc
	corrupt, repaired, scrubbed, swept     *prometheus.Desc
	corruptFound, corruptRepaired          *prometheus.Desc
	corruptUnrepaired, relocated           *prometheus.Desc
	batchData, batchGarbage                *prometheus.Desc
	nines, mttdl                           *prometheus.Desc
}

func (n *Node) collector() prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("memgest_"+name, help, labels, nil)
	}
	return &nodeCollector{n: n,
		commands:     d("commands_total", "Client commands processed by this node."),
		forwarded:    d("forwarded_commands_total", "Client commands forwarded to their coordinator."),
		expired:      d("expired_keys_total", "Keys deleted because their TTL passed."),
		epoch:        d("map_epoch", "Epoch of the cluster map this node has applied."),
		keys:         d("scheme_keys", "Keys this node coordinates, by scheme.", "scheme"),
		logical:      d("scheme_logical_bytes", "Key and value bytes of this node's keys, by scheme.", "scheme"),
		stored:       d("scheme_stored_bytes", "Bytes this node stores (records and pieces), by scheme.", "scheme"),
		overhead:     d("store_overhead_bytes_per_key", "Index and header bytes per record in the primary store."),
		serving:      d("serving", "1 while this node holds a fresh lease to serve its keys, else 0."),
		nodes:        d("nodes", "Nodes of the cluster map, by state.", "state"),
		recovering:   d("shards_recovering", "Shards whose coordinator failed and whose records are being recovered."),
		rebuilding:   d("shards_rebuilding", "Shards with pieces lost with a failed node still to re-create."),
		rebuildKeys:  d("rebuild_keys", "Keys this node has to rebuild and has rebuilt, by state (total, done).", "state"),
		rebuildBytes: d("rebuild_bytes_total", "Bytes of pieces this node has re-created."),
		rebuildPending: d("rebuild_pending_bytes", "Bytes this node's rebuild still has to send, by how many more failures the keys of those pieces survive until it does (redundancy 0: none).",
			"redundancy"),
		corrupt:           d("corrupt_found_total", "Stored copies found failing their CRC32C, by reads and the scrub."),
		repaired:          d("repairs_total", "Keys whose corrupt copies were stored again from redundancy."),
		scrubbed:          d("scrub_bytes_total", "Bytes the scrub has checked."),
		corruptFound:      d("corruption_found_total", "Stored copies found failing their checksums, by where: records (primary records and pieces: none, rep, split), chunks (a packed scheme's data chunks and the copies a decode read), batch (batch objects kept here or read from a holder).", "where"),
		corruptRepaired:   d("corruption_repaired_total", "Corrupt copies stored again from redundancy, by where: records (keys whose pieces or record were rewritten), packed (chunks and batch objects restored from their stripes).", "where"),
		corruptUnrepaired: d("corruption_unrepaired_total", "Corrupt packed chunks or batch objects no copy of their stripe restored: their keys answer -CORRUPT.", "where"),
		swept:             d("swept_pieces_total", "Garbage pieces the sweep dropped (pieces failures left that no committed version needs)."),
		relocated:         d("stripe_relocated_objects_total", "Stripe objects compaction moved out of chunks with garbage or above free stripe numbers."),
		batchData:         d("batch_data_bytes", "Data chunk bytes of the batch stripes this node's coordinator wrote, garbage included, by scheme (decision 0009).", "scheme"),
		batchGarbage:      d("batch_garbage_bytes", "Bytes of those batch stripes no key uses any more, which the GC reclaims, by scheme: over memgest_batch_data_bytes, the garbage ratio.", "scheme"),
		nines:             d("scheme_nines", "Modelled nines of the probability that no key of the scheme is lost in a year on this cluster, by scheme, refreshed each minute (docs/reliability.md).", "scheme"),
		mttdl:             d("scheme_mttdl_years", "Modelled mean time to losing some key of the scheme on this cluster, in years, by scheme.", "scheme"),
	}
}

// collectCorruption sends the memgest_corruption_* counters.
func (c *nodeCollector) collectCorruption(ch chan<- prometheus.Metric) {
	n, st := c.n, c.n.stripes.Stats()
	counter := func(d *prometheus.Desc, v int64, where string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), where)
	}
	counter(c.corruptFound, n.Health.Corrupt.Load(), "records")
	counter(c.corruptFound, st.CorruptChunks.Load(), "chunks")
	counter(c.corruptFound, st.CorruptBatch.Load(), "batch")
	counter(c.corruptRepaired, n.Health.Repaired.Load(), "records")
	counter(c.corruptRepaired, st.Repaired.Load(), "packed")
	counter(c.corruptUnrepaired, st.Unrepaired.Load(), "packed")
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.commands, c.forwarded, c.expired, c.epoch, c.keys, c.logical, c.stored, c.overhead, c.serving, c.nodes, c.recovering, c.rebuilding, c.rebuildKeys, c.rebuildBytes, c.rebuildPending, c.corrupt, c.repaired, c.scrubbed, c.swept, c.corruptFound, c.corruptRepaired, c.corruptUnrepaired, c.relocated, c.batchData, c.batchGarbage, c.nines, c.mttdl} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	ch <- prometheus.MustNewConstMetric(c.commands, prometheus.CounterValue, float64(n.Stats.Commands.Load()))
	ch <- prometheus.MustNewConstMetric(c.forwarded, prometheus.CounterValue, float64(n.Stats.Forwarded.Load()))
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.CounterValue, float64(n.Stats.Expired.Load()))
	m := n.Ctl.Map()
	ch <- prometheus.MustNewConstMetric(c.epoch, prometheus.GaugeValue, float64(m.Epoch))
	ch <- prometheus.MustNewConstMetric(c.serving, prometheus.GaugeValue, gaugeOf(n.Serving()))
	ch <- prometheus.MustNewConstMetric(c.recovering, prometheus.GaugeValue, float64(m.RecoveringShards()))
	ch <- prometheus.MustNewConstMetric(c.rebuilding, prometheus.GaugeValue, float64(m.RebuildingShards()))
	ch <- prometheus.MustNewConstMetric(c.rebuildKeys, prometheus.GaugeValue, float64(n.Rebuild.KeysTotal.Load()), "total")
	ch <- prometheus.MustNewConstMetric(c.rebuildKeys, prometheus.GaugeValue, float64(n.Rebuild.KeysDone.Load()), "done")
	ch <- prometheus.MustNewConstMetric(c.rebuildBytes, prometheus.CounterValue, float64(n.cmds.RebuildReport().BytesDone))
	for level, b := range core.PendingLevels(m, n.Rebuild.Pending()) {
		ch <- prometheus.MustNewConstMetric(c.rebuildPending, prometheus.GaugeValue, float64(b), strconv.Itoa(level))
	}
	ch <- prometheus.MustNewConstMetric(c.corrupt, prometheus.CounterValue, float64(n.Health.Corrupt.Load()))
	ch <- prometheus.MustNewConstMetric(c.repaired, prometheus.CounterValue, float64(n.Health.Repaired.Load()))
	ch <- prometheus.MustNewConstMetric(c.scrubbed, prometheus.CounterValue, float64(n.Health.Scrubbed.Load()))
	c.collectCorruption(ch)
	ch <- prometheus.MustNewConstMetric(c.swept, prometheus.CounterValue, float64(n.Health.Swept.Load()))
	ch <- prometheus.MustNewConstMetric(c.relocated, prometheus.CounterValue, float64(n.Stats.Relocated.Load()))
	for state, count := range nodeStates(m) {
		ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(count), state)
	}
	st := n.cmds.LocalStats()
	ch <- prometheus.MustNewConstMetric(c.overhead, prometheus.GaugeValue, st.OverheadPerKey)
	for _, e := range m.Schemes {
		u := st.Schemes[e.ID]
		if u == nil {
			u = &commands.SchemeUsage{}
		}
		ch <- prometheus.MustNewConstMetric(c.keys, prometheus.GaugeValue, float64(u.Keys), e.Name())
		ch <- prometheus.MustNewConstMetric(c.logical, prometheus.GaugeValue, float64(u.Logical), e.Name())
		ch <- prometheus.MustNewConstMetric(c.stored, prometheus.GaugeValue, float64(u.Stored), e.Name())
		if e.Spec.Mode != scheme.InPlace {
			var data, garbage int64
			if u.Stripe != nil {
				data, garbage = u.Stripe.BatchData, u.Stripe.BatchGarbage
			}
			ch <- prometheus.MustNewConstMetric(c.batchData, prometheus.GaugeValue, float64(data), e.Name())
			ch <- prometheus.MustNewConstMetric(c.batchGarbage, prometheus.GaugeValue, float64(garbage), e.Name())
		}
	}
	for name, r := range n.cmds.SchemeReliability() {
		ch <- prometheus.MustNewConstMetric(c.nines, prometheus.GaugeValue, r.Nines, name)
		ch <- prometheus.MustNewConstMetric(c.mttdl, prometheus.GaugeValue, r.MTTDLHours/reliability.HoursPerYear, name)
	}
}

// gaugeOf is a flag as a gauge's value, 1 or 0.
func gaugeOf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
