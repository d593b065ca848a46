package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
)

// nodeStats is one node's share of the cluster's keys and bytes, sent in
// reply to peer.MsgStats.
type nodeStats struct {
	Node    cluster.NodeID          `json:"node"`
	Keys    int64                   `json:"keys"`
	Schemes map[uint16]*schemeUsage `json:"schemes"`
	// Bytes reserved by the two stores, overhead included.
	PrimaryBytes int64 `json:"primary_bytes"`
	PieceBytes   int64 `json:"piece_bytes"`
	// OverheadPerKey is index+header bytes per primary record.
	OverheadPerKey float64 `json:"overhead_per_key"`
	// Serving says the node holds a fresh lease (failure.go).
	Serving bool `json:"serving"`
	// Lost lists (up to lostListMax of) the LostCount keys this node
	// coordinates that are lost beyond their scheme's tolerance.
	Lost      []kind.LostKey `json:"lost,omitempty"`
	LostCount int            `json:"lost_count,omitempty"`
	// Rebuild is the node's rebuild progress.
	Rebuild core.RebuildReport `json:"rebuild"`
	// Commands counts the client commands the node has processed.
	Commands int64 `json:"commands"`
}

// lostListMax bounds the lost keys a node reports in its statistics.
const lostListMax = 100

// schemeUsage is what one scheme's keys occupy on one node (or summed).
type schemeUsage struct {
	Keys    int64 `json:"keys"`    // keys coordinated
	Logical int64 `json:"logical"` // key + value bytes as the client sees them
	Stored  int64 `json:"stored"`  // bytes kept: primary records and pieces
	Pieces  int64 `json:"pieces"`  // redundancy pieces held (replicas, shards)
	// A stripe scheme's parts of Stored (decision 0003), and its objects'
	// encoded bytes and garbage, for SCHEME.INFO.
	Stripe *stripe.Usage `json:"stripe,omitempty"`
}

func (u *schemeUsage) add(o *schemeUsage) {
	u.Keys += o.Keys
	u.Logical += o.Logical
	u.Stored += o.Stored
	u.Pieces += o.Pieces
	if o.Stripe != nil {
		if u.Stripe == nil {
			u.Stripe = &stripe.Usage{}
		}
		u.Stripe.Add(o.Stripe)
	}
}

// localStats reads this node's stores' per-scheme counters.
func (n *Server) localStats() nodeStats {
	p, q := n.Primary.Stats(), n.Pieces.Stats()
	st := nodeStats{Node: n.NodeID, Keys: int64(p.Keys), Schemes: map[uint16]*schemeUsage{},
		PrimaryBytes: p.MemoryBytes(), PieceBytes: q.MemoryBytes(), OverheadPerKey: p.IndexHeaderPerKey(),
		Serving: n.Serving(), Commands: n.Stats.Commands.Load()}
	st.Lost, st.LostCount = n.Lost.List(lostListMax)
	st.Rebuild = n.Rebuild.Report()
	m := n.Ctl.Map()
	t := n.Schemes(m)
	usage := func(id uint16) *schemeUsage {
		if st.Schemes[id] == nil {
			st.Schemes[id] = &schemeUsage{}
		}
		return st.Schemes[id]
	}
	for id, s := range p.ByScheme {
		u := usage(id)
		u.Keys = int64(s.Keys)
		u.Logical = int64(s.KeyBytes+s.ValueBytes) + n.Stats.DetachedBytes(id).Load()
		if sch, ok := t.Lookup(id); !ok || sch.Traits().ReadsLocally {
			u.Stored += int64(s.KeyBytes + s.ValueBytes) // a copy, not metadata only
		}
	}
	for id, s := range q.ByScheme {
		if id == core.DirSchemeID {
			continue // the key directory is the node's overhead, in PieceBytes
		}
		usage(id).Stored += int64(s.KeyBytes + s.ValueBytes)
		usage(id).Pieces += int64(s.Keys)
	}
	for _, su := range n.stripes.Usage() {
		u := usage(su.ID)
		u.Stripe = &su.Usage
		u.Keys += su.Keys
		u.Logical += su.Logical
		u.Stored += su.Usage.Stored()
		st.Keys += su.Keys
	}
	return st
}

func (n *Server) onStats([]byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.Cfg.PeerTimeout*4/5)
	defer cancel()
	if err := n.stripes.RestoreAll(ctx); err != nil { // the key counts must include them
		return nil, err
	}
	return json.Marshal(n.localStats())
}

// clusterStats gathers nodeStats from every live node in the map (failed
// nodes hold nothing that counts). It returns what the nodes that answered
// within the failure timeout reported, and an error naming the others.
func (n *Server) clusterStats(ctx context.Context) ([]nodeStats, error) {
	m := n.Ctl.Map()
	out := make([]nodeStats, len(m.Nodes))
	errs := make([]error, len(m.Nodes))
	ctx, cancel := context.WithTimeout(ctx, min(n.Cfg.PeerTimeout, n.Cfg.FailureTimeout))
	defer cancel()
	var wg sync.WaitGroup
	for i, node := range m.Nodes {
		switch {
		case node.State == cluster.Failed || node.State == cluster.Left:
			errs[i] = errSkipped
		case node.ID == n.NodeID:
			if errs[i] = n.stripes.RestoreAll(ctx); errs[i] == nil {
				out[i] = n.localStats()
			}
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := n.Call(ctx, node, peer.MsgStats, nil)
				if err == nil {
					err = json.Unmarshal(b, &out[i])
				}
				errs[i] = err
			}()
		}
	}
	wg.Wait()
	var answered []nodeStats
	var failed []error
	for i, err := range errs {
		switch {
		case err == nil:
			answered = append(answered, out[i])
		case err != errSkipped:
			failed = append(failed, err)
		}
	}
	return answered, errors.Join(failed...)
}

// errSkipped marks a node clusterStats did not ask.
var errSkipped = errors.New("server: node skipped")

// sumSchemes adds up per-scheme usage over nodes.
func sumSchemes(all []nodeStats) map[uint16]*schemeUsage {
	total := map[uint16]*schemeUsage{}
	for _, st := range all {
		for id, u := range st.Schemes {
			if total[id] == nil {
				total[id] = &schemeUsage{}
			}
			total[id].add(u)
		}
	}
	return total
}
