package core

import "time"

// LeaseRenewedAt is the failure clock's reading when the heartbeat that
// last renewed this node's lease was sent; the zero time before the first.
// A harness moving a fake clock on waits for it to pass the clock's
// reading, so that no live node falls silent in the detector's eyes.
func (n *Coordinator) LeaseRenewedAt() time.Time {
	until := n.Lease.Until.Load()
	if until == 0 {
		return time.Time{}
	}
	return n.Started.Add(time.Duration(until - n.leaseLength()))
}

// DirectoryEntries is how many key-directory entries (and tombstones)
// this node keeps for coordinators (directory.go). Coordinators send them
// in the background after a commit, so a test that must know a key's loss
// will be named waits for them before it kills the coordinator.
func (n *Coordinator) DirectoryEntries() int {
	return int(n.Pieces.Stats().ByScheme[DirSchemeID].Keys)
}
