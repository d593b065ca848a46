package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// This file is the record side of stubs (server/repair/value_fill.go fills them in
// bulk): a primary record whose value recovery has not fetched yet, how a
// read or a write fills one (fillStub, completeStub), and a stub whose
// value is gone for good (loseStub).

// RecordStub flags a primary record whose value recovery has not fetched
// yet (store.Meta.Flags of primary records).
const RecordStub uint8 = 1

// IsStub says whether a primary record is a stub.
func IsStub(m store.Meta) bool { return m.Flags&RecordStub != 0 }

// FillStub fetches the value of key's stub record (meta) through its
// scheme (kind.Scheme.Fill) and, unless a write replaced the stub
// meanwhile, stores it as a full record. It returns the value and the full
// record's metadata. A stub none of whose copies is left is reported lost.
func (n *Coordinator) FillStub(ctx context.Context, key []byte, meta store.Meta) ([]byte, store.Meta, error) {
	sch, ok := n.Schemes(n.Ctl.Map()).Lookup(meta.Scheme)
	if !ok {
		return nil, meta, fmt.Errorf("server: key %q uses unknown scheme id %d", key, meta.Scheme)
	}
	value, stored, aux, err := sch.Fill(ctx, key, meta)
	if errors.Is(err, kind.ErrNoCopy) {
		return n.loseStub(key, meta, sch.Entry(), err)
	}
	if err != nil {
		return nil, meta, err
	}
	full := meta
	full.Flags &^= RecordStub
	full.Aux = aux
	if _, err := n.CompleteStub(key, meta, sch, stored, full); err != nil {
		return nil, meta, err
	}
	return value, full, nil
}

// CompleteStub replaces key's stub record meta with the full record (stored
// bytes, full meta) of scheme sch unless a write replaced the stub
// meanwhile, and reports whether it did.
func (n *Coordinator) CompleteStub(key []byte, meta store.Meta, sch kind.Scheme, stored []byte, full store.Meta) (bool, error) {
	s := n.Inflight.Shard(key)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	cur, ok := n.Primary.Meta(key)
	if !ok || cur.Version != meta.Version || !IsStub(cur) {
		return false, nil
	}
	if err := n.Primary.Put(key, stored, full); err != nil {
		return false, err
	}
	if d := sch.Detached(full); d != 0 {
		n.Stats.DetachedBytes(meta.Scheme).Add(d)
	}
	return true, nil
}

// ErrStubReplaced is a stub fetch that found the stub written over or
// deleted meanwhile: read the key again.
var ErrStubReplaced = fmt.Errorf("%w: the stub was written over", kind.ErrPieceGone)

// loseStub handles a stub whose value no replica holds any more (cause
// wraps kind.ErrNoCopy): the key is reported lost, naming it, rather than
// retried for ever. A stub that changed meanwhile was not lost: one filled
// by another fetch is returned, and one written over answers
// errStubReplaced.
func (n *Coordinator) loseStub(key []byte, stub store.Meta, entry cluster.SchemeEntry, cause error) ([]byte, store.Meta, error) {
	s := n.Inflight.Shard(key)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	val, cur, ok := n.Primary.Get(key, nil)
	switch {
	case ok && cur.Version == stub.Version && !IsStub(cur):
		return val, cur, nil
	case !ok || cur.Version != stub.Version:
		return nil, stub, ErrStubReplaced
	}
	lost := kind.LostKey{Key: string(key), Scheme: entry.Name(), Lost: entry.Spec.Nodes(), Total: entry.Spec.Nodes()}
	n.Lost.Add(lost)
	n.Log.Warn("recovery: no replica of a key's value is left; reported lost",
		"key", string(key), "version", stub.Version, "err", cause)
	return nil, stub, lost.Err()
}
