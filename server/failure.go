package server

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/transport"
	"github.com/memgest/memgest/wire"
)

// This file is failure detection and fencing (DESIGN.md §4, issue 4):
//
//   - Every node sends a heartbeat to the Raft leader every
//     HeartbeatInterval. An acknowledged heartbeat renews the node's lease:
//     it may serve the keys it coordinates until the heartbeat's send time
//     plus 0.95 × FailureTimeout.
//   - The leader's detector marks a node failed (cluster.MarkFailed, through
//     Raft) once it has not heard from it for FailureTimeout since the later
//     of its last heartbeat and the leader's own election, or at once when
//     the node's incarnation changed (it restarted with empty memory).
//   - So a node that was paused or cut off has stopped serving before the
//     control plane hands its shards on: its lease ran out first, measured
//     on its own monotonic clock from a send time that precedes the
//     leader's receipt. Leases are granted only after the leader has
//     verified its leadership with a quorum, so a deposed leader cannot
//     grant one that outlives a new leader's timeout. When a node comes
//     back, the leader answers its heartbeat with "fenced" if it was marked
//     failed.
//   - A fenced node empties its memory and takes a new incarnation (wipe);
//     a restarted one is empty already. Its heartbeats then say it is
//     fresh, and the leader readmits it (cluster.Rejoin): back to its old
//     places, to be rebuilt, or as a spare.
//   - A node that starts on an id it had before says so in its heartbeats
//     (Restarted) until it is fenced: the leader marks it failed at once
//     and grants it no lease. The incarnation alone would not do: a leader
//     elected while the node was down never heard the old one, and would
//     let the node serve its keys from its empty memory. A restarted node
//     elected leader marks itself failed, since no leader suspects itself.

// incarnation tells two runs of one node id apart: a node restarted with
// the same data directory keeps its id but lost its memory.
func newIncarnation() uint64 { return uint64(time.Now().UnixNano()) }

