package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/store"
)

// This file is the "metadata first" half of recovery (Ring §5.5, issue 4):
// a shard's new coordinator writes, for every key it recovers, a stub
// primary record (version, scheme, expiry, and for rep the value's CRC32C)
// and serves the shard at once. A stub's value is fetched when something
// needs it: a read or a write of the key fetches it first (a rep replica
// whose CRC32C matches, or a split decode from any k shards). The rest
// follow in the background: a rep stub is a lost copy, so the shard's
// rebuild restores it in bulk with the other lost pieces (fillRepStubs),
// counted in its progress and paced by its rate; split stubs hold no bytes,
// and a background pass (fillStubs) checks their shards and records their
// length. So the shard is unavailable for the time it takes to list the
// pieces, not to copy or decode every value.

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
		if errors.Is(err, errNoReplica) {
			return n.loseStub(key, meta, entry, err)
		}
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
	if _, err := n.completeStub(key, meta, entry, stored, full); err != nil {
		return nil, meta, err
	}
	return value, full, nil
}

// completeStub replaces key's stub record meta with the full record (stored
// bytes, full meta) unless a write replaced the stub meanwhile, and reports
// whether it did.
func (n *Node) completeStub(key []byte, meta store.Meta, entry cluster.SchemeEntry, stored []byte, full store.Meta) (bool, error) {
	s := n.inflight.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := n.primary.Meta(key)
	if !ok || cur.Version != meta.Version || !isStub(cur) {
		return false, nil
	}
	if err := n.primary.Put(key, stored, full); err != nil {
		return false, err
	}
	if entry.Spec.Kind == scheme.Split {
		n.stats.splitBytes(meta.Scheme).Add(int64(full.Aux))
	}
	return true, nil
}

// stubFetchKeys bounds the keys of one GetPieces request of fillRepStubs.
const stubFetchKeys = 128

// fillRepStubs fills the rep stubs among items in bulk, for the rebuild: a
// stub's value is this node's own replica when it holds one (the node that
// took a failed coordinator's shard over was usually its next replica
// holder), else it is fetched with one GetPieces request per holder for up
// to stubFetchKeys keys; a holder the listing shows lacking the piece
// (need) is not asked. It returns the bytes restored. A stub it could not
// fill stays one, for copyBatch to fill key by key (fillStub).
func (n *Node) fillRepStubs(ctx context.Context, m *cluster.Map, items []rebuildItem, need pieceFilter) int {
	bytes := 0
	for len(items) > 0 {
		chunk := items[:min(len(items), stubFetchKeys)]
		items = items[len(chunk):]
		bytes += n.fillStubChunk(ctx, m, chunk, need)
	}
	return bytes
}

// stubWant is a rep stub that fillStubChunk fills.
type stubWant struct {
	key   []byte
	meta  store.Meta
	entry cluster.SchemeEntry
}

// fill completes w's stub with value if value is the stub's (its CRC32C)
// and reports whether it stored it.
func (n *Node) fill(w stubWant, value []byte) bool {
	full := w.meta
	full.Flags &^= recordStub
	if checksum(value) != w.meta.Aux {
		return false
	}
	stored, err := n.completeStub(w.key, w.meta, w.entry, value, full)
	return stored && err == nil
}

// fillStubChunk is fillRepStubs for one chunk.
func (n *Node) fillStubChunk(ctx context.Context, m *cluster.Map, chunk []rebuildItem, need pieceFilter) int {
	bytes := 0
	byNode := map[cluster.NodeID]int{}
	var reqs []peerReq
	var wants [][]stubWant
	for _, it := range chunk {
		meta, ok := n.primary.Meta(it.key)
		entry, known := m.SchemeByID(meta.Scheme)
		if !ok || !known || !isStub(meta) || entry.Spec.Kind != scheme.Rep {
			continue
		}
		w := stubWant{key: it.key, meta: meta, entry: entry}
		data, err := n.loadPiece(pieceRef{Key: it.key, Scheme: entry.ID, Version: meta.Version})
		if err == nil && n.fill(w, data) {
			bytes += len(data)
			continue // this node held the replica (of that very value)
		}
		holder, ok := stubHolder(n.id, m, it.key, entry, meta.Version, need)
		if !ok {
			continue
		}
		i, seen := byNode[holder.ID]
		if !seen {
			i = len(reqs)
			byNode[holder.ID] = i
			reqs = append(reqs, peerReq{node: holder, typ: msgGetPieces})
			wants = append(wants, nil)
		}
		wants[i] = append(wants[i], w)
	}
	for i := range reqs {
		refs := make([]pieceRef, len(wants[i]))
		for j, w := range wants[i] {
			refs[j] = pieceRef{Key: w.key, Scheme: w.entry.ID, Version: w.meta.Version}
		}
		reqs[i].payload = encodeGetPieces(refs)
	}
	replies, errs := n.callEach(ctx, reqs)
	for i := range reqs {
		if errs[i] != nil {
			continue // copyBatch fills these key by key
		}
		slots, err := decodeGetPiecesResp(replies[i], len(wants[i]))
		if err != nil {
			continue
		}
		for j, slot := range slots {
			if slot.Status == pieceFound && n.fill(wants[i][j], slot.Data) {
				bytes += len(slot.Data)
			}
		}
	}
	return bytes
}

