package server

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/store"
)

// This file is the "metadata first" half of recovery (Ring §5.5, issue 4):
// a shard's new coordinator writes, for every key it recovers, a stub
// primary record (version, scheme, expiry, and for rep the value's CRC32C)
// and serves the shard at once. A stub's value is fetched when something
// needs it: a read or a write of the key fetches it first (a rep replica
// whose CRC32C matches, or a split decode from any k shards), and a
// background pass fills the rest. So the shard is unavailable for the time
// it takes to list the pieces, not to copy or decode every value.

// recordStub flags a primary record whose value recovery has not fetched
// yet (store.Meta.Flags of primary records).
const recordStub uint8 = 1

// isStub says whether a primary record is a stub.
func isStub(m store.Meta) bool { return m.Flags&recordStub != 0 }

// stubWorkers is how many stubs the background pass fills at once.
const stubWorkers = 16

// writeStub records key's recovered version as a stub.
func (n *Node) writeStub(key []byte, c *candidate) error {
	meta := store.Meta{Version: c.version, ExpireAt: c.expireAt, Scheme: c.scheme, Flags: recordStub, Aux: c.crc}
	n.clock.observe(c.version)
	if _, err := n.primary.PutIfNewer(key, nil, meta); err != nil {
		return fmt.Errorf("server: recovering %q: %w", key, err)
	}
	return nil
}

// fillStub fetches the value of key's stub record (meta) and, unless a
// write replaced the stub meanwhile, stores it as a full record. It returns
// the value and the full record's metadata.
func (n *Node) fillStub(ctx context.Context, key []byte, meta store.Meta) ([]byte, store.Meta, error) {
	m := n.ctl.Map()
	entry, ok := m.SchemeByID(meta.Scheme)
	if !ok {
		return nil, meta, fmt.Errorf("server: key %q uses unknown scheme id %d", key, meta.Scheme)
	}
	full := meta
	full.Flags &^= recordStub
	var value, stored []byte
	var err error
	switch entry.Spec.Kind {
	case scheme.Rep:
		value, err = n.fetchReplica(ctx, m, key, meta, entry)
		stored = value
	case scheme.Split:
		value, err = n.gatherSplit(ctx, m, key, meta, entry, false)
		full.Aux = uint32(len(value))
	default:
		err = fmt.Errorf("server: key %q: scheme %s has no copy to recover from", key, entry.Name())
	}
	if err != nil {
		return nil, meta, err
	}
	s := n.inflight.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := n.primary.Meta(key); ok && cur.Version == meta.Version && isStub(cur) {
		if err := n.primary.Put(key, stored, full); err != nil {
			return nil, meta, err
		}
		if entry.Spec.Kind == scheme.Split {
			n.stats.splitBytes(meta.Scheme).Add(int64(full.Aux))
		}
	}
	return value, full, nil
}

// fetchReplica returns a rep value at meta's version: a replica whose
// CRC32C is meta.Aux, from this node's own pieces (a former replica holder
// that became coordinator keeps one) or from a holder.
func (n *Node) fetchReplica(ctx context.Context, m *cluster.Map, key []byte, meta store.Meta, entry cluster.SchemeEntry) ([]byte, error) {
	ref := pieceRef{Key: key, Scheme: entry.ID, Version: meta.Version}
	if data, err := n.loadPiece(ref); err == nil && checksum(data) == meta.Aux {
		return data, nil
	}
	targets, err := pieceTargets(m, key, entry.Spec)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		data, err := n.getPiece(ctx, t.node, ref)
		if err == nil && checksum(data) == meta.Aux {
			return data, nil
		}
	}
	return nil, fmt.Errorf("server: key %q: no replica of version %d passes its checksum", key, meta.Version)
}

// fillStubs fills, in the background of a recovered shard, the stubs of
// keys that no read or write has filled yet.
func (n *Node) fillStubs(ctx context.Context, keys []string) {
	var filled atomic.Int64
	err := forEach(ctx, len(keys), stubWorkers, func(ctx context.Context, i int) error {
		key := []byte(keys[i])
		if meta, ok := n.primary.Meta(key); ok && isStub(meta) {
			if _, _, err := n.fillStub(ctx, key, meta); err != nil {
				n.log.Warn("recovery: a key's value could not be fetched", "key", keys[i], "err", err)
				return nil
			}
			filled.Add(1)
		}
		return nil
	})
	if err != nil {
		n.log.Warn("recovery: filling values stopped", "err", err)
	}
	n.log.Info("recovery: values fetched", "keys", filled.Load())
}
