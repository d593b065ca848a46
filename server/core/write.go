package core

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

// ValueOp builds the write of a new value over cur: a named scheme wins;
// otherwise the map's policy picks (pickScheme), or the key keeps its
// scheme and new keys take the default; KEEPTTL keeps the expiry.
func (n *Coordinator) ValueOp(cur Current, key, value []byte, expireAt int64, keepTTL bool, entry *cluster.SchemeEntry) *WriteOp {
	op := &WriteOp{Key: key, Value: value, ExpireAt: expireAt}
	m := n.Ctl.Map()
	if entry != nil {
		op.Entry = *entry
	} else {
		op.Entry = pickScheme(m, cur, len(value))
	}
	n.written(m, cur, op, entry == nil)
	if keepTTL && cur.Exists {
		op.ExpireAt = cur.Meta.ExpireAt
	}
	return op
}

// Set is a plain SET: a blind write when no other write of the key is in
// flight (the common case). Otherwise it is a read-modify-write of the
// key's metadata: keeping the key's scheme or TTL must see the write in
// flight, and a rep stub must be filled before it is written over
// (overwritesStub).
func (n *Coordinator) Set(ctx context.Context, key, value []byte, expireAt int64, keepTTL bool, entry *cluster.SchemeEntry) error {
	s := n.Inflight.Shard(key)
	s.Mu.Lock()
	plain := entry == nil && expireAt == 0 && !keepTTL
	if q := s.Newest(key); q != nil && plain {
		if p, op := n.overlapLocked(s, q, key, value); p != nil {
			s.Mu.Unlock()
			return n.apply(ctx, p, op)
		}
	}
	if s.Newest(key) == nil {
		if plain {
			if _, done, err := n.writeUnpeeked(s, key, value, 0); done {
				return err
			}
		}
		cur, pk := n.peekLocked(key)
		if op := n.ValueOp(cur, key, value, expireAt, keepTTL, entry); !n.overwritesStub(cur, op) {
			return n.writeLocked(ctx, s, op, pk)
		}
	}
	s.Mu.Unlock()
	return n.rmwWith(ctx, key, n.filledMeta, func(cur Current) (*WriteOp, error) {
		return n.ValueOp(cur, key, value, expireAt, keepTTL, entry), nil
	})
}

// SetImported writes a key its slot's migration brings here from the
// source, with its value, TTL and scheme. Its pieces are named by the
// importing shard, apart from the source's (kind.Piece): it is any write.
func (n *Coordinator) SetImported(ctx context.Context, key, value []byte, expireAt int64, entry cluster.SchemeEntry) error {
	return n.RMWMeta(ctx, key, func(Current) (*WriteOp, error) {
		return &WriteOp{Key: key, Value: value, ExpireAt: expireAt, Entry: entry}, nil
	})
}

// overwritesStub says whether op would send copies (rep replicas) over
// those of a stub (server/repair/value_fill.go) whose value this node has not fetched yet. A
// copy slot holds one version per key and scheme, so the write's copies
// replace the committed ones as they arrive; should the write then fail,
// nothing would be left to put them back (undoReplicas restores from the
// primary record). So such a write fills the stub first.
func (n *Coordinator) overwritesStub(cur Current, op *WriteOp) bool {
	return cur.Exists && IsStub(cur.Meta) && cur.Meta.Scheme == op.Entry.ID && op.scheme(n).Traits().Pieces == kind.Copies
}

// filledMeta is metaCommitted for a write that needs no value, with a
// stub of copies filled first (overwritesStub); a stub found lost is written over
// like any lost key.
func (n *Coordinator) filledMeta(ctx context.Context, key []byte) (Current, error) {
	cur, err := n.MetaCommitted(ctx, key)
	if err != nil || !cur.Exists || !IsStub(cur.Meta) || n.KindOf(cur.Entry).Traits().Pieces != kind.Copies {
		return cur, err
	}
	_, full, err := n.FillStub(ctx, key, cur.Meta)
	var lost *kind.LostError
	if errors.As(err, &lost) {
		return cur, nil
	}
	cur.Meta = full
	return cur, err
}

// peekLocked reads a key's committed metadata (not its value) for a blind
// write; the caller holds the key's inflight shard lock. It also returns
// what it saw of the primary record, for writeLocked.
func (n *Coordinator) peekLocked(key []byte) (Current, peeked) {
	meta, ok := n.Primary.Meta(key)
	pk := peeked{scheme: meta.Scheme, stored: ok, exact: !n.packedInUse()}
	if !ok {
		if _, _, cur, inStripe, _ := n.lookupPacked(key, false); inStripe && (cur.Meta.ExpireAt == 0 || cur.Meta.ExpireAt > NowMs()) {
			return cur, pk
		}
	}
	if !ok || (meta.ExpireAt != 0 && meta.ExpireAt <= NowMs()) {
		return Current{}, pk
	}
	entry, ok := n.Ctl.Map().SchemeByID(meta.Scheme)
	return Current{Exists: ok, Meta: meta, Entry: entry}, pk
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

// RetimeOp rewrites cur with a new expiry (0 = persist); an expiry in the
// past deletes the key, as Redis does.
func (n *Coordinator) RetimeOp(cur Current, key []byte, expireAt int64) *WriteOp {
	if expireAt != 0 && expireAt <= NowMs() {
		return &WriteOp{Key: key, Del: true, Entry: cur.Entry}
	}
	return &WriteOp{Key: key, Value: cur.Value, ExpireAt: expireAt, Entry: cur.Entry, Shrinks: true}
}

// FlushStores empties the stores, and runs also (what the node keeps
// outside them), holding every inflight shard lock.
func (n *Coordinator) FlushStores(also func()) {
	for i := range n.Inflight.shards {
		n.Inflight.shards[i].Mu.Lock()
	}
	defer func() {
		for i := range n.Inflight.shards {
			n.Inflight.shards[i].Mu.Unlock()
		}
	}()
	n.Primary.Clear()
	n.Pieces.Clear()
	n.Deletions.flush.Add(1)
	also()
	n.Stats.detachedValues.Clear()
}
