package commands

import (
	"context"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/reliability"
	"github.com/memgest/memgest/server/core"
)

// This file gives SCHEME.INFO and /metrics each scheme's modelled
// durability on the live cluster (docs/reliability.md): the nodes of its
// placement ring, the bytes they hold, the rebuild rate the cluster
// measured and the configured node MTTF and failure timeout.

// RebuildRateSource says where a model's rebuild rate came from.
const (
	// RateMeasured: bytes rebuilt over the time spent rebuilding.
	RateMeasured = "measured"
	// RateAssumed: no rebuild has run; the configured per-node rate bound
	// times the rebuild share, from every survivor.
	RateAssumed = "assumed"
)

// LiveReliability is a scheme's model on the live cluster and the inputs
// it came from.
type LiveReliability struct {
	reliability.Result
	liveInputs
}

// liveInputs are the model's inputs as the map and the nodes' statistics
// show them.
type liveInputs struct {
	// Cluster is what the model was given: nodes, the configured node
	// MTTF and failure timeout, the rebuild time.
	Cluster reliability.Cluster
	// RebuildRate is the cluster's rebuild rate in bytes per second, and
	// RateSource where it came from; BytesPerNode what a node holds.
	RebuildRate  float64
	RateSource   string
	BytesPerNode float64
}

// unboundedRebuildRate is the bytes per second a node is assumed to
// rebuild at without a --rebuild-rate bound, until a rebuild measures it:
// without it the model's rebuild time was infinite and the nines vanished.
const unboundedRebuildRate = 1 << 30

// liveCluster reads the model's inputs from the map and stats.
func (n *Server) liveCluster(m *cluster.Map, stats []NodeStats) liveInputs {
	nodes := len(m.Shards) // one shard per node of the placement ring
	var stored float64     // records, pieces and stripe chunks alike
	for _, u := range SumSchemes(stats) {
		stored += float64(u.Stored)
	}
	var rebuilt core.ProgressReport
	for _, s := range stats {
		rebuilt = rebuilt.Add(s.Rebuild)
	}
	in := liveInputs{BytesPerNode: stored / float64(max(nodes, 1)), RebuildRate: rebuilt.Rate(), RateSource: RateMeasured}
	if in.RebuildRate <= 0 {
		perNode := float64(n.Cfg.RebuildRate)
		if perNode <= 0 { // --rebuild-rate 0: no bound; a loopback-class link's worth
			perNode = unboundedRebuildRate
		}
		in.RebuildRate = perNode * n.Cfg.RebuildShare * float64(max(nodes-1, 1))
		in.RateSource = RateAssumed
	}
	in.Cluster = reliability.Cluster{
		Nodes:     nodes,
		NodeMTTF:  n.Cfg.NodeMTTF.Hours(),
		Detection: n.Cfg.FailureTimeout.Hours(),
		Rebuild:   max(reliability.RebuildHours(in.BytesPerNode, in.RebuildRate), 1.0/3600), // a rebuild takes a second at least
	}
	return in
}

// model runs the model for entry on in's cluster; false when the cluster
// is too small for it or the model refuses it.
func (in liveInputs) model(e cluster.SchemeEntry) (LiveReliability, bool) {
	scheme := e.Spec.Model()
	scheme.Name = e.Name()
	r, err := reliability.Evaluate(in.Cluster, reliability.Single(scheme), reliability.HoursPerYear)
	if err != nil {
		return LiveReliability{}, false
	}
	return LiveReliability{Result: r, liveInputs: in}, true
}

// reliabilityCache keeps every scheme's model for /metrics, refreshed in
// the background at most once per reliabilityTTL: a scrape must not fan
// out to every node.
type reliabilityCache struct {
	mu         sync.Mutex
	at         time.Time
	refreshing bool
	results    map[string]LiveReliability // by scheme name
}

const reliabilityTTL = time.Minute

// SchemeReliability returns the latest models of every scheme, by name,
// and starts a refresh when they are older than a minute. The first call
// returns none.
func (n *Server) SchemeReliability() map[string]LiveReliability {
	c := &n.nines
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.refreshing && time.Since(c.at) > reliabilityTTL {
		c.refreshing = true
		go n.refreshReliability()
	}
	return c.results
}

func (n *Server) refreshReliability() {
	ctx, cancel := context.WithTimeout(context.Background(), n.Cfg.PeerTimeout)
	defer cancel()
	out := map[string]LiveReliability{}
	m := n.Ctl.Map()
	stats, err := n.ClusterStats(ctx)
	if err == nil {
		in := n.liveCluster(m, stats)
		for _, e := range m.Schemes {
			if r, ok := in.model(e); ok {
				out[e.Name()] = r
			}
		}
	}
	c := &n.nines
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshing = false
	if err == nil {
		c.results, c.at = out, time.Now()
	}
}
