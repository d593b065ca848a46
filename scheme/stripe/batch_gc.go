package stripe

import (
	"context"
	"slices"

	"github.com/memgest/memgest/cluster"
)

// Move-based GC of batch stripes (decision 0009, BCStore §III-B). An
// update or a deletion of a batch key leaves its old object in its
// stripe, which stays whole because the other objects' redundancy needs
// it. While a scheme's batch garbage is above batchGCGoal of its batch
// data on this coordinator, the GC takes the stripes with the fewest live
// objects first (the fewest moves for each stripe freed), reads their
// live objects and hands them to the node, which rewrites them through
// the write path (they join the next rounds; a client's write of the key
// meanwhile wins and moves it anyway); a stripe with no live object left
// is then freed on every holder. Sparse stripes, rounds of fewer than K
// objects (at low write rates), whose parity costs up to M times their
// data, are merged the same way once there are enough of them to fill a
// stripe.

// batchGCGoal is the share of a scheme's batch data bytes on a
// coordinator that may be garbage before its GC moves objects.
const batchGCGoal = 0.25

// BatchGC picks, per batching scheme, victim stripes of at most budget
// bytes and returns their live objects, values read, as relocations for
// the node to rewrite; it frees the stripes with nothing live first.
func (eng *Engine) BatchGC(ctx context.Context, budget int) []Relocation {
	var out []Relocation
	for _, s := range eng.all() {
		if s.batch == nil || budget <= 0 {
			continue
		}
		eng.freeEmpty(s)
		victims, bytes := s.batchVictims(budget)
		budget -= bytes
		if objs := eng.liveObjects(ctx, s, victims); len(objs) > 0 {
			out = append(out, Relocation{Scheme: s.id, Objects: objs, Bytes: bytes})
		}
	}
	return out
}

// FreeEmptyBatchStripes frees every batch stripe with no live object
// left, after a GC round's moves.
func (eng *Engine) FreeEmptyBatchStripes() {
	for _, s := range eng.all() {
		if s.batch != nil {
			eng.freeEmpty(s)
		}
	}
}

// freeEmpty frees s's batch stripes with no live object, here and on
// their holders.
func (eng *Engine) freeEmpty(s *schemeState) {
	byShard := map[uint16][]uint64{}
	s.mu.Lock()
	for slot, st := range s.batch.data.stripes {
		if st != nil && st.live == 0 && st.unsettled == 0 {
			if serial, err := s.batch.data.Free(uint32(slot)); err == nil {
				byShard[st.shard] = append(byShard[st.shard], serial)
			}
		}
	}
	s.mu.Unlock()
	for shard, serials := range byShard {
		eng.freeStripes(s, shard, serials)
	}
}

// gcVictim is a victim stripe: its slot and serial.
type gcVictim struct {
	slot   uint32
	serial uint64
}

// batchVictims picks s's victims of at most budget bytes: the stripes
// with the fewest live objects while garbage is above batchGCGoal, else
// sparse stripes when they would fill a stripe.
func (s *schemeState) batchVictims(budget int) ([]gcVictim, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.batch.data
	st := b.Stats()
	var slots []uint32
	if st.GarbageRatio() > batchGCGoal {
		slots = b.Victims(len(b.stripes))
	} else {
		slots = b.sparse(s.spec.K*s.spec.ChunkSize(), s.spec.K)
	}
	var out []gcVictim
	bytes := 0
	for _, slot := range slots {
		size := b.stripes[slot].size()
		if bytes > 0 && bytes+size > budget {
			break
		}
		out = append(out, gcVictim{slot: slot, serial: b.stripes[slot].serial})
		bytes += size
	}
	return out, bytes
}

// sparse returns the slots of stripes of fewer than k objects (a stripe
// of n < k objects spends up to M/n parity per byte, against M/K), if
// together their live objects hold more than a full stripe's bytes.
func (b *BatchData) sparse(full, k int) []uint32 {
	var slots []uint32
	total := 0
	for slot, st := range b.stripes {
		if st != nil && st.objects < k {
			slots = append(slots, uint32(slot))
			total += st.liveB
		}
	}
	if total < full || len(slots) < 2 {
		return nil
	}
	slices.SortFunc(slots, func(x, y uint32) int { return b.stripes[x].size() - b.stripes[y].size() })
	return slots
}

// liveObjects returns copies of the live objects of victims, with their
// values: read here where the chunk is kept, else each chunk's piece read
// once from its holder (decoded over the objects' ranges when that
// fails). A victim changed or freed meanwhile is skipped.
func (eng *Engine) liveObjects(ctx context.Context, s *schemeState, victims []gcVictim) []Object {
	var out []Object
	for _, v := range victims {
		var remote []batchRef
		s.mu.Lock()
		if ser := s.batch.data.stripes[v.slot]; ser != nil && ser.serial == v.serial {
			s.batch.data.LiveIn(v.slot, func(loc BatchLoc, o Object, local bool) {
				if local {
					o.Key, o.Value = slices.Clone(o.Key), slices.Clone(o.Value)
					out = append(out, o)
					return
				}
				e, _ := s.batch.data.entry(loc)
				remote = append(remote, batchRef{head: Object{Key: slices.Clone(o.Key), Version: o.Version, ExpireAt: o.ExpireAt},
					loc: loc, size: e.size, shard: ser.shard, serial: ser.serial, c: ser.c})
			})
		}
		s.mu.Unlock()
		out = append(out, eng.readRefs(ctx, s, remote)...)
	}
	return out
}

// readRefs reads the objects refs name (of one stripe), one piece read
// per data chunk, falling back to decoding object by object.
func (eng *Engine) readRefs(ctx context.Context, s *schemeState, refs []batchRef) []Object {
	if len(refs) == 0 {
		return nil
	}
	holders, err := listHolders(eng.host.Map(), s.spec, refs[0].shard)
	if err != nil {
		return nil
	}
	pieces := map[int][]byte{}
	var out []Object
	for _, r := range refs {
		piece, tried := pieces[r.loc.Chunk]
		if !tried {
			whole := r
			whole.loc.Offset, whole.size = 0, maxBatchRead
			s.mu.Lock()
			if lens := s.batch.data.Lens(r.loc.Slot); lens != nil {
				whole.size = lens[r.loc.Chunk]
			}
			s.mu.Unlock()
			piece, _ = eng.readPieceRange(ctx, holders[batchPosition(s.spec, r.loc.Chunk, r.c)], s, whole, r.loc.Chunk)
			pieces[r.loc.Chunk] = piece
		}
		o, err := Object{}, ErrChecksum
		var bad cluster.Node // the holder whose piece failed its check
		if r.loc.Offset+r.size <= len(piece) {
			if o, err = objectAt(piece[r.loc.Offset:r.loc.Offset+r.size], r.head.Key, r.head.Version); err != nil {
				eng.stats.CorruptBatch.Add(1)
				bad = holders[batchPosition(s.spec, r.loc.Chunk, r.c)]
			}
		}
		if err != nil { // unread, or failing its check: decoded around
			if o, err = eng.decodeBatchObject(ctx, eng.host.Map(), holders, s, r, r.head.Key, bad); err != nil {
				eng.log.Warn("stripe: the batch GC could not read an object", "key", string(r.head.Key), "err", err)
				continue
			}
		}
		o.Value = slices.Clone(o.Value)
		out = append(out, o)
	}
	return out
}