// heartbeatLoop reports to the leader every HeartbeatInterval. After a
// heartbeat that renewed nothing (no leader yet, say, after the leader
// died) it tries again every retryInterval, so a new leader renews the
// lease as soon as it is elected rather than a full interval later.
func (n *Node) heartbeatLoop(ctx context.Context) {
	for {
		wait := n.Cfg.HeartbeatInterval
		if !n.heartbeat(ctx) && !n.Lease.Fenced.Load() {
			wait = min(wait, retryInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// detectLoop runs the failure detector (a no-op except on the leader)
// twenty times per failure timeout, so a node is marked failed at most 5%
// of the timeout after its silence reaches it.
func (n *Node) detectLoop(ctx context.Context) {
	tick := time.NewTicker(max(n.Cfg.FailureTimeout/20, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n.detectFailures(ctx)
		}
	}
}

// retryInterval is how soon a heartbeat that renewed nothing is retried.
const retryInterval = 25 * time.Millisecond

// heartbeat sends one heartbeat and renews the lease if the leader took it;
// it reports whether it did.
func (n *Node) heartbeat(ctx context.Context) bool {
	sent := n.MonoNow()
	n.watchLeader(sent)
	m := n.Ctl.Map()
	if n.Ctl.IsLeader() {
		if self, ok := m.Node(n.NodeID); ok && self.State == cluster.Failed {
			n.fence()
			n.detector.Restarted(n.NodeID, n.incarnation.Load())
			n.readmit(self)
			return false
		}
		if n.Lease.Restarted.Load() {
			n.failSelf()
			return false
		}
		if n.Ctl.VerifyLeader() != nil {
			return false
		}
		n.detector.Seen(n.NodeID, n.incarnation.Load(), false)
		n.Renewed(sent)
		return true
	}
	leader, ok := n.heartbeatTarget(m)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, n.Cfg.FailureTimeout/2)
	defer cancel()
	req := heartbeatReq{ID: n.NodeID, Incarnation: n.incarnation.Load(), Fresh: n.Lease.Fresh.Load(),
		Restarted: n.Lease.Restarted.Load()}
	out, err := n.Call(ctx, leader, peer.MsgHeartbeat, req.encode(nil))
	n.noteLeaderHint(err)
	switch {
	case err == nil:
		return n.acceptedAt(ctx, sent, out)
	case isFencedReply(err):
		n.fence()
	}
	return false
}

// mapWait bounds how long a node waits to apply the map epoch a heartbeat
// reply names before it renews its lease.
const mapWait = 100 * time.Millisecond

// acceptedAt takes the leader's acknowledgement (its map epoch) of a
// heartbeat sent at sent. The lease is renewed only once this node has
// applied that epoch: a node must never serve under a map older than the
// leader's when it granted the lease. Otherwise a node readmitted after a
// long pause, its own map still from before its failure, would think it
// coordinates the shards others took over, and answer from its empty
// memory.
func (n *Node) acceptedAt(ctx context.Context, sent int64, reply []byte) bool {
	d := wire.NewDec(reply)
	epoch := d.U64()
	if d.Done() != nil {
		return false
	}
	if n.Ctl.Map().Epoch < epoch {
		wctx, cancel := context.WithTimeout(ctx, mapWait)
		_, err := n.Ctl.WaitEpoch(wctx, epoch)
		cancel()
		if err != nil {
			return false // renewed by a later heartbeat, once caught up
		}
	}
	n.Renewed(sent)
	return true
}

// fence stops serving for good: the control plane marked this node failed,
// so others hold its keys now. The node wipes its memory once, so that its
// next heartbeats ask to rejoin as an empty node.
func (n *Node) fence() {
	if !n.Fence() {
		return
	}
	if n.Lease.Fresh.Load() {
		// Empty since it started: the incarnation the leader has heard
		// is the one it will readmit.
		n.Log.Warn("the control plane marked this node failed; it rejoins empty", "node", n.NodeID)
		return
	}
	n.Log.Warn("the control plane marked this node failed; wiping its memory to rejoin", "node", n.NodeID)
	n.wipe()
}

// wipe drops every record and piece and takes a new incarnation: what the
// node held may be stale, and nothing of it is served again.
func (n *Node) wipe() {
	n.cmds.FlushLocal()
	n.Lost.Clear()
	n.incarnation.Store(newIncarnation())
	n.Lease.Fresh.Store(true)
}

// heartbeatReq is a heartbeat's payload. Fresh says the node holds nothing
// (it started or wiped since it was last a member in good standing), so the
// leader may readmit it if it was marked failed. Restarted says it started
// on an id it had before and has not been fenced since.
type heartbeatReq struct {
	ID          cluster.NodeID
	Incarnation uint64
	Fresh       bool
	Restarted   bool
}

func (h heartbeatReq) encode(e wire.Enc) wire.Enc {
	return e.Str(string(h.ID)).U64(h.Incarnation).Flag(h.Fresh).Flag(h.Restarted)
}

func decodeHeartbeat(b []byte) (heartbeatReq, error) {
	d := wire.NewDec(b)
	h := heartbeatReq{ID: cluster.NodeID(d.Str()), Incarnation: d.U64(), Fresh: d.Flag(), Restarted: d.Flag()}
	return h, d.Done()
}

// failSelf marks this node failed through Raft when it restarted and was
// elected leader (one attempt at a time): no leader suspects itself, and
// the shards it held must pass on as any restarted node's do. Its next
// heartbeat then finds it failed, and it rejoins empty. It decides on the
// current map only: a leader just elected after a restart may not have
// applied its log yet (a Raft barrier waits for that). With no other node
// up there is nobody to pass the shards to, and what the restart lost is
// lost either way: it serves.
func (n *Node) failSelf() {
	if n.Lease.FailingSelf.Swap(true) {
		return
	}
	go func() {
		defer n.Lease.FailingSelf.Store(false)
		if err := n.Ctl.Barrier(n.Cfg.PeerTimeout); err != nil {
			return // retried at the next heartbeat
		}
		m := n.Ctl.Map()
		self, known := m.Node(n.NodeID)
		switch {
		case !known || m.State != cluster.OK || self.State == cluster.Failed:
			return
		case !slices.ContainsFunc(m.Nodes, func(o cluster.Node) bool { return o.ID != n.NodeID && o.State == cluster.Up }):
			n.Lease.Restarted.Store(false)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.Cfg.PeerTimeout)
		defer cancel()
		n.Log.Warn("this node restarted and leads the control plane; marking itself failed", "node", n.NodeID)
		if _, err := n.Ctl.Propose(ctx, cluster.MarkFailed{ID: n.NodeID}); err != nil {
			n.Log.Warn("marking this node failed; retrying", "err", err)
		}
	}()
}

// fencedMsg is the leader's answer to a heartbeat from a failed node.
const fencedMsg = "FENCED node is marked failed"

func isFencedReply(err error) bool {
	var re *transport.RemoteError
	return errors.As(err, &re) && re.Msg == fencedMsg
}

// onHeartbeat is the leader's side: note the node as alive, or tell it it
// was marked failed. Non-leaders refuse with the leader's address
// (NOTLEADER), which a node that Raft tells nothing follows
// (heartbeatTarget); they never answer FENCED, since their map may be
// older than the readmission of the node asking.
func (n *Node) onHeartbeat(b []byte) ([]byte, error) {
	h, err := decodeHeartbeat(b)
	if err != nil {
		return nil, err
	}
	if !n.Ctl.IsLeader() {
		return nil, n.NotLeader()
	}
	if node, ok := n.Ctl.Map().Node(h.ID); ok && node.State == cluster.Failed {
		if h.Fresh {
			n.detector.Restarted(h.ID, h.Incarnation)
			n.readmit(node)
		}
		return nil, errors.New(fencedMsg)
	}
	// A leader that lost its quorum may not know it yet; only a verified
	// leader grants leases, so no lease outlives the moment another leader
	// could be elected (failure-model.md).
	if err := n.Ctl.VerifyLeader(); err != nil {
		return nil, err
	}
	if err := n.detector.Seen(h.ID, h.Incarnation, h.Restarted); err != nil {
		return nil, err
	}
	// The epoch the lease is granted under: the node waits to apply it
	// before serving (acceptedAt).
	return wire.Enc(nil).U64(n.Ctl.Map().Epoch), nil
}

// detectFailures proposes MarkFailed for every suspect, on the leader.
func (n *Node) detectFailures(ctx context.Context) {
	m := n.Ctl.Map()
	if m.State != cluster.OK {
		return
	}
	if n.Ctl.IsLeader() {
		n.pruneMembers(ctx, m)
	}
	for _, id := range n.detector.Suspects(m, n.NodeID, n.Ctl.IsLeader(), n.Cfg.FailureTimeout) {
		go func() {
			defer n.detector.SetMarking(id, false)
			pctx, cancel := context.WithTimeout(ctx, n.Cfg.PeerTimeout)
			defer cancel()
			m, err := n.Ctl.Propose(pctx, cluster.MarkFailed{ID: id})
			if err != nil {
				n.Log.Warn("marking a node failed", "node", id, "err", err)
				return
			}
			n.Log.Warn("node marked failed", "node", id)
			if failed, _ := m.Node(id); failed.Voter {
				n.replaceVoter(pctx, id)
			}
		}()
	}
}

// nodeStates counts the nodes of m by state name.
func nodeStates(m *cluster.Map) map[string]int {
	out := map[string]int{}
	for _, node := range m.Nodes {
		out[node.State.String()]++
	}
	return out
}

// readmit proposes, in the background and once at a time per node, that a
// failed node which is empty again rejoin (cluster.Rejoin). It first makes
// sure the node is a Raft member again (a failed voter was removed), so it
// sees the map that readmits it.
func (n *Node) readmit(node cluster.Node) {
	if !n.detector.ClaimMarking(node.ID) {
		return
	}
	go func() {
		defer n.detector.SetMarking(node.ID, false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*n.Cfg.PeerTimeout)
		defer cancel()
		if _, err := n.Ctl.AddMember(ctx, cluster.AddNode{Node: node}); err != nil {
			n.Log.Warn("readmitting a node to Raft", "node", node.ID, "err", err)
			return
		}
		if _, err := n.Ctl.Propose(ctx, cluster.Rejoin{ID: node.ID}); err != nil {
			n.Log.Warn("readmitting a node", "node", node.ID, "err", err)
			return
		}
		n.Log.Warn("node rejoined", "node", node.ID)
	}()
}
