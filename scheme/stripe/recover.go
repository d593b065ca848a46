package stripe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/ec"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/wire"
)

// This file recovers the stripe keys of a shard whose coordinator failed
// (decision 0003). Their objects were in the failed node's data chunks, at
// its data positions in its K lists per stripe scheme. The new coordinator
// asks those lists' parity holders which chunks each lost position had
// (with the manifests of sealed ones), takes an open chunk from a holder's
// copy and decodes the sealed ones it must before serving from the rest of
// their stripes (deferring the others: pending.go), and keeps the
// objects of the shard's slots as recovery candidates; those judge
// restores are appended again to the new coordinator's own chunks
// (Host.Rehome, the node's rehomePacked). The failed node's chunks stay in their stripes' parity
// until a rebuild removes them.

// errBusy says a stripe's chunks and parity did not agree on which
// updates they hold (updates in flight); recovery tries again.
var errBusy = errors.New("stripe: updates in flight; try again")

// errUndecodable says a stripe has fewer parity chunks left than
// positions lost: no wait brings the lost chunk back.
var errUndecodable = errors.New("stripe: a stripe lost more chunks than it has parity")

// errNoParityState says that no parity holder of a list has its state:
// every one failed, or took its place since and awaits its rebuild.
var errNoParityState = errors.New("no parity holder has the list's state")

// lostPosition is a data position of a failed node in one list.
type lostPosition struct {
	entry cluster.SchemeEntry
	list  uint16
	pos   int
}

// Recover returns the objects of sh's slots found in the lost
// chunks that recovery must decode now, as candidates with their values,
// and defers the rest (metadata-first, Ring §5.5): a sealed chunk whose
// manifest names keys of sh's slots, none of them known (a key in another
// scheme or the directory, whose versions must be judged together), is
// decoded when one of its keys is first used or by a background pass
// (pending.go). A chunk that holds objects of a key decoded now
// (a fragment, an older version) is decoded now too.
//
// Beyond a scheme's tolerance the chunks that cannot be decoded are lost,
// and their keys are reported (reportGone); the others are recovered. It
// also returns the tags of the lost chunks' keys: no object with one of
// them is a candidate, as the key's newest version may have been in the
// lost chunk, and the pending restores keep them out too.
func (eng *Engine) Recover(ctx context.Context, m *cluster.Map, sh cluster.Shard, known map[uint32]bool) (*Recovery, error) {
	found := map[uint16][]Object{} // by scheme: objects and fragments of sh's slots
	var deferred []*pendingChunk
	var gone []goneChunk
	for _, lp := range lostPositions(m, sh) {
		pr, err := eng.recoverPosition(ctx, m, lp, sh, known)
		if err != nil && beyondTolerance(m, lp) && ctx.Err() == nil {
			// Not even the position's chunks could be listed.
			gone = append(gone, goneChunk{lp: lp, unnamed: true, err: err})
			continue
		}
		if err != nil {
			return nil, err
		}
		deferred = append(deferred, pr.later...)
		gone = append(gone, pr.gone...)
		for _, b := range pr.chunks {
			if err := keepShardObjects(found, lp, sh, b); err != nil {
				return nil, err
			}
		}
	}
	for {
		now, later := splitPending(deferred, foundTags(found))
		if len(now) == 0 {
			break
		}
		for _, pc := range now {
			b, err := eng.decodeWith(ctx, m, nil, pc)
			if err != nil && beyondTolerance(m, pc.lp) && ctx.Err() == nil {
				gone = append(gone, goneChunk{lp: pc.lp, tags: pc.tags, err: err})
				continue
			}
			if err == nil {
				err = keepShardObjects(found, pc.lp, sh, b)
			}
			if err != nil {
				return nil, err
			}
		}
		deferred = later
	}
	batchRead, batchGone, err := eng.recoverBatch(ctx, m, sh, found)
	if err != nil {
		return nil, err
	}
	lostTags := eng.reportGone(m, sh, append(gone, batchGone...))
	dropTagged(found, lostTags)
	return &Recovery{Objects: assembled(found), LostTags: lostTags, deferred: deferred, batchRead: batchRead}, nil
}

// Recovery is what Recover found of a shard's stripe keys: the objects of
// its slots in the lost chunks decoded now, whole (fragments assembled),
// by scheme id; the tags of its keys lost beyond tolerance; and the
// chunks deferred, which Defer makes pending once the node has re-homed
// the objects it chose.
type Recovery struct {
	Objects  map[uint16][]Object
	LostTags map[uint32]bool
	deferred []*pendingChunk
	// batchRead are the old batch stripes read, by scheme id, which
	// Defer frees (batch_recover.go).
	batchRead map[uint16][]uint64
}

// Deferred counts r's deferred chunks.
func (r *Recovery) Deferred() int { return len(r.deferred) }

// Defer makes r's deferred chunks shard sh's pending chunks, replacing
// those of an earlier recovery of sh, and frees the old batch stripes r
// read: the node has re-homed their objects.
func (eng *Engine) Defer(sh cluster.Shard, r *Recovery) {
	eng.pending.install(sh, r.deferred, r.LostTags)
	eng.freeRecovered(uint16(sh.ID), r.batchRead)
}

// Pending says whether shard has chunks pending.
func (eng *Engine) Pending(shard int) bool { return eng.pending.pending(shard) }

// PendingChunks counts the pending chunks (INFO stripe_chunks_pending).
func (eng *Engine) PendingChunks() int64 { return eng.pending.chunks() }

