package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/transport"
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

// incarnation tells two runs of one node id apart: a node restarted with
// the same data directory keeps its id but lost its memory.
func newIncarnation() uint64 { return uint64(time.Now().UnixNano()) }

// leaseFraction is the share of FailureTimeout a heartbeat's lease lasts;
// the rest absorbs clock-rate differences between nodes.
const leaseFraction = 0.95

// lease is a node's permission to serve its keys, in nanoseconds of the
// node's monotonic clock (time since start).
type lease struct {
	until  atomic.Int64
	fenced atomic.Bool // the leader said this node was marked failed
}

func (n *Node) monoNow() int64 { return int64(time.Since(n.started)) }

// renew extends the lease from a heartbeat sent at sent.
func (n *Node) renew(sent int64) {
	until := sent + int64(float64(n.cfg.FailureTimeout)*leaseFraction)
	for {
		cur := n.lease.until.Load()
		if until <= cur || n.lease.until.CompareAndSwap(cur, until) {
			return
		}
	}
}

// serving says whether this node may serve the keys it coordinates: its
// lease is fresh and the control plane has not marked it failed.
func (n *Node) serving() bool {
	return !n.lease.fenced.Load() && n.monoNow() < n.lease.until.Load()
}

var errFenced = resp.Err("CLUSTERDOWN memgest: this node has no fresh lease from the control plane " +
	"(paused, partitioned or marked failed); it serves no keys until it renews it")

