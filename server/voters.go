package server

import (
	"context"

	"github.com/memgest/memgest/cluster"
)

// This file keeps the control plane as large as the data's tolerance
// calls for (issue 43, item 4; decision 0018). cluster.VoterTarget says
// how many voters the map wants and cluster.VoterHeir and
// cluster.VoterPromotions which nodes take the votes; the Raft leader
// makes the changes. A failed voter's vote passes to an heir as soon as
// the map marks it failed (replaceVoter, from detectFailures, and
// pruneMembers at every detector tick), or is dropped when no live node
// can take it, and voterLoop promotes live non-voters while the map has
// fewer voters than its target: after a scheme that tolerates more
// failures is created, or nodes join or come back. Nothing takes a live
// node's vote away to shrink the group.
//
// Every choice is made under Node.votes, on the map as it is then: two
// voters failing at once must not both hand their votes to the one
// non-voter, nor a promotion fill the place an heir took meanwhile.

// voterLoop grows the control plane towards cluster.VoterTarget, on the
// Raft leader, at every map and every heartbeat interval (to retry). It
// runs while the cluster forms too: the second node to join gets no vote
// (two voters would survive no failure, one survives the other's), and
// the loop gives it one when the third joins.
func (n *Node) voterLoop(ctx context.Context) {
	n.OnMaps(ctx, n.Cfg.HeartbeatInterval, func(m *cluster.Map) {
		if !n.Ctl.IsLeader() || m.Expect == 0 {
			return
		}
		n.growVoters(ctx)
	})
}

// growVoters gives one more live non-voter a vote when the map has fewer
// voters than it calls for; the next map (the flag recorded) brings the
// next.
func (n *Node) growVoters(ctx context.Context) {
	n.votes.Lock()
	defer n.votes.Unlock()
	m := n.Ctl.Map()
	next := cluster.VoterPromotions(m, n.heardFrom)
	if len(next) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, n.Cfg.PeerTimeout)
	defer cancel()
	target := cluster.VoterTarget(m)
	if _, err := n.Ctl.PromoteVoter(ctx, next[0], target); err != nil {
		if ctx.Err() == nil {
			n.Log.Warn("giving a node a vote; retrying", "node", next[0].ID, "err", err)
		}
		return
	}
	n.Log.Warn("node given a vote", "node", next[0].ID, "voters", m.VoterCount()+1, "target", target)
}

// replaceVoter gives a failed voter's vote to a live non-voter that the
// detector heard from recently (cluster.VoterHeir), so the control plane
// keeps its size of voters and survives further failures. With no such
// node the vote is dropped (Plane.DropVoter): the live voters then survive
// at least as many failures as before, and the failed node's address is
// free for one that replaces it. A voter whose vote the map no longer
// flags has passed it on already.
func (n *Node) replaceVoter(ctx context.Context, failed cluster.NodeID) {
	n.votes.Lock()
	defer n.votes.Unlock()
	m := n.Ctl.Map()
	if node, ok := m.Node(failed); !ok || !node.Voter {
		return
	}
	heir, ok := n.voterHeir(m, failed)
	if !ok {
		n.dropVoter(ctx, failed)
		return
	}
	if _, err := n.Ctl.ReplaceVoter(ctx, failed, heir); err != nil {
		n.Log.Warn("replacing a failed voter", "failed", failed, "with", heir.ID, "err", err)
		return
	}
	n.Log.Warn("voter replaced", "failed", failed, "with", heir.ID)
}

// dropVoter drops the vote of failed, a failed voter no live node can
// take it from (Plane.DropVoter); a leader that failed itself keeps its
// vote until a node can take it.
func (n *Node) dropVoter(ctx context.Context, failed cluster.NodeID) {
	if failed == n.NodeID {
		n.Log.Warn("no live non-voter to take this failed leader's vote", "failed", failed)
		return
	}
	if _, err := n.Ctl.DropVoter(ctx, failed); err != nil {
		n.Log.Warn("dropping the vote of a failed voter no node can take it from", "failed", failed, "err", err)
		return
	}
	n.Log.Warn("failed voter's vote dropped: no live non-voter to take it", "failed", failed)
}

// voterHeir is the node a failed or drained voter leaving hands its vote
// to: cluster.VoterHeir among the nodes the detector heard from recently.
func (n *Node) voterHeir(m *cluster.Map, leaving cluster.NodeID) (cluster.Node, bool) {
	return cluster.VoterHeir(m, leaving, n.heardFrom)
}

// heardFrom says whether the leader's detector heard from node id within
// half the failure timeout: a node that may take a vote.
func (n *Node) heardFrom(id cluster.NodeID) bool {
	return n.detector.Fresh(id, n.Cfg.FailureTimeout/2)
}
