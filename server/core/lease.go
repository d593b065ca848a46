package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/resp"
)

// This file is the node's lease and a coordinator's authority (DESIGN.md
// §1 fencing; failure.go says how heartbeats renew the lease and how a
// node is fenced): whether the node may serve its keys now (serving), the
// permission a command or a frame is decided under (takeAuthority), and
// whether a reply still stands when the command ends (withinLease).

// leaseFraction is the share of FailureTimeout a heartbeat's lease lasts;
// the rest absorbs clock-rate differences between nodes.
const leaseFraction = 0.95

// lease is a node's permission to serve its keys, in nanoseconds of the
// node's monotonic clock (time since start).
type lease struct {
	Until  atomic.Int64
	Fenced atomic.Bool // the leader said this node was marked failed
	// Fresh is set while the node holds nothing it could serve stale:
	// from its start, or a wipe, until the leader first takes a
	// heartbeat of it as a member in good standing.
	Fresh atomic.Bool
	// Fences counts the times the node was fenced: a permission taken
	// before one (an authority) is void after it, even once readmitted.
	Fences atomic.Uint64
	// Restarted is set when the node started on an id it had before, until
	// it is fenced: the map may still count it a member holding what it
	// lost, and a leader elected since never heard its old incarnation.
	Restarted   atomic.Bool
	FailingSelf atomic.Bool // a restarted leader is marking itself failed (failSelf)
	// Hint is the leader's peer address as another member named it, for
	// a node Raft tells nothing (heartbeatTarget); probe picks the member
	// to ask next when there is none.
	Hint  atomic.Pointer[string]
	Probe atomic.Uint64

	mu   sync.Mutex
	wake chan struct{} // closed when the lease is renewed or fenced (changed)
}

// changed returns a channel closed at the lease's next renewal or fence.
func (l *lease) changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return l.wake
}

// Notify wakes those waiting on changed.
func (l *lease) Notify() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// MonoNow is the failure clock's time since the node started, in
// nanoseconds: what leases are measured in.
func (n *Coordinator) MonoNow() int64 {
	if n.failureClock == nil { // the system clock: monotonic time alone
		return int64(time.Since(n.Started))
	}
	return int64(n.failureClock.Now().Sub(n.Started))
}

// leaseLength is how long a heartbeat's lease lasts, in nanoseconds.
func (n *Coordinator) leaseLength() int64 {
	return int64(float64(n.Cfg.FailureTimeout) * leaseFraction)
}

// Renew extends the lease from a heartbeat sent at sent and returns the
// end of the lease it extended (0: none yet), or -1 if it extended nothing.
func (n *Coordinator) Renew(sent int64) int64 {
	until := sent + n.leaseLength()
	for {
		cur := n.Lease.Until.Load()
		if until <= cur {
			return -1
		}
		if n.Lease.Until.CompareAndSwap(cur, until) {
			n.Lease.Notify()
			return cur
		}
	}
}

// Serving says whether this node may serve the keys it coordinates: its
// lease is fresh and the control plane has not marked it failed.
func (n *Coordinator) Serving() bool {
	return !n.Lease.Fenced.Load() && n.MonoNow() < n.Lease.Until.Load()
}

// ErrLeaseLapsed replaces the reply of a write this node ran as
// coordinator when its lease ran out before the write ended (it was paused,
// say) and no heartbeat renewed it since: another node may have taken its
// keys over meanwhile, so the write's outcome is unknown. It is not a
// CLUSTERDOWN: that says nothing ran.
var ErrLeaseLapsed = resp.Err("ERR memgest: this node's lease lapsed while the command ran " +
	"(paused or partitioned); a write may or may not have taken effect")

// ErrReadLapsed replaces the reply of a read in the same case: a read
// changed nothing, so it may simply be sent again.
var ErrReadLapsed = resp.Err("TRYAGAIN memgest: this node's lease lapsed while the read ran " +
	"and was not renewed; nothing was changed")

// ErrLeaseGone fails redundancy a coordinator would send without a lease.
var ErrLeaseGone = errors.New("server: this node's lease lapsed; it sends no redundancy")

// Leased says whether this node may act as a coordinator towards others
// now: its lease holds (a node of a forming cluster has none yet, and needs
// none).
func (n *Coordinator) Leased() bool {
	return n.Ctl.Map().State != cluster.OK || n.Serving()
}

