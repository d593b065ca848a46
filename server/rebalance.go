package server

import (
	"context"
	"fmt"
	"slices"

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

// removeDrained takes a drained node out, once no retired shard's
// stripe list it is placed in holds objects (retiredListsHeld): a voter
// first hands its vote to a live non-voter (handOverVote); then the node
// is marked left, which it sees, and leaves Raft. A drained leader hands
// leadership over first (handOverLeadership).
func (n *Node) removeDrained(ctx context.Context, id cluster.NodeID) error {
	m := n.Ctl.Map()
	node, ok := m.Node(id)
	if !ok {
		return nil
	}
	held, err := n.retiredListsHeld(ctx, m, id)
	if err != nil {
		return fmt.Errorf("asking which stripe lists still hold objects: %w", err)
	}
	if len(held) > 0 {
		n.Log.Info("drained node waits for retired stripe lists to empty", "node", id, "lists", held)
		return nil
	}
	if id == n.NodeID {
		return n.handOverLeadership(ctx, m)
	}
	if node.Voter {
		if err := n.handOverVote(ctx, id); err != nil {
			return err
		}
	}
	if _, err := n.Ctl.Propose(ctx, cluster.RemoveNode{ID: id}); err != nil {
		return err
	}
	return n.Ctl.RemoveMember(ctx, id)
}

// handOverVote passes drained voter id's vote to a live non-voter
// (cluster.VoterHeir; Plane.HandOverVote), chosen under Node.votes as
// every change of the voters is (voters.go). When every node that stays
// votes already, id gives its vote up (Plane.GiveUpVote): the drain an
// operator asked for finishes, with a group as large as the nodes left
// allow (TestNetnsCluster drains one of five voters of five nodes).
func (n *Node) handOverVote(ctx context.Context, id cluster.NodeID) error {
	n.votes.Lock()
	defer n.votes.Unlock()
	m := n.Ctl.Map()
	heir, ok := n.voterHeir(m, id)
	if ok {
		_, err := n.Ctl.HandOverVote(ctx, id, heir)
		return err
	}
	if waiting := m.VoterCandidateCount(id); waiting > 0 {
		return fmt.Errorf("node %s votes and none of the %d nodes that could take its vote was heard from recently", id, waiting)
	}
	n.Log.Info("drained voter gives its vote up: every node that stays votes", "node", id)
	_, err := n.Ctl.GiveUpVote(ctx, id)
	return err
}

// handOverLeadership passes Raft leadership from this node, drained, to
// another live voter, whose rebalance loop then removes this one as any
// other. A leader that gave up its vote would step down with no successor
// chosen: until an election ends, the others would not learn that the
// entries it committed last are committed, and a node that has them
// would make every request stamped with them wait (peer.Router).
func (n *Node) handOverLeadership(ctx context.Context, m *cluster.Map) error {
	for _, node := range m.Nodes {
		if node.Voter && node.ID != n.NodeID && node.State == cluster.Up && !node.Draining &&
			n.detector.Fresh(node.ID, n.Cfg.FailureTimeout/2) {
			n.Log.Info("drained leader hands leadership over", "to", node.ID)
			return n.Ctl.TransferLeadership(ctx, node.ID)
		}
	}
	return fmt.Errorf("drained leader %s: no live voter to hand leadership to", n.NodeID)
}

// retiredListsHeld lists the stripe lists of m's retired shards that
// place id and in which some node still holds data chunks. A retired
// shard's placement is neither rebuilt nor kept when one of its nodes
// leaves, and its lists hold the objects their data nodes appended there
// while it had slots, for keys of any shard (decision 0003); the nodes
// move them out (compactLoop), and id may leave only once they have, or
// the objects would lose a position for good.
func (n *Node) retiredListsHeld(ctx context.Context, m *cluster.Map, id cluster.NodeID) ([]uint16, error) {
	var placed []uint16
	for g, sh := range m.Shards {
		if sh.Retired && slices.Contains(sh.Placement, id) {
			placed = append(placed, uint16(g))
		}
	}
	if len(placed) == 0 {
		return nil, nil
	}
	all, err := n.cmds.ClusterStats(ctx)
	if err != nil {
		return nil, err
	}
	var held []uint16
	for _, st := range all {
		for _, g := range st.StripeLists {
			if slices.Contains(placed, g) && !slices.Contains(held, g) {
				held = append(held, g)
			}
		}
	}
	slices.Sort(held)
	return held, nil
}
