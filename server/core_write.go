package server

import (
	"context"
	"errors"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
)

// This file is where a command's write enters the coordinator: a new
// value over the key's current state (valueOp, set), a new expiry
// (retimeOp), and the peek at a key's committed state a write starts
// from (peekLocked).

// valueOp builds the write of a new value over cur: the key keeps its
// scheme unless one is named, new keys take the default; KEEPTTL keeps the
// expiry.
func (n *Coordinator) valueOp(cur current, key, value []byte, expireAt int64, keepTTL bool, entry *cluster.SchemeEntry) *writeOp {
	op := &writeOp{key: key, value: value, expireAt: expireAt}
	switch {
	case entry != nil:
		op.entry = *entry
	case cur.exists:
		op.entry = cur.entry
	default:
		op.entry = n.ctl.Map().DefaultScheme()
	}
	if keepTTL && cur.exists {
		op.expireAt = cur.meta.ExpireAt
	}
	return op
}

// set is a plain SET: a blind write when no other write of the key is in
// flight (the common case). Otherwise it is a read-modify-write of the
// key's metadata: keeping the key's scheme or TTL must see the write in
// flight, and a rep stub must be filled before it is written over
// (overwritesStub).
func (n *Coordinator) set(ctx context.Context, key, value []byte, expireAt int64, keepTTL bool, entry *cluster.SchemeEntry) error {
	s := n.inflight.shard(key)
	s.mu.Lock()
	if s.newest(key) == nil {
		if entry == nil && expireAt == 0 && !keepTTL {
			if _, done, err := n.writeUnpeeked(s, key, value, 0); done {
				return err
			}
		}
		cur, pk := n.peekLocked(key)
		if op := n.valueOp(cur, key, value, expireAt, keepTTL, entry); !n.overwritesStub(cur, op) {
			return n.writeLocked(ctx, s, op, pk)
		}
	}
	s.mu.Unlock()
	return n.rmwWith(ctx, key, n.filledMeta, func(cur current) (*writeOp, error) {
		return n.valueOp(cur, key, value, expireAt, keepTTL, entry), nil
	})
}

// overwritesStub says whether op would send copies (rep replicas) over
// those of a stub (repair_stubs.go) whose value this node has not fetched yet. A
// copy slot holds one version per key and scheme, so the write's copies
// replace the committed ones as they arrive; should the write then fail,
// nothing would be left to put them back (undoReplicas restores from the
// primary record). So such a write fills the stub first.
func (n *Coordinator) overwritesStub(cur current, op *writeOp) bool {
	return cur.exists && isStub(cur.meta) && cur.meta.Scheme == op.entry.ID && op.scheme(n).Traits().Pieces == kind.Copies
}

// filledMeta is metaCommitted for a write that needs no value, with a
// stub of copies filled first (overwritesStub); a stub found lost is written over
// like any lost key.
func (n *Coordinator) filledMeta(ctx context.Context, key []byte) (current, error) {
	cur, err := n.metaCommitted(ctx, key)
	if err != nil || !cur.exists || !isStub(cur.meta) || n.kindOf(cur.entry).Traits().Pieces != kind.Copies {
		return cur, err
	}
	_, full, err := n.fillStub(ctx, key, cur.meta)
	var lost *kind.LostError
	if errors.As(err, &lost) {
		return cur, nil
	}
	cur.meta = full
	return cur, err
}

// peekLocked reads a key's committed metadata (not its value) for a blind
// write; the caller holds the key's inflight shard lock. It also returns
// what it saw of the primary record, for writeLocked.
func (n *Coordinator) peekLocked(key []byte) (current, peeked) {
	meta, ok := n.primary.Meta(key)
	pk := peeked{scheme: meta.Scheme, stored: ok, exact: !n.packedInUse()}
	if !ok {
		if _, _, cur, inStripe, _ := n.lookupPacked(key, false); inStripe && (cur.meta.ExpireAt == 0 || cur.meta.ExpireAt > nowMs()) {
			return cur, pk
		}
	}
	if !ok || (meta.ExpireAt != 0 && meta.ExpireAt <= nowMs()) {
		return current{}, pk
	}
	entry, ok := n.ctl.Map().SchemeByID(meta.Scheme)
	return current{exists: ok, meta: meta, entry: entry}, pk
}

// peeked is what peekLocked saw of a key's record in the primary store,
// expired or not: its scheme when stored. It is exact when the node has
// no stripe schemes (then nothing but a write of the key, excluded by its
// inflight lock, moves the key between stores).
type peeked struct {
	scheme uint16
	stored bool
	exact  bool
}

// retimeOp rewrites cur with a new expiry (0 = persist); an expiry in the
// past deletes the key, as Redis does.
func (n *Coordinator) retimeOp(cur current, key []byte, expireAt int64) *writeOp {
	if expireAt != 0 && expireAt <= nowMs() {
		return &writeOp{key: key, del: true, entry: cur.entry}
	}
	return &writeOp{key: key, value: cur.value, expireAt: expireAt, entry: cur.entry, shrinks: true}
}

// flushStores empties the stores, and runs also (what the node keeps
// outside them), holding every inflight shard lock.
func (n *Coordinator) flushStores(also func()) {
	for i := range n.inflight.shards {
		n.inflight.shards[i].mu.Lock()
	}
	defer func() {
		for i := range n.inflight.shards {
			n.inflight.shards[i].mu.Unlock()
		}
	}()
	n.primary.Clear()
	n.pieces.Clear()
	also()
	n.stats.detachedValues.Clear()
}