// heartbeatLoop reports to the leader every HeartbeatInterval. After a
// heartbeat that renewed nothing (no leader yet, say, after the leader
// died) it tries again every retryInterval, so a new leader renews the
// lease as soon as it is elected rather than a full interval later.
func (n *Node) heartbeatLoop(ctx context.Context) {
	for {
		wait := n.cfg.HeartbeatInterval
		if !n.heartbeat(ctx) && !n.lease.fenced.Load() {
			wait = min(wait, retryInterval)
		}
		n.detectFailures(ctx)
		n.startRecoveries(ctx)
		n.startRebuilds(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// retryInterval is how soon a heartbeat that renewed nothing is retried.
const retryInterval = 25 * time.Millisecond

// heartbeat sends one heartbeat and renews the lease if the leader took it;
// it reports whether it did.
func (n *Node) heartbeat(ctx context.Context) bool {
	sent := n.monoNow()
	m := n.ctl.Map()
	if n.ctl.IsLeader() {
		if self, ok := m.Node(n.id); ok && self.State == cluster.Failed {
			n.lease.fenced.Store(true)
			return false
		}
		if n.ctl.VerifyLeader() != nil {
			return false
		}
		n.detector.seen(n.id, n.incarnation)
		n.renew(sent)
		return true
	}
	id, _, ok := n.ctl.Leader()
	if !ok {
		return false
	}
	leader, ok := m.Node(id)
	if !ok {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.FailureTimeout/2)
	defer cancel()
	_, err := n.call(ctx, leader, msgHeartbeat, heartbeatReq{ID: n.id, Incarnation: n.incarnation}.encode(nil))
	switch {
	case err == nil:
		n.renew(sent)
		return true
	case isFencedReply(err):
		if !n.lease.fenced.Swap(true) {
			n.log.Warn("the control plane marked this node failed; it serves no keys", "node", n.id)
		}
	}
	return false
}

// heartbeatReq is a heartbeat's payload.
type heartbeatReq struct {
	ID          cluster.NodeID
	Incarnation uint64
}

func (h heartbeatReq) encode(e enc) enc { return e.str(string(h.ID)).u64(h.Incarnation) }

func decodeHeartbeat(b []byte) (heartbeatReq, error) {
	d := dec{b: b}
	h := heartbeatReq{ID: cluster.NodeID(d.str()), Incarnation: d.u64()}
	return h, d.done()
}

// fencedMsg is the leader's answer to a heartbeat from a failed node.
const fencedMsg = "FENCED node is marked failed"

func isFencedReply(err error) bool {
	var re *transport.RemoteError
	return errors.As(err, &re) && re.Msg == fencedMsg
}

// onHeartbeat is the leader's side: note the node as alive, or tell it it
// was marked failed. Non-leaders refuse, so the sender retries the leader.
func (n *Node) onHeartbeat(b []byte) ([]byte, error) {
	h, err := decodeHeartbeat(b)
	if err != nil {
		return nil, err
	}
	if node, ok := n.ctl.Map().Node(h.ID); ok && node.State == cluster.Failed {
		return nil, errors.New(fencedMsg)
	}
	// A leader that lost its quorum may not know it yet; only a verified
	// leader grants leases, so no lease outlives the moment another leader
	// could be elected (failure-model.md).
	if err := n.ctl.VerifyLeader(); err != nil {
		return nil, err
	}
	n.detector.seen(h.ID, h.Incarnation)
	return nil, nil
}

// detector is the leader's record of heartbeats.
type detector struct {
	mu      sync.Mutex
	leading bool
	since   time.Time // when this node became leader
	last    map[cluster.NodeID]time.Time
	incarn  map[cluster.NodeID]uint64
	restart map[cluster.NodeID]bool // incarnation changed: fail at once
	marking map[cluster.NodeID]bool // a MarkFailed is being proposed
}

// makeMaps gives a zero detector its maps; the caller holds d.mu.
func (d *detector) makeMaps() {
	if d.last == nil {
		d.last, d.incarn = map[cluster.NodeID]time.Time{}, map[cluster.NodeID]uint64{}
		d.restart, d.marking = map[cluster.NodeID]bool{}, map[cluster.NodeID]bool{}
	}
}

func (d *detector) seen(id cluster.NodeID, incarnation uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.makeMaps()
	if old, ok := d.incarn[id]; ok && old != incarnation {
		d.restart[id] = true
	}
	d.incarn[id] = incarnation
	d.last[id] = time.Now()
}

// suspects returns the nodes of m to mark failed now. On becoming leader
// the detector starts afresh: every node gets a full timeout from then.
func (d *detector) suspects(m *cluster.Map, self cluster.NodeID, leader bool, timeout time.Duration) []cluster.NodeID {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	if !leader {
		d.leading = false
		return nil
	}
	if !d.leading {
		d.leading, d.since = true, now
		clear(d.last)
		clear(d.restart)
	}
	var out []cluster.NodeID
	for _, node := range m.Nodes {
		if node.ID == self || (node.State != cluster.Up && node.State != cluster.Spare) || d.marking[node.ID] {
			continue
		}
		last := d.since
		if t, ok := d.last[node.ID]; ok && t.After(last) {
			last = t
		}
		if now.Sub(last) > timeout || d.restart[node.ID] {
			out = append(out, node.ID)
		}
	}
	return out
}

func (d *detector) setMarking(id cluster.NodeID, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.makeMaps()
	d.marking[id] = on
}

// detectFailures proposes MarkFailed for every suspect, on the leader.
func (n *Node) detectFailures(ctx context.Context) {
	m := n.ctl.Map()
	if m.State != cluster.OK {
		return
	}
	for _, id := range n.detector.suspects(m, n.id, n.ctl.IsLeader(), n.cfg.FailureTimeout) {
		n.detector.setMarking(id, true)
		go func() {
			defer n.detector.setMarking(id, false)
			pctx, cancel := context.WithTimeout(ctx, n.cfg.PeerTimeout)
			defer cancel()
			m, err := n.ctl.Propose(pctx, cluster.MarkFailed{ID: id})
			if err != nil {
				n.log.Warn("marking a node failed", "node", id, "err", err)
				return
			}
			n.log.Warn("node marked failed", "node", id)
			if failed, _ := m.Node(id); failed.Voter {
				n.replaceVoter(pctx, m, id)
			}
		}()
	}
}

// refuseKeys answers for a key command that this node must not run now:
// it is fenced, or a key's shard is coordinated here but still recovering.
func (n *Node) refuseKeys(m *cluster.Map, keys [][]byte) (resp.Reply, bool) {
	if m.State != cluster.OK {
		return resp.Reply{}, false
	}
	if !n.serving() {
		return errFenced, true
	}
	if m.RecoveringShards() == 0 {
		return resp.Reply{}, false // the common case: no slot hashing here
	}
	for _, k := range keys {
		slot := cluster.Slot(k)
		if sh := m.ShardOf(slot); sh != nil && sh.Recovering {
			if c, ok := m.Coordinator(slot); ok && c.ID == n.id {
				return resp.Errorf("TRYAGAIN memgest: shard %d is recovering after its coordinator failed", sh.ID), true
			}
		}
	}
	return resp.Reply{}, false
}

// nodeStates counts the nodes of m by state name.
func nodeStates(m *cluster.Map) map[string]int {
	out := map[string]int{}
	for _, node := range m.Nodes {
		out[node.State.String()]++
	}
	return out
}

// selfState is this node's state in m ("unknown" before it joined).
func (n *Node) selfState(m *cluster.Map) string {
	if self, ok := m.Node(n.id); ok {
		return self.State.String()
	}
	return "unknown"
}

// replaceVoter gives a failed voter's vote to a live non-voter that the
// detector heard from recently, so the control plane keeps its size of
// voters and survives another failure.
func (n *Node) replaceVoter(ctx context.Context, m *cluster.Map, failed cluster.NodeID) {
	for _, node := range m.Nodes {
		if node.Voter || (node.State != cluster.Up && node.State != cluster.Spare) || !n.detector.fresh(node.ID, n.cfg.FailureTimeout/2) {
			continue
		}
		if _, err := n.ctl.ReplaceVoter(ctx, failed, node); err != nil {
			n.log.Warn("replacing a failed voter", "failed", failed, "with", node.ID, "err", err)
			return
		}
		n.log.Warn("voter replaced", "failed", failed, "with", node.ID)
		return
	}
	n.log.Warn("no live non-voter to replace a failed voter", "failed", failed)
}

// fresh says whether the detector heard from id in the last within.
func (d *detector) fresh(id cluster.NodeID, within time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.last[id]
	return ok && time.Since(t) < within
}
