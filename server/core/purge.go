package core

import (
	"context"
	"sync"

	"github.com/memgest/memgest/keyslot"
)

// This file finishes deletions whose releases failed. A deletion stores a
// tombstone on its key's directory nodes before it commits (directory.go),
// so that no recovery brings back a version older than it, and purges the
// tombstone once every piece of the key has been released. When a release
// fails (a node unreachable for a moment), the tombstone must stay, but
// not for ever:
//
//   - the coordinator keeps the deletion in a bounded list and sends its
//     releases again at each sweep tick; once they all succeed, it purges
//     the tombstone;
//   - should the coordinator fail first, the shard's recovery finds the
//     tombstone, releases every version older than it from the nodes that
//     listed them (sweepStale), and purges it when those releases succeed.

// maxUnfinishedDeletions bounds the list; a deletion past it keeps its
// tombstone until the shard's next recovery.
const maxUnfinishedDeletions = 1 << 16

// finishPerTick is how many unfinished deletions one sweep tick retries.
const finishPerTick = 64

// unfinishedDeletion is a committed deletion with releases still to do.
type unfinishedDeletion struct {
	Version uint64 // the deletion's, which its tombstone carries
	Shard   uint16 // the shard whose directory keeps the tombstone
	rels    []Release
}

// UnfinishedDeletions is the coordinator's list of them, by key.
type UnfinishedDeletions struct {
	Mu sync.Mutex
	M  map[string]unfinishedDeletion
}

// add records key's deletion at version, whose releases rels failed. A
// key with a deletion waiting already keeps both's releases, and the later
// version: its tombstone may be purged only once every older piece is gone.
func (u *UnfinishedDeletions) add(key []byte, shard uint16, version uint64, rels []Release) {
	u.Mu.Lock()
	defer u.Mu.Unlock()
	if u.M == nil {
		u.M = map[string]unfinishedDeletion{}
	}
	prev, waiting := u.M[string(key)]
	if !waiting && len(u.M) >= maxUnfinishedDeletions {
		return
	}
	u.M[string(key)] = unfinishedDeletion{Version: max(version, prev.Version), Shard: shard, rels: append(prev.rels, rels...)}
}

// take removes and returns up to limit deletions.
func (u *UnfinishedDeletions) take(limit int) map[string]unfinishedDeletion {
	u.Mu.Lock()
	defer u.Mu.Unlock()
	out := map[string]unfinishedDeletion{}
	for k, d := range u.M {
		if len(out) == limit {
			break
		}
		out[k] = d
		delete(u.M, k)
	}
	return out
}

// FinishDeletions retries the releases of up to finishPerTick unfinished
// deletions and purges the tombstone of each that succeeds. A deletion of a
// key this node no longer coordinates is dropped: the new coordinator's
// recovery finishes it. One that fails again goes back on the list.
func (n *Coordinator) FinishDeletions(ctx context.Context) {
	m := n.Ctl.Map()
	for key, d := range n.Unfinished.take(finishPerTick) {
		if coord, ok := m.Coordinator(keyslot.Of([]byte(key))); !ok || coord.ID != n.NodeID {
			continue
		}
		if err := n.ReleaseAll(ctx, d.rels, true); err != nil {
			n.Unfinished.add([]byte(key), d.Shard, d.Version, d.rels)
			continue
		}
		n.EnqueueDirectory(PurgeOf([]byte(key), d.Shard, d.Version))
	}
}

// PurgeTombstones purges, after a shard's recovery, the tombstones of the
// deleted keys (purges) whose older versions were all released (failed
// names the keys whose releases did not all succeed).
func (n *Coordinator) PurgeTombstones(purges []DirEntry, failed map[string]bool) {
	for _, p := range purges {
		if !failed[string(p.Key)] {
			n.EnqueueDirectory(p)
		}
	}
}
