package commands

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

// NodeStats is one node's share of the cluster's keys and bytes, sent in
// reply to peer.MsgStats.
type NodeStats struct {
	Node    cluster.NodeID          `json:"node"`
	Keys    int64                   `json:"keys"`
	Schemes map[uint16]*SchemeUsage `json:"schemes"`
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
	// Rebuild is the node's rebuild progress; Migration the progress of
	// the migrations it runs as their source.
	Rebuild   core.ProgressReport `json:"rebuild"`
	Migration core.ProgressReport `json:"migration"`
	// Commands counts the client commands the node has processed.
	Commands int64 `json:"commands"`
	// PolicyToCold, PolicyToHot and PolicyBytesSaved are the temperature
	// policy's moves committed on the node and the memory they saved.
	PolicyToCold     int64 `json:"policy_to_cold,omitempty"`
	PolicyToHot      int64 `json:"policy_to_hot,omitempty"`
	PolicyBytesSaved int64 `json:"policy_bytes_saved,omitempty"`
	// StripeLists are the stripe lists (shard ids) the node holds data
	// chunks of: a drained node leaves once no retired shard's list it
	// is placed in has any (server/rebalance.go).
	StripeLists []uint16 `json:"stripe_lists,omitempty"`
}

// lostListMax bounds the lost keys a node reports in its statistics.
const lostListMax = 100

// SchemeUsage is what one scheme's keys occupy on one node (or summed).
type SchemeUsage struct {
	Keys    int64 `json:"keys"`    // keys coordinated
	Logical int64 `json:"logical"` // key + value bytes as the client sees them
	Stored  int64 `json:"stored"`  // bytes kept: primary records and pieces
	Pieces  int64 `json:"pieces"`  // redundancy pieces held (replicas, shards)
	// A stripe scheme's parts of Stored (decision 0003), and its objects'
	// encoded bytes and garbage, for SCHEME.INFO.
	Stripe *stripe.Usage `json:"stripe,omitempty"`
}

func (u *SchemeUsage) add(o *SchemeUsage) {
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

// RebuildReport is the node's rebuild progress, the stripe engine's
// re-protected chunks included.
func (n *Server) RebuildReport() core.ProgressReport {
	r := n.Rebuild.Report()
	r.BytesDone += n.stripes.Stats().RebuiltBytes.Load()
	return r
}

// LocalStats reads this node's stores' per-scheme counters.
func (n *Server) LocalStats() NodeStats {
	p, q := n.Primary.Stats(), n.Pieces.Stats()
	st := NodeStats{Node: n.NodeID, Keys: int64(p.Keys), Schemes: map[uint16]*SchemeUsage{},
		PrimaryBytes: p.MemoryBytes(), PieceBytes: q.MemoryBytes(), OverheadPerKey: p.IndexHeaderPerKey(),
		Serving: n.Serving(), Commands: n.Stats.Commands.Load()}
	st.Lost, st.LostCount = n.Lost.List(lostListMax)
	st.Rebuild, st.Migration = n.RebuildReport(), n.Migration.Report()
	st.PolicyToCold, st.PolicyToHot, st.PolicyBytesSaved = n.Temp.ToCold.Load(), n.Temp.ToHot.Load(), n.Temp.BytesSaved.Load()
	st.StripeLists = n.stripes.Lists()
	m := n.Ctl.Map()
	t := n.Schemes(m)
	usage := func(id uint16) *SchemeUsage {
		if st.Schemes[id] == nil {
			st.Schemes[id] = &SchemeUsage{}
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

func (n *Server) OnStats([]byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.Cfg.PeerTimeout*4/5)
	defer cancel()
	if err := n.stripes.RestoreAll(ctx); err != nil { // the key counts must include them
		return nil, err
	}
	return json.Marshal(n.LocalStats())
}

// ClusterStats gathers nodeStats from every live node in the map (failed
// nodes hold nothing that counts). It returns what the nodes that answered
// within the failure timeout reported, and an error naming the others.
func (n *Server) ClusterStats(ctx context.Context) ([]NodeStats, error) {
	m := n.Ctl.Map()
	out := make([]NodeStats, len(m.Nodes))
	errs := make([]error, len(m.Nodes))
	ctx, cancel := context.WithTimeout(ctx, min(n.Cfg.PeerTimeout, n.Cfg.FailureTimeout))
	defer cancel()
	var wg sync.WaitGroup
	for i, node := range m.Nodes {
		switch {
		case node.Gone():
			errs[i] = errSkipped
		case node.ID == n.NodeID:
			if errs[i] = n.stripes.RestoreAll(ctx); errs[i] == nil {
				out[i] = n.LocalStats()
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
	var answered []NodeStats
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

// SumSchemes adds up per-scheme usage over nodes.
func SumSchemes(all []NodeStats) map[uint16]*SchemeUsage {
	total := map[uint16]*SchemeUsage{}
	for _, st := range all {
		for id, u := range st.Schemes {
			if total[id] == nil {
				total[id] = &SchemeUsage{}
			}
			total[id].add(u)
		}
	}
	return total
}
