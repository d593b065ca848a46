package repair

import (
	"context"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
)

// Repairer is a node's repair path, from the control plane's decisions to
// pieces restored: recovery of the records of shards this node took over
// (metadata first), the restores of stripe keys recovery deferred, the
// rebuild of lost pieces, filling the values of recovered records, the
// sweep of stray pieces, and scrub. It works through the coordinator core
// it embeds and the node's stripe engine.
type Repairer struct {
	*core.Coordinator
	stripes    *stripe.Engine
	recovering shardClaims   // shards whose records are being recovered
	restoring  shardClaims   // shards whose pending stripe keys are being restored
	rounds     rebuildRounds // the rebuild round running, if any (rebuild_round.go)
	events     eventLog      // the last rebuild steps, with their levels
	// seededAt is the epoch of the last map whose loss reports were
	// seeded (losses.go).
	seededAt atomic.Uint64
}

// New is the repair path of the node whose core is c.
func New(c *core.Coordinator, stripes *stripe.Engine) *Repairer {
	return &Repairer{Coordinator: c, stripes: stripes}
}

// JobLoop starts the shard jobs (recoveries, rebuilds) the map hands this
// node as soon as a new map arrives, and retries failed ones every
// HeartbeatInterval.
func (n *Repairer) JobLoop(ctx context.Context) {
	n.OnMaps(ctx, n.Cfg.HeartbeatInterval, func(m *cluster.Map) {
		n.seedCoordinated(m)
		n.publishLosses(ctx, m)
		n.startRecoveries(ctx)
		n.startStripeRestores(ctx)
		n.startRebuilds(ctx)
	})
}

// startStripeRestores runs the background pass of every shard this node
// coordinates that is served with stripe keys pending, and proposes
// StripesRestored when none is left.
func (n *Repairer) startStripeRestores(ctx context.Context) {
	n.startShardJobs(ctx, "stripe restore", &n.restoring,
		func(_ *cluster.Map, sh cluster.Shard) bool { return sh.StripesPending && !sh.Recovering },
		func(ctx context.Context, _ *cluster.Map, sh cluster.Shard) error {
			faults.Hit(faults.BeforeStripeRestore)
			return n.stripes.RestoreShard(ctx, sh.ID)
		},
		func(sh cluster.Shard) cluster.Command { return cluster.StripesRestored{Shard: sh.ID, By: n.NodeID} })
}
