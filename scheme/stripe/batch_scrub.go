package stripe

import (
	"bytes"
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/wire"
)

// This file scrubs a coordinator's batch stripes (scrub.go, decision
// 0009): each stripe's data chunks kept here are checked and a corrupt
// one restored (from its holder's copy under hybrid, else decoded); the
// stripe is then read (readStripe: a holder's data piece failing its
// checks is decoded), encoded afresh, and every holder's piece compared
// with what it must be: one that differs is replaced (batchReplace).

// scrubBatch checks every batch stripe s's coordinator wrote here.
func (eng *Engine) scrubBatch(ctx context.Context, s *schemeState, pace func(int64), r *ScrubReport) {
	for _, ref := range s.batchStripes() {
		if ctx.Err() != nil {
			return
		}
		before := r.Bytes
		eng.scrubBatchStripe(ctx, s, ref, r)
		pace(r.Bytes - before)
	}
}

// batchStripes lists the batch stripes s's coordinator keeps, as
// references to their first chunk.
func (s *schemeState) batchStripes() []batchRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []batchRef
	for slot, st := range s.batch.data.stripes {
		if st != nil && st.unsettled == 0 {
			out = append(out, batchRef{shard: st.shard, serial: st.serial, loc: BatchLoc{Slot: uint32(slot)}, c: st.c})
		}
	}
	return out
}

// scrubBatchStripe checks one batch stripe (see the file's comment).
func (eng *Engine) scrubBatchStripe(ctx context.Context, s *schemeState, ref batchRef, r *ScrubReport) {
	m := eng.host.Map()
	holders, err := listHolders(m, s.spec, ref.shard)
	if err != nil {
		return
	}
	r.Chunks++
	if !eng.scrubKept(ctx, s, holders, ref, r) {
		return
	}
	ps, err := eng.readStripe(ctx, s, holders, ref)
	if err != nil {
		r.Unusable++
		return
	}
	if err := encodeBatch(s.batch.codec, ps); err != nil {
		return
	}
	self := eng.host.Self()
	for role, want := range ps.pieces() {
		node := holders[batchPosition(s.spec, role, ref.c)]
		r.Bytes += int64(len(want))
		if node.ID == self || node.State != cluster.Up {
			continue // kept here (checked above), or not to be read
		}
		whole := ref
		whole.loc.Chunk, whole.loc.Offset, whole.size = role, 0, len(want)
		got, err := eng.readPieceRange(ctx, node, s, whole, role)
		if err != nil || bytes.Equal(got, want) {
			continue
		}
		r.Corrupt++
		eng.stats.CorruptBatch.Add(1)
		req := batchPieceKey{scheme: s.id, shard: ref.shard, serial: ref.serial, role: uint8(role)}.encode(wire.Enc(nil).U8(batchReplace)).Bytes(want)
		if _, err := eng.host.Call(ctx, node, MsgBatch, req); err != nil {
			eng.log.Warn("stripe scrub: replacing a batch piece failed", "holder", node.ID, "serial", ref.serial, "role", role, "err", err)
			continue
		}
		r.Repaired++
		eng.stats.Repaired.Add(1)
		eng.log.Warn("stripe scrub: a batch piece differed from its stripe's encode and was replaced", "holder", node.ID, "serial", ref.serial, "role", role, "scheme", s.spec.String())
	}
}

// scrubKept checks the data chunks of ref's stripe kept here and
// restores a corrupt one. It returns false if one could not be.
func (eng *Engine) scrubKept(ctx context.Context, s *schemeState, holders []cluster.Node, ref batchRef, r *ScrubReport) bool {
	for q := range s.spec.K {
		s.mu.Lock()
		kept := s.batch.data.keptChunk(ref.loc.Slot, ref.serial, q)
		bad := kept != nil && CheckObjects(kept) != nil
		s.mu.Unlock()
		r.Bytes += int64(len(kept))
		if !bad {
			continue
		}
		r.Corrupt++
		eng.stats.CorruptBatch.Add(1)
		whole := ref
		whole.loc.Chunk, whole.size = q, len(kept)
		b, err := eng.readPieceRange(ctx, holders[batchPosition(s.spec, q, ref.c)], s, whole, q)
		if err != nil || CheckObjects(b) != nil {
			b, err = eng.decodeBatchChecked(ctx, holders, s, whole)
		}
		if err != nil {
			eng.stats.Unrepaired.Add(1)
			eng.log.Error("stripe scrub: a corrupt batch chunk kept here could not be repaired", "serial", ref.serial, "chunk", q, "scheme", s.spec.String(), "err", err)
			return false
		}
		s.mu.Lock()
		ok := s.batch.data.restoreKept(whole.loc, ref.serial, b)
		s.mu.Unlock()
		if ok {
			r.Repaired++
			eng.stats.Repaired.Add(1)
			eng.log.Warn("stripe scrub: corrupt batch chunk kept here repaired", "serial", ref.serial, "chunk", q, "scheme", s.spec.String())
		}
	}
	return true
}

// decodeBatchChecked decodes ref's whole data chunk from the other
// pieces of its stripe, and again without each of them in turn while the
// chunk decoded fails its objects' checks (a corrupt piece spoils it).
func (eng *Engine) decodeBatchChecked(ctx context.Context, holders []cluster.Node, s *schemeState, ref batchRef) ([]byte, error) {
	var last error
	for without := -1; without < s.spec.K+batchParities(s.spec); without++ {
		if without == ref.loc.Chunk {
			continue
		}
		b, err := eng.decodeBatchRange(ctx, holders, s, ref, without)
		if err == nil {
			err = CheckObjects(b)
		}
		if err == nil {
			return b, nil
		}
		last = err
	}
	return nil, last
}
