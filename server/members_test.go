package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/transport"
	"github.com/memgest/memgest/wire"
)

// TestHeartbeatFindsALeaderRaftDoesNotName: a node that Raft tells of no
// leader (the leader took it out of the configuration when it failed, so
// it hears from none) sends its heartbeats to the members it knows in
// turn; one that does not lead names the leader (NOTLEADER), and the next
// heartbeat goes there and renews the lease. Before, such a node sent no
// heartbeat at all, so it was never readmitted.
func TestHeartbeatFindsALeaderRaftDoesNotName(t *testing.T) {
	var leaderGot atomic.Int64
	var leaderAddr string
	follower := transport.NewServer(func(req transport.Frame, reply func(transport.Frame)) {
		reply(peer.ErrFrame(errors.New(core.NotLeaderPrefix + leaderAddr)))
	})
	var epoch uint64
	leader := transport.NewServer(func(req transport.Frame, reply func(transport.Frame)) {
		leaderGot.Add(1)
		reply(transport.Frame{Type: req.Type, Payload: wire.Enc(nil).U64(epoch)})
	})
	followerAddr := serveFrames(t, follower)
	leaderAddr = serveFrames(t, leader)
	m := testMapAt(t, []string{"127.0.0.1:1", followerAddr, leaderAddr})
	epoch = m.Epoch
	n := leasedNode(t, m)
	n.NodeID = m.Nodes[0].ID
	n.Cfg.FailureTimeout = time.Second
	n.Lease.Until.Store(0) // lapsed
	renewed := false
	for i := 0; i < 4 && !renewed; i++ { // at most: the leader, or the follower then its hint
		renewed = n.heartbeat(context.Background())
	}
	if !renewed || !n.Serving() || leaderGot.Load() == 0 {
		t.Fatalf("renewed %v, serving %v, the leader got %d heartbeats", renewed, n.Serving(), leaderGot.Load())
	}
}

// TestOnlyTheLeaderAnswersHeartbeats: a member that does not lead answers
// a heartbeat with NOTLEADER and the leader's address as it knows it, even
// from a node its map has failed: its map may be older than that node's
// readmission, and a FENCED answer would make a readmitted node wipe
// itself again.
func TestOnlyTheLeaderAnswersHeartbeats(t *testing.T) {
	m := testMap(t, 3)
	failed := m.Nodes[2].ID
	m = mustApply(t, m, cluster.MarkFailed{ID: failed})
	n := leasedNode(t, m)
	n.NodeID = m.Nodes[0].ID
	_, err := n.onHeartbeat(heartbeatReq{ID: failed, Incarnation: 1, Fresh: true}.encode(nil))
	if err == nil || !strings.HasPrefix(err.Error(), core.NotLeaderPrefix) {
		t.Fatalf("a follower answered a failed node's heartbeat with %v; want NOTLEADER", err)
	}
}
