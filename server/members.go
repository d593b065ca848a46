package server

import (
	"context"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/cluster/control"
	"github.com/memgest/memgest/server/core"
)

// This file keeps the Raft configuration to the nodes the map counts on
// (issue 23, item 8). A failed node stayed a Raft member for good: the
// leader kept replicating to it and logged a failed heartbeat about four
// times a second. Now the leader takes a failed non-voter out of the
// configuration, and readmit (failure.go) makes it a member again when it
// comes back. A voter is never removed that way: its vote passes to a
// live non-voter (replaceVoter), or, when no node can take it, is dropped
// with the member (Plane.DropVoter).
//
// A node out of the configuration hears from no leader, so Raft cannot
// tell it where to send its heartbeats, and its heartbeats are how it is
// readmitted. It asks the members it knows in turn; one that is not the
// leader answers with the leader's address (NOTLEADER), which the node
// uses until Raft names a leader again (heartbeatTarget).

// pruneMembers starts, on the leader, the Raft changes the map calls for:
// a failed non-voter leaves the configuration, and a failed voter still in
// it hands its vote to a live non-voter or loses it (when the leader that
// marked it did not: it lost the leadership, say). A node with a
// map change under way (being marked, being readmitted) waits for the
// next tick.
func (n *Node) pruneMembers(ctx context.Context, m *cluster.Map) {
	members, err := n.Ctl.Members()
	if err != nil {
		return
	}
	for _, mem := range members {
		if node, ok := m.Node(mem.ID); !ok || node.State != cluster.Failed {
			continue
		}
		if !n.detector.ClaimMarking(mem.ID) {
			continue
		}
		go n.prune(ctx, mem)
	}
}

// prune takes the failed member mem out of the Raft configuration, or
// hands its vote on (or drops it: replaceVoter). A voter whose vote the
// map has passed on already (a leader's hand-over of its own vote that
// stopped short of its removal) only leaves.
func (n *Node) prune(ctx context.Context, mem control.Member) {
	defer n.detector.SetMarking(mem.ID, false)
	ctx, cancel := context.WithTimeout(ctx, n.Cfg.PeerTimeout)
	defer cancel()
	if node, _ := n.Ctl.Map().Node(mem.ID); mem.Voter && !node.Voter {
		n.votes.Lock()
		defer n.votes.Unlock()
		n.dropVoter(ctx, mem.ID)
		return
	}
	if mem.Voter {
		n.replaceVoter(ctx, mem.ID)
		return
	}
	if err := n.Ctl.RemoveMember(ctx, mem.ID); err != nil {
		n.Log.Warn("removing a failed node from Raft", "node", mem.ID, "err", err)
		return
	}
	n.Log.Info("failed node removed from Raft", "node", mem.ID)
}

// heartbeatTarget is where a node that does not lead sends its heartbeat:
// the leader Raft names; else the address a member named as the leader;
// else the next of the members it knows, in turn, to learn it.
func (n *Node) heartbeatTarget(m *cluster.Map) (cluster.Node, bool) {
	if id, addr, ok := n.Ctl.Leader(); ok {
		n.Lease.Hint.Store(nil)
		return cluster.Node{ID: id, PeerAddr: addr}, true
	}
	if hint := n.Lease.Hint.Load(); hint != nil {
		return cluster.Node{PeerAddr: *hint}, true
	}
	peers := n.knownPeers(m)
	if len(peers) == 0 {
		return cluster.Node{}, false
	}
	return cluster.Node{PeerAddr: peers[n.Lease.Probe.Add(1)%uint64(len(peers))]}, true
}

// noteLeaderHint keeps the leader's address a heartbeat's refusal named;
// any other failure forgets it.
func (n *Node) noteLeaderHint(err error) {
	switch hint, ok := core.LeaderHint(err); {
	case ok && hint != n.Cfg.PeerAddr():
		n.Lease.Hint.Store(&hint)
	case err != nil:
		n.Lease.Hint.Store(nil)
	}
}

// knownPeers lists the peer addresses of the other nodes this node knows:
// the map's live ones, the Raft configuration's, and the join address.
func (n *Node) knownPeers(m *cluster.Map) []string {
	var out []string
	for _, node := range m.Nodes {
		if node.ID != n.NodeID && node.State != cluster.Failed {
			out = append(out, node.PeerAddr)
		}
	}
	if members, err := n.Ctl.Members(); err == nil {
		for _, mem := range members {
			if mem.ID != n.NodeID {
				out = append(out, mem.PeerAddr)
			}
		}
	}
	if n.Cfg.Join != "" {
		out = append(out, n.Cfg.Join)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(a string) bool { return a == "" || a == n.Cfg.PeerAddr() })
}
