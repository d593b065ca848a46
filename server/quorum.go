package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
)

// This file says when the control plane has no quorum (issue 43, item 4):
// two of three voters killed at once left every node answering
// CLUSTERDOWN for good while `memgest status` said "cluster ok". A node
// that knows no Raft leader cannot have its lease renewed, and no map
// change commits, so /status says so (quorum) and /ready answers
// "no quorum" once it has lasted longer than an election should.

// leaderWatch remembers since when this node has known no Raft leader.
// The heartbeat loop looks at every round: every heartbeat interval, and
// every 25 ms while heartbeats renew nothing (retryInterval). Times are
// the failure clock's (Coordinator.MonoNow), as leases are.
type leaderWatch struct {
	mu    sync.Mutex
	none  bool  // no leader at the last look
	since int64 // the first look that found none, while none
}

// look records whether this node knows a leader at now.
func (w *leaderWatch) look(known bool, now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case known:
		w.none = false
	case !w.none:
		w.none, w.since = true, now
	}
}

// lostFor is how long this node has known no leader at now; false while
// it knows one.
func (w *leaderWatch) lostFor(now int64) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.none {
		return 0, false
	}
	return time.Duration(max(now-w.since, 0)), true
}

// watchLeader records whether this node knows a Raft leader now: itself,
// or the one Raft names (a follower forgets it when the leader's
// heartbeats stop, and a leader that loses its quorum steps down).
func (n *Node) watchLeader(now int64) {
	_, _, known := n.Ctl.Leader()
	n.leaders.look(known, now)
}

// noQuorum says, for /ready, why this node counts the control plane as
// without a quorum, or "": it has known no leader for longer than the
// failure timeout, which an election outlasts only when too few voters
// are alive to elect one.
func (n *Node) noQuorum() string {
	lost, none := n.leaders.lostFor(n.MonoNow())
	if !none || lost <= n.Cfg.FailureTimeout {
		return ""
	}
	return fmt.Sprintf("no quorum: this node has known no Raft leader for over %s", n.Cfg.FailureTimeout)
}

// quorumStatus fills in st's account of the control plane: whether this
// node knows a leader, for how long it has not, and the map's voters, of
// which answered says which answered this status's request. Voters the
// map still counts may be dead: without a quorum no failure is recorded.
func (n *Node) quorumStatus(st *Status, m *cluster.Map, answered func(cluster.NodeID) bool) {
	_, _, st.Quorum = n.Ctl.Leader()
	if lost, none := n.leaders.lostFor(n.MonoNow()); none && !st.Quorum {
		st.NoLeaderSeconds = lost.Seconds()
	}
	st.Voters, st.VoterTarget = m.VoterCount(), cluster.VoterTarget(m)
	for _, node := range m.Nodes {
		if node.Voter && node.State != cluster.Failed && answered(node.ID) {
			st.VotersUp++
		}
	}
}
