package server

import (
	"context"
	"fmt"

	"github.com/memgest/memgest/cluster"
)

// rebalanceLoop drives a rebalance from the Raft leader (decision 0016):
// while the map asks for one (Map.Rebalance) or a node drains, it starts
// the next migrations cluster.NextSteps plans, up to the rebalance's
// parallelism, takes drained nodes out of Raft and the map, and ends the
// rebalance once nothing is left to do. The migrations themselves run on
// their sources (commands.ExportLoop); all state is in the map, so a new
// leader carries on where the old one stopped.
func (n *Node) rebalanceLoop(ctx context.Context) {
	n.OnMaps(ctx, n.Cfg.HeartbeatInterval, func(m *cluster.Map) {
		if !n.Ctl.IsLeader() || m.State != cluster.OK {
			return
		}
		if err := n.rebalanceStep(ctx, m); err != nil && ctx.Err() == nil {
			n.Log.Warn("rebalance step", "err", err)
		}
	})
}

// rebalanceStep proposes what m calls for next.
func (n *Node) rebalanceStep(ctx context.Context, m *cluster.Map) error {
	draining := m.DrainingNodes() > 0
	if m.Rebalance == nil && !draining {
		return nil
	}
	if m.RecoveringShards() > 0 {
		return nil // failures first: a recovering source moves nothing
	}
	parallel := 1
	if m.Rebalance != nil {
		parallel = m.Rebalance.Parallel
	}
	running := len(m.Importing())
	steps := cluster.NextSteps(m, max(parallel-running, 0))
	if len(steps) == 0 && running == 0 && m.Rebalance != nil && !draining {
		_, err := n.Ctl.Propose(ctx, cluster.SetRebalance{Off: true})
		return err
	}
	for _, c := range steps {
		var err error
		if r, ok := c.(cluster.RemoveNode); ok {
			err = n.removeDrained(ctx, r.ID)
		} else {
			_, err = n.Ctl.Propose(ctx, c)
		}
		if err != nil {
			return fmt.Errorf("%T: %w", c, err)
		}
	}
	return nil
}

// removeDrained takes a drained node out: a voter first hands its vote to
// a live non-voter (voterCandidate; Plane.ReplaceVoter, which also leaves Raft), a
// non-voter is marked left and then leaves Raft.
func (n *Node) removeDrained(ctx context.Context, id cluster.NodeID) error {
	m := n.Ctl.Map()
	node, ok := m.Node(id)
	if !ok {
		return nil
	}
	if node.Voter {
		heir, ok := n.voterCandidate(m, id)
		if !ok {
			return fmt.Errorf("node %s votes and no live non-voter can take its vote", id)
		}
		if _, err := n.Ctl.ReplaceVoter(ctx, id, heir); err != nil {
			return err
		}
		_, err := n.Ctl.Propose(ctx, cluster.RemoveNode{ID: id})
		return err
	}
	if _, err := n.Ctl.Propose(ctx, cluster.RemoveNode{ID: id}); err != nil {
		return err
	}
	return n.Ctl.RemoveMember(ctx, id)
}
