package core

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// This file is the coordinator core's side of packed schemes (kind.Packed:
// stripe, hybrid next), whose keys' objects live in the scheme's chunks
// rather than in primary records. A key is in the primary store or in one
// packed scheme; a commit that moves it between them holds the key's move
// lock for writing, and a read that misses the primary store looks in the
// packed schemes holding it for reading, so no read finds the key in
// neither.

// moveLocks is how many locks guard moves of keys between the primary
// store and the packed schemes.
const moveLocks = 256

// packedMoves are the move locks, by key hash.
type packedMoves struct {
	locks [moveLocks]sync.RWMutex
}

var moveSeed = maphash.MakeSeed()

// lock is key's move lock.
func (pm *packedMoves) lock(key []byte) *sync.RWMutex {
	return &pm.locks[maphash.Bytes(moveSeed, key)%moveLocks]
}

// packedInUse says whether a packed scheme may hold objects on this node:
// until one does, a miss in the primary store is final.
func (n *Coordinator) packedInUse() bool { return n.PackedHeld != nil && n.PackedHeld() }

// findPacked looks key up in the map's packed schemes. The caller holds
// the key's move lock for reading, or its write slot.
func (n *Coordinator) findPacked(key []byte, withValue bool) (Current, bool) {
	for _, p := range n.Schemes(n.Ctl.Map()).packed {
		if meta, value, ok := p.Find(key, withValue); ok {
			return Current{Exists: true, Meta: meta, Value: value, Entry: p.Entry()}, true
		}
	}
	return Current{}, false
}

// fetchPacked reads the value Find left out of cur, key's object in a
// packed scheme kept on another node (kind.Packed.Fetch).
func (n *Coordinator) fetchPacked(ctx context.Context, key []byte, cur Current) (Current, error) {
	sch, ok := n.Schemes(n.Ctl.Map()).Lookup(cur.Entry.ID)
	p, packed := sch.(kind.Packed)
	if !ok || !packed {
		return Current{}, fmt.Errorf("server: key %q: scheme %s is not packed: %w", key, cur.Entry.Name(), kind.ErrPieceGone)
	}
	meta, value, err := p.Fetch(ctx, key)
	if err != nil {
		return Current{}, err
	}
	return n.unlessExpired(key, Current{Exists: true, Meta: meta, Value: value, Entry: cur.Entry}), nil
}

// lookupPacked is findPacked for a key the primary store missed: under the
// key's move lock it looks in the primary store again, then in the packed
// schemes, so that a key moving between them is found in one.
func (n *Coordinator) lookupPacked(key []byte, withValue bool) (val []byte, meta store.Meta, cur Current, inPacked, inPrimary bool) {
	if !n.packedInUse() {
		return nil, store.Meta{}, Current{}, false, false
	}
	l := n.moves.lock(key)
	l.RLock()
	defer l.RUnlock()
	var ok bool
	if withValue {
		val, meta, ok = n.Primary.Get(key, nil)
	} else {
		meta, ok = n.Primary.Meta(key)
	}
	if ok {
		return val, meta, Current{}, false, true
	}
	cur, inPacked = n.findPacked(key, withValue)
	return nil, store.Meta{}, cur, inPacked, false
}

// inPacked says whether a packed scheme holds key. Only commits change
// that, and a key's commits never overlap, so a writer may ask before
// committing.
func (n *Coordinator) inPacked(key []byte) bool {
	if !n.packedInUse() {
		return false
	}
	_, ok := n.findPacked(key, false)
	return ok
}

// KeyMeta returns the metadata of key's committed record, in the primary
// store or a packed scheme, expired or not.
func (n *Coordinator) KeyMeta(key []byte) (store.Meta, bool) {
	if meta, ok := n.Primary.Meta(key); ok {
		return meta, true
	}
	_, meta, cur, inPacked, ok := n.lookupPacked(key, false)
	if inPacked {
		return cur.Meta, true
	}
	return meta, ok
}

// packedOf is op's scheme as a packed one, if it is.
func (op *WriteOp) packedOf(n *Coordinator) (kind.Packed, bool) {
	p, ok := op.scheme(n).(kind.Packed)
	return p, ok
}

// stage makes op's packed write at version v, for its scheme to place.
func (op *WriteOp) stage(v uint64) *kind.Staged {
	op.staged = kind.Staged{Key: op.Key, Value: op.Value, ExpireAt: op.ExpireAt, Version: v, Relocate: op.relocate}
	return &op.staged
}

