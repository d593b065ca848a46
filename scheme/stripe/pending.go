package stripe

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
)

// This file is the lazy half of metadata-first recovery of stripe keys
// (Ring §5.5, decision 0003). A recovering coordinator decodes at once
// only the lost chunks it must (recover.go); the sealed chunks
// whose manifests name only unknown keys of the shard stay pending, and
// the shard is served. Before any command on a key runs, the pending
// chunks whose manifests carry the key's tag are decoded and the key's
// newest version re-homed (RestoreKeys); a background pass restores the
// rest, and the coordinator then proposes StripesRestored, which lets the
// rebuild drop the lost chunks from parity.
//
// A restore decodes a closed set of chunks: those carrying any tag of the
// chunks it decodes. Every version and fragment of a key it re-homes is
// in that set, so a key is restored once, whole, at its newest version,
// and no pending chunk names a key after a command on it has run (a
// deleted key never comes back).

// pendingChunk is a lost sealed chunk whose decode recovery deferred.
type pendingChunk struct {
	lp   lostPosition
	id   ChunkID
	want uint32   // the seq it is sealed into parity at
	tags []uint32 // its manifest's tags in the shard's slots
}

// pendingKey names a pending chunk: its scheme and id.
type pendingKey struct {
	scheme uint16
	id     ChunkID
}

func (pc *pendingChunk) key() pendingKey { return pendingKey{pc.lp.entry.ID, pc.id} }

// pendingShard is one shard's pending chunks, and their tags.
type pendingShard struct {
	sh     cluster.Shard
	chunks map[pendingKey]*pendingChunk
	byTag  map[uint32][]*pendingChunk
	// lost holds the tags of the shard's chunks lost beyond tolerance: a
	// key with one of them is not restored, as its newest version may
	// have been in the lost chunk (it answers -LOST by its tag).
	lost map[uint32]bool
}

// pendingChunks is a node's pending chunks, by shard.
type pendingChunks struct {
	// work is held by a restore (its decodes and re-homes) and by
	// install, so restores of one node never overlap and a recovery
	// that starts again waits for the restore in flight.
	work sync.Mutex
	mu   sync.RWMutex // guards shards
	// count is the pending chunks of every shard: the fast path of
	// RestoreKeys when it is zero.
	count  atomic.Int64
	shards map[int]*pendingShard
}