// stubHolder picks the node to fetch key's replica from: the first live
// holder other than this node that the rebuild's listing does not show
// lacking it.
func stubHolder(self cluster.NodeID, m *cluster.Map, key []byte, entry cluster.SchemeEntry, v uint64, need pieceFilter) (cluster.Node, bool) {
	targets, err := pieceTargets(m, key, entry.Spec)
	if err != nil {
		return cluster.Node{}, false
	}
	for _, t := range targets {
		if t.node.ID != self && t.node.State == cluster.Up && !need(key, t, v) {
			return t.node, true
		}
	}
	return cluster.Node{}, false
}

// fetchReplica returns a rep value at meta's version: a replica whose
// CRC32C is meta.Aux, from this node's own pieces (a former replica holder
// that became coordinator keeps one) or from a holder. When every copy's
// node answered and none holds that value, the error wraps errNoReplica.
func (n *Node) fetchReplica(ctx context.Context, m *cluster.Map, key []byte, meta store.Meta, entry cluster.SchemeEntry) ([]byte, error) {
	ref := pieceRef{Key: key, Scheme: entry.ID, Version: meta.Version}
	data, err := n.loadPiece(ref)
	if data, err = replicaOf(data, err, meta.Aux); err == nil {
		return data, nil
	}
	fails := []error{fmt.Errorf("this node: %w", err)}
	targets, err := pieceTargets(m, key, entry.Spec)
	if err != nil {
		return nil, err
	}
	// The shard's other live nodes too: one that stood in for a replica
	// holder may keep the only copy while that holder, readmitted empty,
	// waits for its rebuild.
	for _, node := range otherPlacementNodes(m, key, targets) {
		if node.ID != n.id {
			targets = append(targets, target{index: -1, node: node})
		}
	}
	for _, t := range targets {
		data, err := n.getPiece(ctx, t.node, ref)
		data, err = replicaOf(data, err, meta.Aux)
		switch {
		case err == nil:
			return data, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		fails = append(fails, fmt.Errorf("node %s: %w", t.node.PeerAddr, err))
	}
	err = errors.Join(fails...)
	if !slices.ContainsFunc(fails, func(e error) bool { return !isLoss(e) }) {
		err = fmt.Errorf("%w: %w", errNoReplica, err)
	}
	return nil, fmt.Errorf("server: key %q: no replica of version %d could be read with its checksum: %w",
		key, meta.Version, err)
}

// errNoReplica says that every node that should hold a copy of a rep value
// answered, and none holds it: the value is gone from the live nodes.
var errNoReplica = errors.New("no copy of the value is left")

// replicaOf checks a fetched replica against the wanted value's CRC32C: a
// copy of another version is as good as none (errOtherVersion).
func replicaOf(data []byte, err error, crc uint32) ([]byte, error) {
	if err == nil && checksum(data) != crc {
		return nil, errOtherVersion
	}
	return data, err
}

// errStubReplaced is a stub fetch that found the stub written over or
// deleted meanwhile: read the key again.
var errStubReplaced = fmt.Errorf("%w: the stub was written over", errPieceGone)

// loseStub handles a stub whose value no replica holds any more (cause
// wraps errNoReplica): the key is reported lost, naming it, rather than
// retried for ever. A stub that changed meanwhile was not lost: one filled
// by another fetch is returned, and one written over answers
// errStubReplaced.
func (n *Node) loseStub(key []byte, stub store.Meta, entry cluster.SchemeEntry, cause error) ([]byte, store.Meta, error) {
	s := n.inflight.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	val, cur, ok := n.primary.Get(key, nil)
	switch {
	case ok && cur.Version == stub.Version && !isStub(cur):
		return val, cur, nil
	case !ok || cur.Version != stub.Version:
		return nil, stub, errStubReplaced
	}
	lost := LostKey{Key: string(key), Scheme: entry.Name(), Lost: entry.Spec.Nodes(), Total: entry.Spec.Nodes()}
	n.lost.add(lost)
	n.log.Warn("recovery: no replica of a key's value is left; reported lost",
		"key", string(key), "version", stub.Version, "err", cause)
	return nil, stub, lost.err()
}

// fillStubs fills, in the background of a recovered shard, the split stubs
// of keys that no read or write has filled yet, paced by --rebuild-share:
// it only records their length (a read fills a stub first anyway), so it
// must not cost clients more than the rebuild does.
func (n *Node) fillStubs(ctx context.Context, keys []string) {
	var filled atomic.Int64
	err := forEach(ctx, len(keys), stubWorkers, func(ctx context.Context, i int) error {
		key := []byte(keys[i])
		began := time.Now()
		defer func() { n.rest(ctx, time.Since(began)) }() // paced as the rebuild is
		if meta, ok := n.primary.Meta(key); ok && isStub(meta) {
			if _, _, err := n.fillStub(ctx, key, meta); err != nil {
				if ctx.Err() != nil {
					return ctx.Err() // stopped: reported once below
				}
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