// goneChunk is a chunk of a lost data position that recovery could not
// read, beyond its scheme's tolerance: the tags of its keys in the
// recovering shard's slots, from a surviving manifest, or, unnamed,
// nothing that names them (no manifest survived, the chunk was open, or
// the position's chunks could not even be listed).
type goneChunk struct {
	lp      lostPosition
	tags    []uint32
	unnamed bool
	err     error
}

// goneOf describes lost chunk (lp, r), which recovery of sh could not
// read, from the holders' states: the tags its manifest names in sh's
// slots, or unnamed.
func goneOf(lp lostPosition, sh cluster.Shard, r uint32, states []map[uint32]PositionState, err error) goneChunk {
	g := goneChunk{lp: lp, unnamed: true, err: err}
	for _, st := range states {
		p, ok := st[r]
		if !ok || !p.Sealed || !p.HasManifest {
			continue
		}
		g.unnamed = false
		Tags(p.Manifest, func(t uint32) {
			if slot := keyslot.TagSlot(t); slot >= sh.First && slot <= sh.Last && !slices.Contains(g.tags, t) {
				g.tags = append(g.tags, t)
			}
		})
		break
	}
	return g
}

// reportGone reports the keys of sh that were in chunks lost beyond
// tolerance (gone) and returns their tags: by the tags of the chunks'
// manifests, and, where a chunk that may hold keys of sh is unnamed, by
// sh's whole slot range (loseSlots), so that no lost key reads as absent.
// Each lost position is logged and counted once.
func (eng *Engine) reportGone(m *cluster.Map, sh cluster.Shard, gone []goneChunk) map[uint32]bool {
	tags := map[uint32]bool{}
	for _, g := range byPosition(gone) {
		eng.abandonPosition(g.lp, "recovery", g.err)
		eng.reportLostTags(m, g.lp, g.tags)
		if g.unnamed && mayHoldKeysOf(m, g.lp, &sh) {
			eng.loseSlots(m, g.lp, sh)
		}
		for _, t := range g.tags {
			tags[t] = true
		}
	}
	return tags
}

// byPosition merges the gone chunks of each position into one, in the
// order the positions first appear.
func byPosition(gone []goneChunk) []goneChunk {
	var out []goneChunk
	for _, g := range gone {
		i := slices.IndexFunc(out, func(o goneChunk) bool {
			return o.lp.entry.ID == g.lp.entry.ID && o.lp.list == g.lp.list && o.lp.pos == g.lp.pos
		})
		if i < 0 {
			out, i = append(out, goneChunk{lp: g.lp, err: g.err}), len(out)
		}
		out[i].tags = append(out[i].tags, g.tags...)
		out[i].unnamed = out[i].unnamed || g.unnamed
	}
	return out
}

// dropTagged removes from found the objects whose key's tag is in tags.
func dropTagged(found map[uint16][]Object, tags map[uint32]bool) {
	if len(tags) == 0 {
		return
	}
	for id, objs := range found {
		found[id] = slices.DeleteFunc(objs, func(o Object) bool { return tags[keyslot.Tag(o.Key)] })
	}
}

// mayHoldKeysOf says whether lost position lp's chunks may hold keys of
// shard sh. A node appends only keys it coordinates, at the data positions
// it holds (ownSlots), and a shard's coordination passes from a failed
// node to the next up node of its placement (a spare takes the failed
// node's very place), so the node now at lp's place, or the one it
// replaced, coordinated sh only if it comes no later than sh's
// coordinator in sh's placement. A coordinator on standby was chosen
// because no other node was up, which may have moved coordination back
// along the placement: then any node may have coordinated sh.
func mayHoldKeysOf(m *cluster.Map, lp lostPosition, sh *cluster.Shard) bool {
	owner := m.Shards[lp.list].Placement[lp.pos]
	at := slices.Index(sh.Placement, owner)
	if at < 0 {
		return false
	}
	coord, ok := m.CoordinatorOf(sh)
	c := slices.Index(sh.Placement, coord.ID)
	return !ok || c < 0 || at <= c || slices.Contains(sh.Standby, coord.ID)
}

// loseSlots reports every key of sh's slots as maybe lost
// (lostKeys.addRange): a chunk of lp that may hold keys of sh was lost
// beyond tolerance, and no surviving manifest names them.
func (eng *Engine) loseSlots(m *cluster.Map, lp lostPosition, sh cluster.Shard) {
	spec := lp.entry.Spec
	lost, total := positionsLost(m, lp), spec.K+spec.M
	eng.host.LoseRange(sh.First, sh.Last, kind.LostKey{Scheme: lp.entry.Name(), Lost: lost, Total: total,
		Cause: fmt.Sprintf("chunks of scheme %s lost %d of %d pieces and no surviving manifest names their keys", lp.entry.Name(), lost, total)})
	eng.log.Error("lost stripe chunks' keys cannot be named: every key of the shard's slots the node does not hold answers -LOST",
		"scheme", lp.entry.Name(), "list", lp.list, "position", lp.pos, "shard", sh.ID, "first", sh.First, "last", sh.Last)
}

