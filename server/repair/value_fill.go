package repair

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
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

// stubWorkers is how many stubs the background pass fills at once.
const stubWorkers = 16

// writeStub records key's recovered version as a stub.
func (n *Repairer) writeStub(key []byte, c *candidate) error {
	meta := store.Meta{Version: c.version, ExpireAt: c.expireAt, Scheme: c.scheme, Flags: core.RecordStub, Aux: c.crc}
	n.Versions.Observe(c.version)
	if _, err := n.Primary.PutIfNewer(key, nil, meta); err != nil {
		return fmt.Errorf("server: recovering %q: %w", key, err)
	}
	return nil
}

// stubFetchKeys bounds the keys of one GetPieces request of fillRepStubs.
const stubFetchKeys = 128

// fillRepStubs fills the stubs of copies (rep) among items in bulk, for the rebuild: a
// stub's value is this node's own replica when it holds one (the node that
// took a failed coordinator's shard over was usually its next replica
// holder), else it is fetched with one GetPieces request per holder for up
// to stubFetchKeys keys; a holder the listing shows lacking the piece
// (need) is not asked. It returns the bytes restored. A stub it could not
// fill stays one, for copyBatch to fill key by key (fillStub).
func (n *Repairer) fillRepStubs(ctx context.Context, m *cluster.Map, items []rebuildItem, need core.PieceFilter) int {
	bytes := 0
	for len(items) > 0 {
		chunk := items[:min(len(items), stubFetchKeys)]
		items = items[len(chunk):]
		bytes += n.fillStubChunk(ctx, m, chunk, need)
	}
	return bytes
}

// stubWant is a stub of copies that fillStubChunk fills.
type stubWant struct {
	key  []byte
	meta store.Meta
	sch  kind.Scheme
}

// fill completes w's stub with value if value is the stub's (its CRC32C)
// and reports whether it stored it.
func (n *Repairer) fill(w stubWant, value []byte) bool {
	full := w.meta
	full.Flags &^= core.RecordStub
	if bigcopy.Checksum(value) != w.meta.Aux {
		return false
	}
	stored, err := n.CompleteStub(w.key, w.meta, w.sch, value, full)
	return stored && err == nil
}

// fillStubChunk is fillRepStubs for one chunk.
func (n *Repairer) fillStubChunk(ctx context.Context, m *cluster.Map, chunk []rebuildItem, need core.PieceFilter) int {
	bytes := 0
	byNode := map[cluster.NodeID]int{}
	var reqs []core.PeerReq
	var wants [][]stubWant
	t := n.Schemes(m)
	for _, it := range chunk {
		meta, ok := n.Primary.Meta(it.key)
		sch, known := t.Lookup(meta.Scheme)
		if !ok || !known || !core.IsStub(meta) || sch.Traits().Rebuild != kind.RebuildCopy {
			continue
		}
		w := stubWant{key: it.key, meta: meta, sch: sch}
		data, err := n.LoadPiece(peer.PieceRef{Key: it.key, Shard: kind.ShardID(m, it.key), Scheme: meta.Scheme, Version: meta.Version})
		if err == nil && n.fill(w, data) {
			bytes += len(data)
			continue // this node held the replica (of that very value)
		}
		holder, ok := stubHolder(n.NodeID, m, it.key, sch, meta.Version, need)
		if !ok {
			continue
		}
		i, seen := byNode[holder.ID]
		if !seen {
			i = len(reqs)
			byNode[holder.ID] = i
			reqs = append(reqs, core.PeerReq{Node: holder, Typ: peer.MsgGetPieces})
			wants = append(wants, nil)
		}
		wants[i] = append(wants[i], w)
	}
	for i := range reqs {
		refs := make([]peer.PieceRef, len(wants[i]))
		for j, w := range wants[i] {
			refs[j] = peer.PieceRef{Key: w.key, Shard: kind.ShardID(m, w.key), Scheme: w.meta.Scheme, Version: w.meta.Version}
		}
		reqs[i].Payload = peer.EncodeGetPieces(refs)
	}
	replies, errs := n.CallEach(ctx, reqs)
	for i := range reqs {
		if errs[i] != nil {
			continue // copyBatch fills these key by key
		}
		slots, err := peer.DecodeGetPiecesResp(replies[i], len(wants[i]))
		if err != nil {
			continue
		}
		for j, slot := range slots {
			if slot.Status == peer.PieceFound && n.fill(wants[i][j], slot.Data) {
				bytes += len(slot.Data)
			}
		}
	}
	return bytes
}

// stubHolder picks the node to fetch key's replica from: the first live
// holder other than this node that the rebuild's listing does not show
// lacking it.
func stubHolder(self cluster.NodeID, m *cluster.Map, key []byte, sch kind.Scheme, v uint64, need core.PieceFilter) (cluster.Node, bool) {
	targets, err := sch.Targets(m, key)
	if err != nil {
		return cluster.Node{}, false
	}
	for _, t := range targets {
		if t.Node.ID != self && t.Node.State == cluster.Up && !need(key, t, v) {
			return t.Node, true
		}
	}
	return cluster.Node{}, false
}

// fillStubs fills, in the background of a recovered shard, the split stubs
// of keys that no read or write has filled yet, paced by --rebuild-share:
// it only records their length (a read fills a stub first anyway), so it
// must not cost clients more than the rebuild does.
func (n *Repairer) fillStubs(ctx context.Context, keys []string) {
	var filled atomic.Int64
	err := core.ForEach(ctx, len(keys), stubWorkers, func(ctx context.Context, i int) error {
		key := []byte(keys[i])
		began := time.Now()
		defer func() { core.Rest(ctx, time.Since(began), n.Cfg.RebuildShare) }() // paced as the rebuild is
		if meta, ok := n.Primary.Meta(key); ok && core.IsStub(meta) {
			if _, _, err := n.FillStub(ctx, key, meta); err != nil {
				if ctx.Err() != nil {
					return ctx.Err() // stopped: reported once below
				}
				n.Log.Warn("recovery: a key's value could not be fetched", "key", keys[i], "err", err)
				return nil
			}
			filled.Add(1)
		}
		return nil
	})
	if err != nil {
		n.Log.Warn("recovery: filling values stopped", "err", err)
	}
	n.Log.Info("recovery: values fetched", "keys", filled.Load())
}
