// Package detect is the failure detector of the Raft leader (DESIGN.md
// §4): it records each member's heartbeats and the incarnation they carry,
// and names the members silent for longer than the failure timeout, or
// restarted with empty memory, for the leader to mark failed. It decides;
// the node sends the heartbeats, grants the leases and proposes the map
// changes.
package detect

import (
	"errors"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
)

// Clock is the time a Detector reads: the node's failure clock (an
// injected one in the in-process cluster).
type Clock interface {
	Now() time.Time
}

// New returns a detector reading clock, or the system clock if clock is
// nil.
func New(clock Clock) *Detector { return &Detector{clock: clock} }

// Detector is the leader's record of heartbeats. Its zero value reads the
// system clock.
type Detector struct {
	clock   Clock // nil: the system clock
	mu      sync.Mutex
	leading bool
	since   time.Time // when this node became leader, or last came back from a stall
	ran     time.Time // the last time suspects ran
	last    map[cluster.NodeID]time.Time
	incarn  map[cluster.NodeID]uint64
	restart map[cluster.NodeID]bool // incarnation changed: fail at once
	marking map[cluster.NodeID]bool // a MarkFailed is being proposed
}

// now reads the Detector's clock.
func (d *Detector) now() time.Time {
	if d.clock == nil {
		return time.Now()
	}
	return d.clock.Now()
}

// makeMaps gives a zero Detector its maps; the caller holds d.mu.
func (d *Detector) makeMaps() {
	if d.last == nil {
		d.last, d.incarn = map[cluster.NodeID]time.Time{}, map[cluster.NodeID]uint64{}
		d.restart, d.marking = map[cluster.NodeID]bool{}, map[cluster.NodeID]bool{}
	}
}

// Why a heartbeat of a member in the map grants no lease (seen).
var (
	// ErrRestartedNode: restarted with empty memory under a live id, the
	// node gets no lease, so it never serves what it lost; the Detector
	// marks it failed now.
	ErrRestartedNode = errors.New("node restarted; it is being marked failed")
	// ErrBeingMarked: a MarkFailed of the node is under way (its silence
	// reached the timeout just before). A lease granted now would outlast
	// the failover that follows, so none is until the map has decided.
	ErrBeingMarked = errors.New("node is being marked failed")
)

// seen records a heartbeat of a live member and says whether it may be
// granted a lease: not if it came from a node that restarted (it says so,
// or its incarnation changed), which the Detector then marks failed, nor
// while a map change about it is under way (marking).
func (d *Detector) Seen(id cluster.NodeID, incarnation uint64, restarted bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.makeMaps()
	if old, ok := d.incarn[id]; restarted || ok && old != incarnation {
		d.restart[id] = true
	}
	d.incarn[id] = incarnation
	d.last[id] = d.now()
	switch {
	case d.restart[id]:
		return ErrRestartedNode
	case d.marking[id]:
		return ErrBeingMarked
	}
	return nil
}

// restarted records the incarnation of a failed node that is empty again,
// so that once it rejoins its heartbeats count as its own.
func (d *Detector) Restarted(id cluster.NodeID, incarnation uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.makeMaps()
	d.incarn[id] = incarnation
	d.last[id] = d.now()
	delete(d.restart, id)
}

// suspects returns the nodes of m to mark failed now, each marked as
// under way (setMarking clears it) in the same critical section, so that no
// heartbeat seen after the decision grants a lease. On becoming leader the
// Detector starts afresh: every node gets a full timeout from then.
func (d *Detector) Suspects(m *cluster.Map, self cluster.NodeID, leader bool, timeout time.Duration) []cluster.NodeID {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.makeMaps()
	now := d.now()
	if !leader {
		d.leading = false
		return nil
	}
	if !d.leading {
		d.leading, d.since = true, now
		clear(d.last)
		clear(d.restart)
	}
	if !d.ran.IsZero() && now.Sub(d.ran) > timeout/2 {
		// This node was starved or paused itself (its own loop ran late):
		// the silence it measured may be its own, so everyone gets a full
		// timeout from now rather than being marked failed together.
		d.since = now
	}
	d.ran = now
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
			d.marking[node.ID] = true
		}
	}
	return out
}

// SetMarking records whether a map change about id is under way.
func (d *Detector) SetMarking(id cluster.NodeID, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.makeMaps()
	d.marking[id] = on
}

// claimMarking marks a map change about id as under way; false if one
// already is.
func (d *Detector) ClaimMarking(id cluster.NodeID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.makeMaps()
	if d.marking[id] {
		return false
	}
	d.marking[id] = true
	return true
}

// fresh says whether the Detector heard from id in the last within.
func (d *Detector) Fresh(id cluster.NodeID, within time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.last[id]
	return ok && d.now().Sub(t) < within
}
