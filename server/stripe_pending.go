package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/stripe"
)

// This file is the lazy half of metadata-first recovery of stripe keys
// (Ring §5.5, decision 0003). A recovering coordinator decodes at once
// only the lost chunks it must (stripe_recover.go); the sealed chunks
// whose manifests name only unknown keys of the shard stay pending, and
// the shard is served. Before any command on a key runs, the pending
// chunks whose manifests carry the key's tag are decoded and the key's
// newest version re-homed (restoreKeys); a background pass restores the
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
	id   stripe.ChunkID
	want uint32   // the seq it is sealed into parity at
	tags []uint32 // its manifest's tags in the shard's slots
}

// pendingKey names a pending chunk: its scheme and id.
type pendingKey struct {
	scheme uint16
	id     stripe.ChunkID
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

// stripePending is a node's pending chunks, by shard.
type stripePending struct {
	// work is held by a restore (its decodes and re-homes) and by
	// install, so restores of one node never overlap and a recovery
	// that starts again waits for the restore in flight.
	work sync.Mutex
	mu   sync.RWMutex // guards shards
	// count is the pending chunks of every shard: the fast path of
	// restoreKeys when it is zero.
	count  atomic.Int64
	shards map[int]*pendingShard
}

// install makes chunks sh's pending chunks, replacing those of an earlier
// recovery of sh; lost holds the tags of the chunks it lost (pendingShard).
func (p *stripePending) install(sh cluster.Shard, chunks []*pendingChunk, lost map[uint32]bool) {
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
func (p *stripePending) pending(shard int) bool {
	if p.count.Load() == 0 {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.shards[shard] != nil
}

// carries says whether a pending chunk of shard carries tag.
func (p *stripePending) carries(shard int, tag uint32) bool {
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
func (p *stripePending) closure(shard int, tags []uint32) (cluster.Shard, []*pendingChunk, map[uint32]bool) {
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
func (p *stripePending) firstTags(shard, n int) []uint32 {
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
func (p *stripePending) remove(shard int, chunks []*pendingChunk) {
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
func (p *stripePending) chunks() int64 { return p.count.Load() }

// restoreKeys restores, before a command on keys runs, every pending
// chunk that may hold one of them.
func (n *Node) restoreKeys(ctx context.Context, keys [][]byte) error {
	if n.pending.count.Load() == 0 {
		return nil
	}
	m := n.ctl.Map()
	for _, k := range keys {
		if shard, tag, ok := n.pendingTag(m, k); ok {
			n.metrics.degradedRequest(degradedRestored)
			if err := n.restoreTags(ctx, shard, []uint32{tag}); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyPending says whether key may be in a pending chunk.
func (n *Node) keyPending(m *cluster.Map, key []byte) bool {
	_, _, ok := n.pendingTag(m, key)
	return ok
}

// pendingTag returns key's shard and tag if a pending chunk of the shard
// carries the tag.
func (n *Node) pendingTag(m *cluster.Map, key []byte) (int, uint32, bool) {
	if n.pending.count.Load() == 0 {
		return 0, 0, false
	}
	sh := m.ShardOf(keyslot.Of(key))
	if sh == nil {
		return 0, 0, false
	}
	tag := stripe.KeyTag(key)
	return sh.ID, tag, n.pending.carries(sh.ID, tag)
}

// restoreAll restores every pending chunk of this node: what a command
// that lists or drops every key (SCAN, KEYS, DBSIZE, FLUSHALL) needs
// first.
func (n *Node) restoreAll(ctx context.Context) error {
	if n.pending.count.Load() == 0 {
		return nil
	}
	n.pending.mu.RLock()
	shards := make([]int, 0, len(n.pending.shards))
	for id := range n.pending.shards {
		shards = append(shards, id)
	}
	n.pending.mu.RUnlock()
	for _, id := range shards {
		if err := n.restoreShard(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// restoreBatch is how many pending chunks a background pass restores at
// once (with the chunks that share their keys' tags).
const restoreBatch = 64

// restoreShard restores every pending chunk of shard.
func (n *Node) restoreShard(ctx context.Context, shard int) error {
	for n.pending.pending(shard) {
		if err := n.restoreTags(ctx, shard, n.pending.firstTags(shard, restoreBatch)); err != nil {
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
func (n *Node) restoreTags(ctx context.Context, shard int, tags []uint32) error {
	n.pending.work.Lock()
	defer n.pending.work.Unlock()
	sh, chunks, lost := n.pending.closure(shard, tags)
	if len(chunks) == 0 {
		return nil // restored meanwhile
	}
	m := n.ctl.Map()
	found := map[uint16][]stripe.Object{}
	pre := n.prefetchPending(ctx, m, chunks)
	for _, pc := range chunks {
		b, err := n.decodeWith(ctx, m, pre[pc.key().position()], pc)
		if err != nil && beyondTolerance(m, pc.lp) && ctx.Err() == nil {
			n.abandonPosition(pc.lp, "restore", err)
			n.reportLostTags(m, pc.lp, pc.tags)
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
	keys, picks := newestLive(n.schemes(m), stripeObjectCandidates(found))
	if err := n.rehomeStripes(ctx, m, keys, picks); err != nil {
		return err
	}
	n.pending.remove(shard, chunks)
	n.stats.stripeChunksRestored.Add(int64(len(chunks)))
	return nil
}

// newestLive picks each key's newest candidate (newestReadable), leaving
// out expired ones.
func newestLive(t *schemeTable, cands map[string][]*candidate) ([]string, []*candidate) {
	now := nowMs()
	var keys []string
	var picks []*candidate
	for key, cs := range cands {
		best := newestReadable(t, cs)
		if best != nil && (best.expireAt == 0 || best.expireAt > now) {
			keys, picks = append(keys, key), append(picks, best)
		}
	}
	return keys, picks
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
func (n *Node) prefetchPending(ctx context.Context, m *cluster.Map, chunks []*pendingChunk) map[pendingKey]*stripePrefetch {
	groups := map[pendingKey][]*pendingChunk{}
	for _, pc := range chunks {
		groups[pc.key().position()] = append(groups[pc.key().position()], pc)
	}
	out := map[pendingKey]*stripePrefetch{}
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
		if pre, err := n.prefetchStripes(ctx, m, lp, holders, lo, hi); err == nil {
			out[pos] = pre
		}
	}
	return out
}

// decodeWith decodes pending chunk pc from prefetched stripes, or, if
// there are none or the stripe was written to since, from the stripe as
// it is now (decodePending).
func (n *Node) decodeWith(ctx context.Context, m *cluster.Map, pre *stripePrefetch, pc *pendingChunk) ([]byte, error) {
	if pre != nil {
		b, err := solveChunk(pc.lp, pre.view(pc.id.Stripe), pc.id, pc.want)
		if !errors.Is(err, errStripeBusy) {
			return b, err
		}
	}
	return n.decodePending(ctx, m, pc)
}

// decodePending decodes a pending chunk from its stripe as it is now,
// trying a few times while updates to the stripe are in flight. (A
// chunk the position's current node holds is never pending: recovery
// skips those, and a node that takes a position over avoids the stripe
// numbers still in parity.)
func (n *Node) decodePending(ctx context.Context, m *cluster.Map, pc *pendingChunk) ([]byte, error) {
	holders, err := parityHolders(m, pc.lp.entry.Spec, pc.lp.list)
	if err != nil {
		return nil, err
	}
	var b []byte
	err = retryBusy(ctx, decodeAttempts(m, pc.lp), func() (err error) {
		b, err = n.decodeChunk(ctx, m, pc.lp, holders, pc.id, pc.want)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("server: decoding pending chunk %d/%d/%d of %s: %w", pc.id.List, pc.id.Position, pc.id.Stripe, pc.lp.entry.Name(), err)
	}
	return b, nil
}

// startStripeRestores runs the background pass of every shard this node
// coordinates that is served with stripe keys pending, and proposes
// StripesRestored when none is left.
func (n *Node) startStripeRestores(ctx context.Context) {
	n.startShardJobs(ctx, "stripe restore", &n.restoring,
		func(_ *cluster.Map, sh cluster.Shard) bool { return sh.StripesPending && !sh.Recovering },
		func(ctx context.Context, _ *cluster.Map, sh cluster.Shard) error {
			faults.Hit(faults.BeforeStripeRestore)
			return n.restoreShard(ctx, sh.ID)
		},
		func(sh cluster.Shard) cluster.Command { return cluster.StripesRestored{Shard: sh.ID, By: n.id} })
}

// clearLocked forgets every pending chunk; the caller holds work.
func (p *stripePending) clearLocked() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shards = nil
	p.count.Store(0)
}