// authority is a coordinator's permission to change what other nodes hold
// for its keys (pieces, releases, directory entries), taken when it stamps
// a frame with the map's epoch. The lease is checked after the epoch was
// read, so a frame sent under a lease carries an epoch older than any map
// that failed this node over, and nodes with that map refuse it.
type authority struct {
	fences uint64 // the fence count when it was taken
	Ok     bool   // the lease held then
}

// TakeAuthority reads the fence count and the lease; call it after reading
// the epoch to stamp.
func (n *Coordinator) TakeAuthority() authority {
	return authority{fences: n.Lease.Fences.Load(), Ok: n.Leased()}
}

// stillHolds says whether a frame may be stamped again under a newer
// epoch: the lease holds now and the node was not fenced since a was taken,
// so no failover came between (another node could have recovered its
// shards without the frame's change, and would be overwritten by it).
func (n *Coordinator) stillHolds(a authority) bool {
	return a.Ok && n.Leased() && n.Lease.Fences.Load() == a.fences
}

// WithinLease returns r, the reply of a command this node ran as its keys'
// coordinator under authority a (taken as it began), if no failover of
// this node can have come between: its lease holds now and it was not
// fenced since (stillHolds). A lease is granted only while the node is not
// marked failed, and outlives no leader's timeout, so a node that holds one
// now has not been failed over, whatever happened while the command ran: a
// command may outlast the lease it began under (a split read on a loaded
// machine, a huge value) as long as heartbeats renewed it, and a lease
// that lapsed and was renewed without a fence (late heartbeats) lost
// nothing either. A node failed over and readmitted was fenced first
// (failure-model.md, "Fencing").
//
// When the lease has lapsed, WithinLease waits for the next renewal, up to
// FailureTimeout: renewed, r stands; fenced or not renewed, a read answers
// errReadLapsed (TRYAGAIN: it changed nothing) and a write errLeaseLapsed
// (its outcome is unknown).
func (n *Coordinator) WithinLease(ctx context.Context, a authority, read bool, r resp.Reply) resp.Reply {
	if n.stillHolds(a) {
		return r
	}
	if n.awaitLease(ctx, a) {
		n.Metrics.lapsedCommand(lapsedRenewed)
		return r
	}
	if read {
		n.Metrics.lapsedCommand(lapsedReadRefused)
		return ErrReadLapsed
	}
	n.Metrics.lapsedCommand(lapsedWriteUnknown)
	return ErrLeaseLapsed
}

// awaitLease waits until the lease holds again under authority a (true),
// or the node is fenced, ctx ends or FailureTimeout passes (false): by
// then the leader has marked a silent node failed.
func (n *Coordinator) awaitLease(ctx context.Context, a authority) bool {
	timeout := time.NewTimer(n.Cfg.FailureTimeout)
	defer timeout.Stop()
	for {
		changed := n.Lease.changed()
		switch {
		case n.stillHolds(a):
			return true
		case !a.Ok || n.Lease.Fenced.Load() || n.Lease.Fences.Load() != a.fences:
			return false
		}
		select {
		case <-changed:
		case <-timeout.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Renewed takes an acknowledged heartbeat sent at sent: the node is a
// member in good standing, so it is no longer fenced nor fresh, and its
// lease is renewed.
func (n *Coordinator) Renewed(sent int64) {
	fenced := n.Lease.Fenced.Swap(false)
	if fenced {
		n.Log.Warn("readmitted by the control plane; serving again", "node", n.NodeID)
	}
	n.Lease.Fresh.Store(false)
	now := n.MonoNow()
	n.Metrics.Heartbeat.Observe(Seconds(now - sent))
	if prev := n.Renew(sent); !fenced && prev > 0 && prev < now {
		n.Metrics.LeaseLapses.Inc()
		n.Log.Warn("this node's lease lapsed before a heartbeat renewed it", "node", n.NodeID,
			"lapsed_for", time.Duration(now-prev), "heartbeat_took", time.Duration(now-sent))
	}
}

// Fence voids the lease for good: the control plane marked this node
// failed, so others hold its keys now. It reports false if the node was
// fenced already. The directory entries decided under the lost lease are
// dropped; the node (server) wipes what else it holds.
func (n *Coordinator) Fence() bool {
	if n.Lease.Fenced.Swap(true) {
		return false
	}
	n.Lease.Fences.Add(1)
	n.Lease.Notify()
	n.Lease.Restarted.Store(false) // the leader knows now
	n.DropDirectory()              // decided under the lost lease
	return true
}