// keepShardObjects adds the objects of sh's slots in lost chunk b of lp to
// found, by scheme.
func keepShardObjects(found map[uint16][]Object, lp lostPosition, sh cluster.Shard, b []byte) error {
	err := Scan(b, func(_ int, o Object) bool {
		if slot := keyslot.Of(o.Key); slot >= sh.First && slot <= sh.Last {
			found[lp.entry.ID] = append(found[lp.entry.ID], o)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("stripe: a recovered chunk of list %d position %d: %w", lp.list, lp.pos, err)
	}
	return nil
}

// assembled is found's objects, whole: fragmented ones whose fragments of
// one version cover the value are assembled, and an object missing a
// fragment is left out.
func assembled(found map[uint16][]Object) map[uint16][]Object {
	out := make(map[uint16][]Object, len(found))
	for id, objs := range found {
		out[id] = Assemble(objs)
	}
	return out
}

// foundTags is the set of the tags of found's keys.
func foundTags(found map[uint16][]Object) map[uint32]bool {
	out := map[uint32]bool{}
	for _, objs := range found {
		for _, o := range objs {
			out[keyslot.Tag(o.Key)] = true
		}
	}
	return out
}

// splitPending separates the chunks that carry one of tags from the rest.
func splitPending(chunks []*pendingChunk, tags map[uint32]bool) (carry, rest []*pendingChunk) {
	for _, pc := range chunks {
		if slices.ContainsFunc(pc.tags, func(t uint32) bool { return tags[t] }) {
			carry = append(carry, pc)
		} else {
			rest = append(rest, pc)
		}
	}
	return carry, rest
}

// beyondTolerance says whether more of lost position lp's list than its
// scheme's M positions are lost: failed with no stand-in, or awaiting a
// rebuild. Its chunks may then be undecodable for good, and recovery and
// the rebuild must go on without them rather than retry forever (which
// would keep every key of the shard, in any scheme, unavailable).
//
// A hybrid list whose replica holder is usable copies every lost data
// chunk, so it is within tolerance however many data positions are lost;
// without it, M−1 parities decode what M positions' loss leaves.
func beyondTolerance(m *cluster.Map, lp lostPosition) bool {
	spec, sh := lp.entry.Spec, &m.Shards[lp.list]
	if j := replicaHolder(spec); j >= 0 {
		if holders, err := parityHolders(m, spec, lp.list); err == nil && !holderLost(sh, spec, holders, j) {
			return false
		}
	}
	return positionsLost(m, lp) > spec.M
}

// positionsLost counts the positions of lp's list that are lost: failed
// with no stand-in, or awaiting a rebuild.
func positionsLost(m *cluster.Map, lp lostPosition) int {
	sh := &m.Shards[lp.list]
	spec := lp.entry.Spec
	lost := 0
	for p, h := range m.Holders(sh, spec.K+spec.M) {
		if positionLost(sh, h, p) {
			lost++
		}
	}
	return lost
}

// reportLostTags reports the keys with one of tags, in a chunk of lp lost
// beyond tolerance, as maybe lost.
func (eng *Engine) reportLostTags(m *cluster.Map, lp lostPosition, tags []uint32) {
	if len(tags) == 0 {
		return
	}
	spec := lp.entry.Spec
	eng.host.LoseTags(tags, kind.LostKey{Scheme: lp.entry.Name(), Lost: positionsLost(m, lp), Total: spec.K + spec.M})
	eng.log.Error("keys of lost stripe chunks answer -LOST by their tags", "scheme", lp.entry.Name(), "list", lp.list, "position", lp.pos, "tags", len(tags))
}

// abandonPosition gives up chunks of a lost data position beyond its
// scheme's tolerance: their keys are gone. Stripe keys keep no directory
// entry (decision 0003): the caller names them by manifest or slot range
// (reportGone); the loss is logged and counted (INFO
// stripe_positions_lost).
func (eng *Engine) abandonPosition(lp lostPosition, job string, err error) {
	eng.stats.PositionsLost.Add(1)
	eng.log.Error("stripe chunks lost beyond the scheme's tolerance; their keys are gone", "job", job,
		"scheme", lp.entry.Name(), "list", lp.list, "position", lp.pos, "err", err)
}

// lostPositions lists the data positions, in every stripe scheme, whose
// node failed and whose chunks are still in parity: those awaiting a
// rebuild, whoever holds them now (a spare takes a failed node's places
// at once). Any of them may hold keys of sh; the caller keeps those.
func lostPositions(m *cluster.Map, sh cluster.Shard) []lostPosition {
	var out []lostPosition
	for _, e := range m.Schemes {
		if !packedKind(e.Spec.Kind) {
			continue
		}
		for g := range m.Shards {
			pl := m.Shards[g].Placement
			for p := 0; p < e.Spec.K && p < len(pl); p++ {
				if slices.Contains(m.Shards[g].Rebuild, p) {
					out = append(out, lostPosition{entry: e, list: uint16(g), pos: p})
				}
			}
		}
	}
	return out
}

// positionRecovery is what recovery does with a lost data position's
// chunks: those decoded now (their bytes), those deferred, and, beyond the
// scheme's tolerance, those that could not be read.
type positionRecovery struct {
	chunks [][]byte
	later  []*pendingChunk
	gone   []goneChunk
}

// recoverPosition returns the bytes of the chunks of a lost data position
// that sh's recovery must decode now, and the chunks it defers (see
// Recover), trying a few times while updates to its stripes are
// in flight. Beyond the scheme's tolerance a chunk that cannot be read is
// lost (gone) and the others are still read.
func (eng *Engine) recoverPosition(ctx context.Context, m *cluster.Map, lp lostPosition, sh cluster.Shard, known map[uint32]bool) (positionRecovery, error) {
	var pr positionRecovery
	err := retryBusy(ctx, decodeAttempts(m, lp), func() error {
		pr = positionRecovery{}
		sel := func(r uint32, states []map[uint32]PositionState) bool {
			now, pc := deferChunk(lp, sh, known, r, states)
			if pc != nil {
				pr.later = append(pr.later, pc)
			}
			return now
		}
		var lose func(ChunkID, []map[uint32]PositionState, error) bool
		if beyondTolerance(m, lp) {
			lose = func(id ChunkID, states []map[uint32]PositionState, err error) bool {
				if ctx.Err() != nil {
					return false
				}
				pr.gone = append(pr.gone, goneOf(lp, sh, id.Stripe, states, err))
				return true
			}
		}
		return eng.lostChunks(ctx, m, lp, sel, lose, func(_ ChunkID, b []byte, _ []map[uint32]PositionState, _ []cluster.Node) error {
			pr.chunks = append(pr.chunks, b)
			return nil
		})
	})
	return pr, err
}

// busyAttempts is how many times a decode is tried while updates to its
// stripes are in flight (errBusy), 100 ms apart.
const busyAttempts = 20

// decodeAttempts is how many times to try decoding lp's chunks: once
// beyond its scheme's tolerance, where what can be decoded is at once and
// waiting brings nothing back (a stripe short of K chunks reads as busy),
// else busyAttempts.
func decodeAttempts(m *cluster.Map, lp lostPosition) int {
	if beyondTolerance(m, lp) {
		return 1
	}
	return busyAttempts
}

// retryBusy calls fn until it returns anything but errBusy, at most
// attempts times, 100 ms apart, and returns its last error.
func retryBusy(ctx context.Context, attempts int, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if !errors.Is(err, errBusy) || attempt >= attempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deferChunk decides what sh's recovery does with lost chunk (lp, r): it
// decodes it now (true) when it is open, has no manifest, or its manifest
// names a known key of sh; it skips it when the manifest names no key of
// sh's slots; otherwise it defers it (the pending chunk).
func deferChunk(lp lostPosition, sh cluster.Shard, known map[uint32]bool, r uint32, states []map[uint32]PositionState) (bool, *pendingChunk) {
	if _, open := openCopy(states, r); open {
		return true, nil
	}
	var manifest []byte
	has := false
	for _, st := range states {
		if p, ok := st[r]; ok && p.Sealed && p.HasManifest {
			manifest, has = p.Manifest, true
		}
	}
	if !has {
		return true, nil
	}
	pc := &pendingChunk{lp: lp, id: ChunkID{List: lp.list, Position: uint8(lp.pos), Stripe: r}, want: sealedAt(states, r)}
	now := false
	Tags(manifest, func(t uint32) {
		if slot := keyslot.TagSlot(t); slot < sh.First || slot > sh.Last {
			return
		}
		now = now || known[t]
		if !slices.Contains(pc.tags, t) {
			pc.tags = append(pc.tags, t)
		}
	})
	if now || len(pc.tags) == 0 {
		return now, nil
	}
	return false, pc
}

// lostChunks calls fn with each chunk of a lost data position that is
// still in its stripe's parity and that sel picks (every one if sel is
// nil), decoded (or taken from a holder's copy if open), with the
// holders' states. Chunks that the position's current node holds (a spare
// appends at new stripe numbers of the places it took before their old
// chunks are dropped) are not lost and are skipped. A chunk that cannot
// be read ends the walk with its error, unless lose (if not nil) takes it
// (returns true): beyond a scheme's tolerance the others are still read.
func (eng *Engine) lostChunks(ctx context.Context, m *cluster.Map, lp lostPosition, sel func(r uint32, states []map[uint32]PositionState) bool,
	lose func(id ChunkID, states []map[uint32]PositionState, err error) bool,
	fn func(id ChunkID, b []byte, states []map[uint32]PositionState, holders []cluster.Node) error) error {
	holders, err := parityHolders(m, lp.entry.Spec, lp.list)
	if err != nil {
		return err
	}
	states, err := eng.equalStates(ctx, m, lp, holders)
	if err != nil {
		return err
	}
	owned, err := eng.ownedChunks(ctx, m, lp)
	if err != nil {
		return err
	}
	var picked []uint32
	sealed := 0
	for _, r := range sortedStripes(states) {
		if _, own := owned[r]; own || !stillInParity(states, r) || sel != nil && !sel(r, states) {
			continue
		}
		picked = append(picked, r)
		if _, open := openCopy(states, r); !open {
			sealed++
		}
	}
	var pre *prefetch
	if sealed >= prefetchFrom {
		if pre, err = eng.prefetchStripes(ctx, m, lp, holders, 0, math.MaxUint32); err != nil {
			eng.log.Debug("stripe prefetch failed; reading chunk by chunk", "scheme", lp.entry.Name(), "list", lp.list, "position", lp.pos, "err", err)
			pre = nil
		}
	}
	for _, r := range picked {
		id := ChunkID{List: lp.list, Position: uint8(lp.pos), Stripe: r}
		b, err := eng.lostChunk(ctx, m, lp, holders, states, pre, id)
		if err != nil && lose != nil && lose(id, states, err) {
			continue
		}
		if err == nil {
			err = fn(id, b, states, holders)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// prefetchFrom is how many sealed chunks of a position a decode must need
// before it reads the position's stripes a page at a time (fewer are read
// one by one).
const prefetchFrom = 16

// ownedChunks reads the chunks the current node of lp's position holds
// itself, by stripe number: none unless a spare or a returned node has it
// (not a stand-in).
func (eng *Engine) ownedChunks(ctx context.Context, m *cluster.Map, lp lostPosition) (map[uint32]chunkReply, error) {
	sh := &m.Shards[lp.list]
	owner, ok := m.Node(sh.Placement[lp.pos])
	if !ok || owner.State != cluster.Up || m.StoodIn(sh, lp.pos) {
		return nil, nil
	}
	return eng.readChunkRange(ctx, owner, lp.entry.ID, readDataRange, lp.list, uint8(lp.pos), 0, math.MaxUint32)
}

// equalStates returns what each parity holder of lp's list knows of the
// lost position's stripes (positionStates), once the holders have been
// equalized from each other's backups (equalizeHolders).
func (eng *Engine) equalStates(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node) ([]map[uint32]PositionState, error) {
	states, err := eng.positionStates(ctx, m, lp, holders)
	if err != nil {
		return nil, err
	}
	equalized, err := eng.equalizeHolders(ctx, lp, holders, states)
	if err != nil || !equalized {
		return states, err
	}
	return eng.positionStates(ctx, m, lp, holders)
}

// lostChunk returns the bytes of lost chunk id: an open one from the
// holder with the latest copy, a sealed one from the replica holder's copy
// (hybrid, RE-Store §IV-D: one failure costs a copy, no decode) or
// decoded from the prefetched stripe, or, if that stripe was written to
// since, from the stripe as it is now.
func (eng *Engine) lostChunk(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node,
	states []map[uint32]PositionState, pre *prefetch, id ChunkID) ([]byte, error) {
	b, err := eng.readLostChunk(ctx, m, lp, holders, states, pre, id)
	_, open := openCopy(states, id.Stripe)
	return eng.checkedChunk(ctx, m, lp, holders, id, open, sealedAt(states, id.Stripe), b, err)
}

// checkedChunk is b, lost chunk id as recovery or a restore read it, if
// every object in it passes its check. A copy or decode that fails them
// (a corrupt copy, parity or stripe-mate) is never recovered from: the
// other copies are tried — every holder's copy of an open chunk; for a
// sealed one, sealed into parity through seq, the replica's and the
// decodes without each parity (chunkCopies) — and without one that
// passes the chunk cannot be read.
func (eng *Engine) checkedChunk(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, id ChunkID, open bool, seq uint32, b []byte, err error) ([]byte, error) {
	if err != nil || CheckObjects(b) == nil {
		return b, err
	}
	eng.stats.CorruptChunks.Add(1)
	if open {
		for j, h := range holders {
			if !parityUsable(m, lp, h, j) {
				continue
			}
			if c, err := eng.readChunk(ctx, h, readReq{Scheme: lp.entry.ID, What: readImage, Chunk: id}); err == nil && c.Found && CheckObjects(c.Bytes) == nil {
				eng.stats.Repaired.Add(1)
				return c.Bytes, nil
			}
		}
	} else {
		for b, err := range eng.chunkCopies(ctx, m, lp, holders, id, true, seq) {
			if err == nil && CheckObjects(b) == nil {
				eng.stats.Repaired.Add(1)
				return b, nil
			}
		}
	}
	eng.stats.Unrepaired.Add(1)
	return nil, fmt.Errorf("stripe: lost chunk %s of %s: no copy or decode of it passes its objects' checks: %w", id, lp.entry.Name(), ErrChecksum)
}

// readLostChunk is lostChunk's read, unchecked.
func (eng *Engine) readLostChunk(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node,
	states []map[uint32]PositionState, pre *prefetch, id ChunkID) ([]byte, error) {
	if j, open := openCopy(states, id.Stripe); open {
		return eng.fetchCopy(ctx, lp, holders[j], id, 0)
	}
	want := sealedAt(states, id.Stripe)
	if b, ok := eng.replicaChunk(ctx, m, lp, holders, pre, id, want); ok {
		return b, nil
	}
	return eng.decodeSealed(lp, pre, id, want, func() ([]byte, error) { return eng.decodeChunk(ctx, m, lp, holders, id, want) })
}

// replicaChunk returns lost sealed chunk id of a hybrid list, sealed
// through seq want, from the list's replica holder if it is usable and
// holds the chunk at that seq or later: the copy RE-Store §IV-D serves one
// failure from, prefetched or read now. (A later seq is an update the dead
// coordinator sent before it failed that reached the replica after the
// holders' states were read: no write of it was acknowledged, so the copy
// with it is as good a recovery as the one without, and a decode at want
// would wait for ever on parities that moved past it.) Otherwise the
// chunk must be decoded.
func (eng *Engine) replicaChunk(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, pre *prefetch, id ChunkID, want uint32) ([]byte, bool) {
	j := replicaHolder(lp.entry.Spec)
	if holderLost(&m.Shards[lp.list], lp.entry.Spec, holders, j) {
		return nil, false
	}
	b, ok := []byte(nil), false
	if c, found := pre.copyOf(id.Stripe); found && c.Seq >= want {
		b, ok = c.Bytes, true
	} else if got, err := eng.fetchCopy(ctx, lp, holders[j], id, want); err == nil {
		b, ok = got, true
	}
	if ok {
		eng.stats.ChunksCopied.Add(1)
	}
	return b, ok
}

// decodeSealed decodes lost sealed chunk id, sealed into parity through
// seq want, from the prefetched stripe or, if there is none or that
// stripe was written to since, by now (a read of the stripe as it is
// now), and counts the chunks it decodes.
func (eng *Engine) decodeSealed(lp lostPosition, pre *prefetch, id ChunkID, want uint32, now func() ([]byte, error)) ([]byte, error) {
	b, err := []byte(nil), errBusy
	if pre != nil && !pre.byCopy {
		b, err = solveChunk(lp, pre.view(id.Stripe), id, want)
	}
	if errors.Is(err, errBusy) {
		b, err = now()
	}
	if err == nil {
		eng.stats.ChunksDecoded.Add(1)
	}
	return b, err
}

// prefetch is a lost position's stripes, read a page at a time
// before decoding its chunks (a read per chunk made recovering 33 000
// keys take 8 s): every usable parity holder's parity chunks of the list,
// and every other data position's chunks from its live node, in a range
// of stripe numbers (pages from one to past the other). Stripes written to
// since disagree in solveChunk and are read again one by one.
//
// Where the list's replica holder (hybrid) is usable, its copies of the
// position's sealed chunks are read instead, and a chunk whose copy does
// not do is decoded from its stripe as it is now.
type prefetch struct {
	parities []map[uint32]chunkReply // by parity position; nil: not usable
	data     []map[uint32]chunkReply // by data position; nil: no live node
	whole    []bool                  // by data position (wholePosition)
	copies   map[uint32]chunkReply   // the replica holder's copies, by stripe
	byCopy   bool                    // copies were read instead of the stripes
}

func (eng *Engine) prefetchStripes(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, from, to uint32) (*prefetch, error) {
	k := lp.entry.Spec.K
	sh := &m.Shards[lp.list]
	pre := &prefetch{parities: make([]map[uint32]chunkReply, len(holders)), data: make([]map[uint32]chunkReply, k), whole: make([]bool, k)}
	var err error
	if j := replicaHolder(lp.entry.Spec); !holderLost(sh, lp.entry.Spec, holders, j) {
		pre.byCopy = true
		pre.copies, err = eng.readChunkRange(ctx, holders[j], lp.entry.ID, readCopyRange, lp.list, uint8(lp.pos), from, to)
		return pre, err
	}
	for j, h := range holders {
		if parityUsable(m, lp, h, j) {
			if pre.parities[j], err = eng.readChunkRange(ctx, h, lp.entry.ID, readParityRange, lp.list, 0, from, to); err != nil {
				return nil, err
			}
		}
	}
	for q := 0; q < k; q++ {
		node, ok := m.Node(sh.Placement[q])
		if q == lp.pos || !ok || node.State != cluster.Up || m.StoodIn(sh, q) {
			continue
		}
		if pre.data[q], err = eng.readChunkRange(ctx, node, lp.entry.ID, readDataRange, lp.list, uint8(q), from, to); err != nil {
			return nil, err
		}
		pre.whole[q] = wholePosition(m, sh, q)
	}
	return pre, nil
}

// copyOf is the replica holder's copy of stripe r's chunk, if the
// prefetch read one.
func (p *prefetch) copyOf(r uint32) (chunkReply, bool) {
	if p == nil {
		return chunkReply{}, false
	}
	c, ok := p.copies[r]
	return c, ok && c.Found
}

// view is stripe r as the prefetch read it.
func (p *prefetch) view(r uint32) stripeView {
	v := stripeView{parities: make([]chunkReply, len(p.parities)), data: make([]chunkReply, len(p.data)), whole: p.whole}
	for j, got := range p.parities {
		v.parities[j] = got[r]
	}
	for q, got := range p.data {
		v.data[q] = got[r]
	}
	return v
}

// equalizeHolders gives every parity holder of a lost data position the
// updates of its chunks that another holder applied (their backups, MemEC
// §5.3): a coordinator that failed while sending updates leaves its
// holders at different seqs, and neither a decode that needs several
// parities nor a drop that XORs a chunk out of each may use holders that
// disagree. The holders answered positionStates (states); one that does
// not answer now is left out, as decodes will leave it, and so is one
// that has no state of the position in a stripe and cannot take its
// updates. It says whether any holder applied something.
func (eng *Engine) equalizeHolders(ctx context.Context, lp lostPosition, holders []cluster.Node, states []map[uint32]PositionState) (bool, error) {
	req := readReq{Scheme: lp.entry.ID, What: readBackups, Chunk: ChunkID{List: lp.list, Position: uint8(lp.pos)}}
	var asked []int
	var union []Update
	for j, h := range holders {
		if states[j] == nil {
			continue
		}
		b, err := eng.readRaw(ctx, h, req)
		if err != nil {
			continue
		}
		ups, err := wire.DecodeList(b, readHolderUpdate)
		if err != nil {
			return false, err
		}
		for _, u := range ups {
			union = append(union, u.U)
		}
		asked = append(asked, j)
	}
	union = dedupUpdates(union)
	if len(union) == 0 {
		return false, nil
	}
	slices.SortFunc(union, func(a, b Update) int {
		if a.Chunk.Stripe != b.Chunk.Stripe {
			return int(a.Chunk.Stripe) - int(b.Chunk.Stripe)
		}
		return int(a.Seq) - int(b.Seq)
	})
	reqs := make([]Request, len(asked))
	for i, j := range asked {
		ups := make([]holderUpdate, len(union))
		for k, u := range union {
			ups[k] = holderUpdate{J: j, U: u}
		}
		reqs[i] = Request{Node: holders[j], Msg: MsgUpdates, Payload: encodeUpdates(lp.entry.ID, ups)}
	}
	replies, errs := eng.callEach(ctx, reqs)
	applied := false
	for i, err := range errs {
		var acks []holderAck
		if err == nil {
			acks, err = decodeAcks(replies[i], len(union))
		}
		for k, a := range acks {
			_, held := states[asked[i]][union[k].Chunk.Stripe]
			switch {
			case a.Outcome == Missing && a.Refusal == "" && !held:
				// The holder has no state of the lost position in this
				// stripe (it came back empty, or was resynced by the live
				// positions only): no retry can bring it the updates
				// before this one, since their only sender is gone. It
				// takes no part in this stripe's decode (solveChunk uses
				// no parity that lacks the chunk), and the others decode it.
			case a.Refusal != "" || a.Outcome == Missing:
				err = fmt.Errorf("%w: replaying %s at %s: %s %s", errBusy, union[k], holders[asked[i]].PeerAddr, a.Outcome, a.Refusal)
			case a.Outcome == Applied:
				applied = true
			}
		}
		if err != nil {
			return applied, err
		}
	}
	if applied {
		eng.log.Info("stripe holders equalized from their backups", "scheme", lp.entry.Name(), "list", lp.list, "position", lp.pos, "updates", len(union))
	}
	return applied, nil
}

// positionStates asks each parity holder of the list that has the list's
// state (not a stand-in awaiting its rebuild) which stripes the lost
// position has state in: per holder, by stripe.
func (eng *Engine) positionStates(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node) ([]map[uint32]PositionState, error) {
	sh := &m.Shards[lp.list]
	out := make([]map[uint32]PositionState, len(holders))
	asked, eligible := 0, 0
	for j, h := range holders {
		if h.State != cluster.Up || slices.Contains(sh.Rebuild, lp.entry.Spec.K+j) {
			continue
		}
		eligible++
		req := readReq{Scheme: lp.entry.ID, What: readPositions, Chunk: ChunkID{List: lp.list, Position: uint8(lp.pos)}}
		b, err := eng.readRaw(ctx, h, req)
		if err != nil {
			continue // another holder may answer
		}
		ps, err := decodePositions(b)
		if err != nil {
			return nil, err
		}
		out[j] = map[uint32]PositionState{}
		for _, p := range ps {
			out[j][p.Stripe] = p
		}
		asked++
	}
	switch {
	case eligible == 0:
		return nil, fmt.Errorf("stripe: list %d of %s, position %d: %w", lp.list, lp.entry.Name(), lp.pos, errNoParityState)
	case asked == 0:
		return nil, fmt.Errorf("stripe: no parity holder of list %d (%s) answered; its chunks at position %d cannot be recovered", lp.list, lp.entry.Name(), lp.pos)
	}
	return out, nil
}

// sortedStripes is every stripe number any holder listed.
func sortedStripes(states []map[uint32]PositionState) []uint32 {
	var out []uint32
	for _, st := range states {
		for r := range st {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

// openCopy returns the holder with the most up-to-date copy of stripe r's
// chunk if the chunk is open there.
func openCopy(states []map[uint32]PositionState, r uint32) (int, bool) {
	best, found := -1, false
	for j, st := range states {
		p, ok := st[r]
		if !ok {
			continue
		}
		if p.Sealed {
			return 0, false
		}
		if p.Open && (best < 0 || p.Through > states[best][r].Through) {
			best, found = j, true
		}
	}
	return best, found
}

// sealedAt is the seq at which the holders that have stripe r's chunk
// sealed into parity hold it: the most advanced one's.
func sealedAt(states []map[uint32]PositionState, r uint32) uint32 {
	var t uint32
	for _, st := range states {
		if p, ok := st[r]; ok && p.Sealed {
			t = max(t, p.Through)
		}
	}
	return t
}

// fetchCopy reads a holder's copy of chunk id, open or (at a replica
// holder) sealed, which must have every update through seq want.
func (eng *Engine) fetchCopy(ctx context.Context, lp lostPosition, holder cluster.Node, id ChunkID, want uint32) ([]byte, error) {
	c, err := eng.readChunk(ctx, holder, readReq{Scheme: lp.entry.ID, What: readImage, Chunk: id})
	if err != nil {
		return nil, err
	}
	if !c.Found || c.Seq < want {
		return nil, errBusy // sealed or freed meanwhile
	}
	return c.Bytes, nil
}

// stripeView is what a decode of one lost chunk reads of its stripe: each
// parity holder's parity chunk (with the seqs it holds every position at)
// and each other data position's chunk, Found where a live node holds it.
// whole says, by data position, that the position's node holds every
// chunk of the position (it is up, no stand-in, not awaiting a rebuild),
// so a chunk it lacks was freed, not lost.
type stripeView struct {
	parities []chunkReply // by parity position
	data     []chunkReply // by data position
	whole    []bool       // by data position
}

// decodeChunk rebuilds a sealed chunk of a lost position, sealed into
// parity through seq want, from its stripe as it is now (readStripeView,
// one read per chunk; solveChunk).
func (eng *Engine) decodeChunk(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, id ChunkID, want uint32) ([]byte, error) {
	v, err := eng.readStripeView(ctx, m, lp, holders, id)
	if err != nil {
		return nil, err
	}
	return solveChunk(lp, v, id, want)
}

// readStripeView reads chunk id's stripe: the parity chunks of the
// holders that have the list's state, and the other data positions'
// chunks from their live nodes.
func (eng *Engine) readStripeView(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, id ChunkID) (stripeView, error) {
	k := lp.entry.Spec.K
	v := stripeView{parities: make([]chunkReply, len(holders)), data: make([]chunkReply, k), whole: make([]bool, k)}
	for j, h := range holders {
		if !parityUsable(m, lp, h, j) {
			continue
		}
		if c, err := eng.readChunk(ctx, h, readReq{Scheme: lp.entry.ID, What: readParityChunk, Chunk: id}); err == nil {
			v.parities[j] = c
		}
	}
	for q := 0; q < k; q++ {
		if q == lp.pos {
			continue
		}
		c, whole, err := eng.readPosition(ctx, m, lp, id, q)
		if err != nil {
			return v, err
		}
		v.data[q], v.whole[q] = c, whole
	}
	return v, nil
}

// parityUsable says whether holder h of parity position j may take part
// in a decode of lp's chunks: it is up and not awaiting its rebuild (a
// holder that took the place may lack the lost chunks).
func parityUsable(m *cluster.Map, lp lostPosition, h cluster.Node, j int) bool {
	return h.State == cluster.Up && !slices.Contains(m.Shards[lp.list].Rebuild, lp.entry.Spec.K+j)
}

// solveChunk decodes chunk id, sealed into parity through seq want, from
// view v: the other positions' chunks, each at the seq the parities used
// hold it at, and enough parity chunks that hold the lost chunk at want
// and agree on the other lost positions. A parity that lacks the chunk
// (a holder that took over and was resynced by the live positions only)
// would decode it as zeros, so it is never used: the chunk is then
// undecodable, not empty. Fewer parity chunks than positions lost is
// errUndecodable; a disagreement (updates in flight) is
// errBusy.
func solveChunk(lp lostPosition, v stripeView, id ChunkID, want uint32) ([]byte, error) {
	spec, size := lp.entry.Spec, lp.entry.Spec.ChunkSize()
	k, np := spec.K, parities(spec)
	shards := make([][]byte, k+np)
	type dataState struct {
		seq    uint32
		sealed bool
		known  bool
	}
	used := make([]chunkReply, np)
	for j, c := range v.parities {
		if j < np && c.Found && int(c.J) == j && len(c.Through) == k {
			used[j] = c
		}
	}
	data := make([]dataState, k)
	for q := 0; q < k; q++ {
		if q == lp.pos {
			continue
		}
		c := v.data[q]
		switch {
		case c.Found:
			data[q] = dataState{seq: c.Seq, sealed: c.Sealed, known: true}
		case !sealedInAny(used, q):
			data[q] = dataState{known: true} // nothing there: zeros
		case q < len(v.whole) && v.whole[q]:
			// Parity still holds a chunk its whole position freed: the
			// Free is on its way to the holders.
			return nil, fmt.Errorf("%w: stripe %d/%d of %s: position %d freed its chunk, parity still has it", errBusy, id.List, id.Stripe, lp.entry.Name(), q)
		default:
			continue // lost: decoded too
		}
		if data[q].sealed {
			shards[q] = c.Bytes
		} else {
			shards[q] = make([]byte, size) // open or absent: not in parity
		}
	}
	missing, found := 0, 0
	for q := 0; q < k; q++ {
		if !data[q].known {
			missing++
		}
	}
	for _, c := range used {
		if c.Found {
			found++
		}
	}
	if found < missing {
		return nil, fmt.Errorf("%w: stripe %d/%d of %s: %d positions lost, %d parity chunks left", errUndecodable, id.List, id.Stripe, lp.entry.Name(), missing, found)
	}
	var lostThrough []uint64 // the lost positions' seqs and sealed flags, as the first parity used holds them
	agreeing := 0
	for j, c := range used {
		if !c.Found {
			continue
		}
		agrees, through := c.SealedAt[lp.pos] && c.Through[lp.pos] == want, []uint64{}
		for q := 0; q < k; q++ {
			switch {
			case data[q].known && data[q].sealed != c.SealedAt[q]:
				agrees = false
			case data[q].known && data[q].sealed && data[q].seq != c.Through[q]:
				agrees = false
			case !data[q].known:
				through = append(through, uint64(c.Through[q])<<1|sealedBit(c.SealedAt[q]))
			}
		}
		if !agrees || lostThrough != nil && !slices.Equal(through, lostThrough) {
			continue
		}
		lostThrough, shards[k+j] = through, c.Bytes
		agreeing++
	}
	if agreeing < missing {
		return nil, fmt.Errorf("%w: stripe %d/%d of %s: %d positions lost, %d parity chunks agree with the data", errBusy, id.List, id.Stripe, lp.entry.Name(), missing, agreeing)
	}
	codec, err := ec.New(k, np)
	if err != nil {
		return nil, err
	}
	if err := codec.ReconstructData(shards); err != nil {
		return nil, fmt.Errorf("stripe: %d/%d of %s: %w", id.List, id.Stripe, lp.entry.Name(), err)
	}
	return shards[lp.pos], nil
}

// sealedBit is 1 for a sealed position, else 0.
func sealedBit(sealed bool) uint64 {
	if sealed {
		return 1
	}
	return 0
}

// readPosition reads chunk id's stripe-mate at data position q from the
// node there, if that node is up (a chunk it lacks is not Found), and says
// whether the position is whole there (wholePosition).
func (eng *Engine) readPosition(ctx context.Context, m *cluster.Map, lp lostPosition, id ChunkID, q int) (chunkReply, bool, error) {
	sh := &m.Shards[lp.list]
	node, ok := m.Node(sh.Placement[q])
	if !ok || node.State != cluster.Up || m.StoodIn(sh, q) {
		return chunkReply{}, false, nil
	}
	c, err := eng.readChunk(ctx, node, readReq{Scheme: lp.entry.ID, What: readDataChunk, Chunk: ChunkID{List: id.List, Position: uint8(q), Stripe: id.Stripe}})
	if err != nil {
		return chunkReply{}, false, err
	}
	return c, wholePosition(m, sh, q), nil
}

// wholePosition says whether data position q of sh's list holds every
// chunk of the position: its node is up, no stand-in, and the position
// awaits no rebuild (a node that took it over lacks the old chunks).
func wholePosition(m *cluster.Map, sh *cluster.Shard, q int) bool {
	node, ok := m.Node(sh.Placement[q])
	return ok && node.State == cluster.Up && !m.StoodIn(sh, q) && !slices.Contains(sh.Rebuild, q)
}

// sealedInAny says whether some parity has position q sealed in it.
func sealedInAny(parities []chunkReply, q int) bool {
	return slices.ContainsFunc(parities, func(c chunkReply) bool { return c.Found && c.SealedAt[q] })
}

// readRaw sends a msgStripeRead and returns the raw reply.
func (eng *Engine) readRaw(ctx context.Context, node cluster.Node, r readReq) ([]byte, error) {
	if node.ID == eng.host.Self() {
		return eng.OnRead(r.encode(nil))
	}
	return eng.host.Call(ctx, node, MsgRead, r.encode(nil))
}
