package repair

import (
	"context"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/lostkeys"
)

// This file keeps the node's loss reports in the cluster map (issue 43
// §2, cluster/losses.go), so that they outlive the node: a recovery
// proposes what it found lost with the shard's ShardRecovered, a loss
// found later (a read, a restore, the rebuild) is proposed by
// publishLosses at the next tick, and a node seeds its lost-key set from
// the map's reports of the slots it coordinates (seedLosses) before it
// serves a shard it takes over, and on every new map.

// lossesOf is the map's form of reports, within the map's limits so that
// a proposal carrying them (a recovery's ShardRecovered above all) is
// never refused: a long cause is cut, and a report of more tags than a
// map report holds becomes its slot range (coarser, never absent).
func lossesOf(reports []lostkeys.Report) []cluster.Loss {
	out := make([]cluster.Loss, 0, len(reports))
	for _, r := range reports {
		l := cluster.Loss{First: r.First, Last: r.Last, Scheme: clip(r.Key.Scheme), Lost: r.Key.Lost,
			Total: r.Key.Total, Cause: clip(r.Key.Cause), Tags: r.Tags}
		if len(l.Tags) > cluster.MaxLossTags {
			l.Tags, l.Cause = nil, clip(l.Cause+" (too many keys to name)")
		}
		out = append(out, l)
	}
	return out
}

// clip cuts s to what a map report keeps.
func clip(s string) string {
	if len(s) <= cluster.MaxLossText {
		return s
	}
	return s[:cluster.MaxLossText-3] + "..."
}

// reportOf is the lost-key set's form of a map's report.
func reportOf(l cluster.Loss) lostkeys.Report {
	return lostkeys.Report{First: l.First, Last: l.Last, Tags: l.Tags,
		Key: kind.LostKey{Scheme: l.Scheme, Lost: l.Lost, Total: l.Total, Cause: l.Cause}}
}

// seedLosses adds to the node's lost-key set the map's reports of the
// slots of sh, and the keys deleted since.
func (n *Repairer) seedLosses(m *cluster.Map, sh cluster.Shard) {
	for _, l := range m.LossesOf(sh.First, sh.Last) {
		n.Lost.Seed([]lostkeys.Report{reportOf(l)}, l.Cleared)
	}
}

// seedCoordinated seeds the reports of every shard this node coordinates,
// once per map epoch.
func (n *Repairer) seedCoordinated(m *cluster.Map) {
	if len(m.Losses) == 0 || n.seededAt.Swap(m.Epoch) == m.Epoch {
		return
	}
	for _, sh := range m.Shards {
		if c, ok := m.CoordinatorOf(&sh); ok && c.ID == n.NodeID && !sh.Recovering {
			n.seedLosses(m, sh)
		}
	}
}

// shardLosses are the node's reports of sh's slots, for its
// ShardRecovered.
func (n *Repairer) shardLosses(sh cluster.Shard) []cluster.Loss {
	if n.Lost.Count() == 0 {
		return nil
	}
	return lossesOf(n.Lost.Reports(sh.First, sh.Last))
}

// publishLosses proposes the reports of the shards this node serves that
// the map lacks: losses found after their shard's recovery.
func (n *Repairer) publishLosses(ctx context.Context, m *cluster.Map) {
	if n.Lost.Count() == 0 || m.State != cluster.OK {
		return
	}
	var missing []cluster.Loss
	for _, sh := range m.Shards {
		if c, ok := m.CoordinatorOf(&sh); !ok || c.ID != n.NodeID || sh.Recovering {
			continue
		}
		for _, l := range n.shardLosses(sh) {
			if !covered(m.LossesOf(l.First, l.Last), l) {
				missing = append(missing, l)
			}
		}
	}
	if len(missing) == 0 {
		return
	}
	if _, err := n.Propose(ctx, cluster.ReportLoss{Losses: missing}); err != nil {
		n.Log.Warn("proposing loss reports to the map failed; retrying", "reports", len(missing), "err", err)
	}
}

// covered says whether the map's reports have every key l reports.
func covered(in []cluster.Loss, l cluster.Loss) bool {
	return slices.ContainsFunc(in, func(o cluster.Loss) bool {
		if o.First != l.First || o.Last != l.Last || o.Scheme != l.Scheme || o.Cause != l.Cause || (len(o.Tags) == 0) != (len(l.Tags) == 0) {
			return false
		}
		for _, t := range l.Tags {
			if _, found := slices.BinarySearch(o.Tags, t); !found {
				return false
			}
		}
		return true
	})
}