// install makes chunks sh's pending chunks, replacing those of an earlier
// recovery of sh; lost holds the tags of the chunks it lost (pendingShard).
func (p *pendingChunks) install(sh cluster.Shard, chunks []*pendingChunk, lost map[uint32]bool) {
	p.work.Lock()
	defer p.work.Unlock()
	if lost == nil {
		lost = map[uint32]bool{}
	}
	ps := &pendingShard{sh: sh, chunks: map[pendingKey]*pendingChunk{}, byTag: map[uint32][]*pendingChunk{}, lost: lost}
	for _, pc := range chunks {
		ps.chunks[pc.key()] = pc
		for _, t := range pc.tags {
			ps.byTag[t] = append(ps.byTag[t], pc)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shards == nil {
		p.shards = map[int]*pendingShard{}
	}
	if old := p.shards[sh.ID]; old != nil {
		p.count.Add(-int64(len(old.chunks)))
	}
	delete(p.shards, sh.ID)
	if len(chunks) > 0 {
		p.shards[sh.ID] = ps
		p.count.Add(int64(len(ps.chunks)))
	}
}

// pending says whether shard has chunks pending.
func (p *pendingChunks) pending(shard int) bool {
	if p.count.Load() == 0 {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.shards[shard] != nil
}

// carries says whether a pending chunk of shard carries tag.
func (p *pendingChunks) carries(shard int, tag uint32) bool {
	if p.count.Load() == 0 {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	ps := p.shards[shard]
	return ps != nil && len(ps.byTag[tag]) > 0
}

// closure returns shard's pending chunks that carry one of tags, and
// those that carry one of theirs, until no other chunk carries any, with
// the shard's lost tags (pendingShard.lost). The caller holds work, which
// guards lost.
func (p *pendingChunks) closure(shard int, tags []uint32) (cluster.Shard, []*pendingChunk, map[uint32]bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ps := p.shards[shard]
	if ps == nil {
		return cluster.Shard{}, nil, nil
	}
	seen := map[uint32]bool{}
	picked := map[pendingKey]bool{}
	var out []*pendingChunk
	for len(tags) > 0 {
		t := tags[len(tags)-1]
		tags = tags[:len(tags)-1]
		if seen[t] {
			continue
		}
		seen[t] = true
		for _, pc := range ps.byTag[t] {
			if !picked[pc.key()] {
				picked[pc.key()] = true
				out = append(out, pc)
				tags = append(tags, pc.tags...)
			}
		}
	}
	return ps.sh, out, ps.lost
}

// firstTags returns the tags of shard's first n pending chunks in
// (scheme, list, position, stripe) order, for a background pass: chunks
// of one position at nearby stripe numbers are read together.
func (p *pendingChunks) firstTags(shard, n int) []uint32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ps := p.shards[shard]
	if ps == nil {
		return nil
	}
	keys := make([]pendingKey, 0, len(ps.chunks))
	for k := range ps.chunks {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, comparePending)
	var out []uint32
	for _, k := range keys[:min(n, len(keys))] {
		out = append(out, ps.chunks[k].tags...)
	}
	return out
}

// comparePending orders pending chunks by scheme, list, position and
// stripe number.
func comparePending(a, b pendingKey) int {
	return cmp.Or(cmp.Compare(a.scheme, b.scheme), cmp.Compare(a.id.List, b.id.List),
		cmp.Compare(a.id.Position, b.id.Position), cmp.Compare(a.id.Stripe, b.id.Stripe))
}

// remove drops chunks from shard's pending chunks.
func (p *pendingChunks) remove(shard int, chunks []*pendingChunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.shards[shard]
	if ps == nil {
		return
	}
	for _, pc := range chunks {
		if _, ok := ps.chunks[pc.key()]; !ok {
			continue
		}
		delete(ps.chunks, pc.key())
		p.count.Add(-1)
		for _, t := range pc.tags {
			ps.byTag[t] = slices.DeleteFunc(ps.byTag[t], func(o *pendingChunk) bool { return o == pc })
			if len(ps.byTag[t]) == 0 {
				delete(ps.byTag, t)
			}
		}
	}
	if len(ps.chunks) == 0 {
		delete(p.shards, shard)
	}
}

// chunks counts the pending chunks (INFO stripe_chunks_pending).
func (p *pendingChunks) chunks() int64 { return p.count.Load() }

// RestoreKeys restores, before a command on keys runs, every pending
// chunk that may hold one of them.
func (eng *Engine) RestoreKeys(ctx context.Context, keys [][]byte) error {
	if eng.pending.count.Load() == 0 {
		return nil
	}
	m := eng.host.Map()
	for _, k := range keys {
		if shard, tag, ok := eng.pendingTag(m, k); ok {
			eng.host.RestoredOnDemand()
			if err := eng.restoreTags(ctx, shard, []uint32{tag}); err != nil {
				return err
			}
		}
	}
	return nil
}

// KeyPending says whether key may be in a pending chunk.
func (eng *Engine) KeyPending(m *cluster.Map, key []byte) bool {
	_, _, ok := eng.pendingTag(m, key)
	return ok
}

// pendingTag returns key's shard and tag if a pending chunk of the shard
// carries the tag.
func (eng *Engine) pendingTag(m *cluster.Map, key []byte) (int, uint32, bool) {
	if eng.pending.count.Load() == 0 {
		return 0, 0, false
	}
	sh := m.ShardOf(keyslot.Of(key))
	if sh == nil {
		return 0, 0, false
	}
	tag := keyslot.Tag(key)
	return sh.ID, tag, eng.pending.carries(sh.ID, tag)
}

// RestoreAll restores every pending chunk of this node: what a command
// that lists or drops every key (SCAN, KEYS, DBSIZE, FLUSHALL) needs
// first.
func (eng *Engine) RestoreAll(ctx context.Context) error {
	if eng.pending.count.Load() == 0 {
		return nil
	}
	eng.pending.mu.RLock()
	shards := make([]int, 0, len(eng.pending.shards))
	for id := range eng.pending.shards {
		shards = append(shards, id)
	}
	eng.pending.mu.RUnlock()
	for _, id := range shards {
		if err := eng.RestoreShard(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// restoreBatch is how many pending chunks a background pass restores at
// once (with the chunks that share their keys' tags).
const restoreBatch = 64

// RestoreShard restores every pending chunk of shard.
func (eng *Engine) RestoreShard(ctx context.Context, shard int) error {
	for eng.pending.pending(shard) {
		if err := eng.restoreTags(ctx, shard, eng.pending.firstTags(shard, restoreBatch)); err != nil {
			return err
		}
	}
	return nil
}

// restoreTags decodes the pending chunks of shard that carry one of tags
// (and their closure), re-homes the newest version of each key of the
// shard's slots found in them, and drops them from the pending chunks.
// Beyond a scheme's tolerance a chunk that cannot be decoded is lost: its
// keys answer -LOST by their tags, and none of them is restored from the
// other chunks (its newest version may have been in the lost one).
func (eng *Engine) restoreTags(ctx context.Context, shard int, tags []uint32) error {
	eng.pending.work.Lock()
	defer eng.pending.work.Unlock()
	sh, chunks, lost := eng.pending.closure(shard, tags)
	if len(chunks) == 0 {
		return nil // restored meanwhile
	}
	m := eng.host.Map()
	found := map[uint16][]Object{}
	pre := eng.prefetchPending(ctx, m, chunks)
	for _, pc := range chunks {
		b, err := eng.decodeWith(ctx, m, pre[pc.key().position()], pc)
		if err != nil && beyondTolerance(m, pc.lp) && ctx.Err() == nil {
			eng.abandonPosition(pc.lp, "restore", err)
			eng.reportLostTags(m, pc.lp, pc.tags)
			for _, t := range pc.tags {
				lost[t] = true
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := keepShardObjects(found, pc.lp, sh, b); err != nil {
			return err
		}
	}
	dropTagged(found, lost)
	if err := eng.host.Rehome(ctx, m, assembled(found)); err != nil {
		return err
	}
	eng.pending.remove(shard, chunks)
	eng.stats.ChunksRestored.Add(int64(len(chunks)))
	return nil
}

// position names a lost position of a scheme.
func (k pendingKey) position() pendingKey {
	k.id.Stripe = 0
	return k
}

// prefetchPending reads, for each lost position with prefetchFrom or more
// of chunks, their stripes a page at a time (prefetchStripes, over the
// chunks' range of stripe numbers). A position whose read fails is
// decoded chunk by chunk.
func (eng *Engine) prefetchPending(ctx context.Context, m *cluster.Map, chunks []*pendingChunk) map[pendingKey]*prefetch {
	groups := map[pendingKey][]*pendingChunk{}
	for _, pc := range chunks {
		groups[pc.key().position()] = append(groups[pc.key().position()], pc)
	}
	out := map[pendingKey]*prefetch{}
	for pos, group := range groups {
		if len(group) < prefetchFrom {
			continue
		}
		lp := group[0].lp
		holders, err := parityHolders(m, lp.entry.Spec, lp.list)
		if err != nil {
			continue
		}
		lo, hi := uint32(math.MaxUint32), uint32(0)
		for _, pc := range group {
			lo, hi = min(lo, pc.id.Stripe), max(hi, pc.id.Stripe)
		}
		if pre, err := eng.prefetchStripes(ctx, m, lp, holders, lo, hi); err == nil {
			out[pos] = pre
		}
	}
	return out
}

// decodeWith returns pending chunk pc: from its hybrid list's replica
// holder if it has it (a copy, RE-Store §IV-D), else decoded from
// prefetched stripes, or, if there are none or the stripe was written to
// since, from the stripe as it is now (decodePending).
func (eng *Engine) decodeWith(ctx context.Context, m *cluster.Map, pre *prefetch, pc *pendingChunk) ([]byte, error) {
	holders, err := parityHolders(m, pc.lp.entry.Spec, pc.lp.list)
	if err != nil {
		return nil, err
	}
	b, ok := eng.replicaChunk(ctx, m, pc.lp, holders, pre, pc.id, pc.want)
	if !ok {
		b, err = eng.decodeSealed(pc.lp, pre, pc.id, pc.want, func() ([]byte, error) { return eng.decodePending(ctx, m, pc) })
	}
	return eng.checkedChunk(ctx, m, pc.lp, holders, pc.id, false, pc.want, b, err)
}

// decodePending decodes a pending chunk from its stripe as it is now,
// trying a few times while updates to the stripe are in flight. (A
// chunk the position's current node holds is never pending: recovery
// skips those, and a node that takes a position over avoids the stripe
// numbers still in parity.)
func (eng *Engine) decodePending(ctx context.Context, m *cluster.Map, pc *pendingChunk) ([]byte, error) {
	holders, err := parityHolders(m, pc.lp.entry.Spec, pc.lp.list)
	if err != nil {
		return nil, err
	}
	var b []byte
	err = retryBusy(ctx, decodeAttempts(m, pc.lp), func() (err error) {
		b, err = eng.decodeChunk(ctx, m, pc.lp, holders, pc.id, pc.want)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stripe: decoding pending chunk %d/%d/%d of %s: %w", pc.id.List, pc.id.Position, pc.id.Stripe, pc.lp.entry.Name(), err)
	}
	return b, nil
}

// clearLocked forgets every pending chunk; the caller holds work.
func (p *pendingChunks) clearLocked() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shards = nil
	p.count.Store(0)
}