// sendPacked places op's object at version v in its packed scheme p and
// waits until the chunk's holders have the updates (the write path's
// redundancy). On failure the object is removed again.
func (n *Coordinator) sendPacked(ctx context.Context, p kind.Packed, op *WriteOp, v uint64) error {
	w := op.stage(v)
	if err := p.Stage(ctx, w); err != nil {
		return err
	}
	op.flushing[0] = w
	p.Flush(ctx, op.flushing[:])
	if w.Err != nil {
		return notAcknowledged(op.Key, w.Err)
	}
	return nil
}

// abortStaged drops the object op staged in a packed scheme, if any.
func (n *Coordinator) abortStaged(op *WriteOp) {
	if op.staged.Place == nil {
		return
	}
	if p, ok := op.packedOf(n); ok {
		p.Abort(&op.staged)
	}
	op.staged.Place = nil
}

// commitPackedLocked is commitLocked for a write that involves a packed
// scheme: op's target is one, or the key's committed object is in one. It
// makes op at version v the committed state unless a newer version is,
// moving the key between the primary store and the packed schemes under
// its move lock, and returns the primary-store pieces to release. The
// caller holds the key's inflight shard lock.
func (n *Coordinator) commitPackedLocked(op *WriteOp, v uint64) ([]Release, error) {
	l := n.moves.lock(op.Key)
	l.Lock()
	defer l.Unlock()
	m := n.Ctl.Map()
	prev, hadPrimary := n.Primary.Meta(op.Key)
	if hadPrimary && prev.Version >= v {
		n.abortStaged(op) // lost to a newer version
		return nil, nil
	}
	target, toPacked := op.packedOf(n)
	toPacked = toPacked && !op.Del
	var next store.Meta // the primary record op makes, if any
	if toPacked {
		applied, err := n.commitStaged(target, op)
		if err != nil || !applied {
			return nil, err
		}
	} else if !op.Del {
		var stored []byte
		stored, next = n.primaryRecord(op, v)
		if _, _, _, err := n.Primary.Exchange(op.Key, stored, next); err != nil {
			return nil, fmt.Errorf("server: storing %q: %w", op.Key, err)
		}
		if e, ok := DirChange(op, kind.ShardID(m, op.Key), !op.Del && op.scheme(n).Traits().Immediate, v, store.Meta{}, false); ok {
			n.EnqueueDirectory(e) // the key leaves a packed scheme, which keeps no entry
		}
	}
	n.removeFromPacked(op, v)
	n.accountDetached(m, prev, hadPrimary, next)
	if !hadPrimary {
		return nil, nil
	}
	if toPacked || op.Del {
		n.Primary.DeleteIf(op.Key, func(old store.Meta) bool { return old.Version < v })
	}
	if n.needsRelease(m, prev.Scheme, op) {
		return []Release{{Key: op.Key, Shard: kind.ShardID(m, op.Key), Scheme: prev.Scheme, Version: prev.Version, everywhere: op.Del}}, nil
	}
	return nil, nil
}

// commitStaged commits op's staged object in its packed scheme p.
func (n *Coordinator) commitStaged(p kind.Packed, op *WriteOp) (bool, error) {
	if op.staged.Place == nil {
		return false, fmt.Errorf("server: %q has no object to commit", op.Key)
	}
	applied, err := p.Commit(&op.staged)
	op.staged.Place = nil
	return applied, err
}

// removeFromPacked deletes key's object, older than v, from every packed
// scheme but op's target, keeping what their holders must be told in
// op.removals.
func (n *Coordinator) removeFromPacked(op *WriteOp, v uint64) {
	for _, p := range n.Schemes(n.Ctl.Map()).packed {
		if !op.Del && p.Entry().ID == op.Entry.ID {
			continue
		}
		if r := p.Remove(op.Key, v-1); r != nil {
			op.removals = append(op.removals, r)
		}
	}
}

// sendRemovalsLater sends op's removals from packed schemes, if any are
// left, in the background: no client waits for the removal of a replaced
// object.
func (n *Coordinator) sendRemovalsLater(op *WriteOp) {
	for _, r := range op.removals {
		r.SendLater()
	}
	op.removals = nil
}

// sendRemovals sends a deletion's removals and waits for them, so that
// the deletion's tombstone is purged only once no holder has the object
// any more (a recovery could otherwise bring it back).
func (n *Coordinator) sendRemovals(ctx context.Context, op *WriteOp) error {
	var errs []error
	for _, r := range op.removals {
		errs = append(errs, r.Send(ctx))
	}
	op.removals = nil
	return errors.Join(errs...)
}
