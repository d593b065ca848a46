package stripe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/ec"
	"github.com/memgest/memgest/wire"
)

// This file is the packed schemes' scrub (DESIGN.md §4 "Corruption";
// server/repair/scrub.go runs it at --scrub-rate): every chunk a node
// coordinates is checked in turn —
//
//   - its objects against their checksums, and a corrupt chunk restored
//     from its stripe (repair.go);
//   - an open chunk against every parity holder's copy, and a hybrid
//     sealed chunk against its replica's: a copy that differs from the
//     sound chunk is replaced (MsgRepair, Parity.RepairImage);
//   - a sealed chunk's stripe re-encoded from its data chunks, each
//     passing its checks, and every parity chunk compared: one that
//     differs is replaced (Parity.RepairParity). Only the coordinator of
//     the stripe's first sealed position does this, so a stripe is
//     encoded once a pass, not K times.
//
// Every replacement is made only where the holder still is where the
// scrub's reads found it; one that moved on is looked at in the next
// pass. Batch stripes are scrubbed by batch_scrub.go.

// ScrubReport is what one scrub pass over a node's chunks found.
type ScrubReport struct {
	Chunks         int   // chunks checked
	Bytes          int64 // bytes read to check them
	Corrupt        int   // chunks, copies and parity chunks found wrong
	Repaired       int   // of them, replaced with sound bytes
	Busy, Unusable int   // checks skipped: the stripe moved on, or a position is lost
}

// Scrub checks every chunk this node coordinates, in every packed
// scheme, and its batch stripes, calling pace after each with the bytes
// read for it (the caller's rate bound).
func (eng *Engine) Scrub(ctx context.Context, pace func(bytes int64)) ScrubReport {
	var r ScrubReport
	for _, s := range eng.all() {
		var ids []ChunkID
		s.mu.Lock()
		s.data.Chunks(func(id ChunkID, _ []byte, _ bool) { ids = append(ids, id) })
		s.mu.Unlock()
		for _, id := range ids {
			if ctx.Err() != nil {
				return r
			}
			before := r.Bytes
			eng.scrubChunk(ctx, s, id, &r)
			pace(r.Bytes - before)
		}
		if s.batch != nil {
			eng.scrubBatch(ctx, s, pace, &r)
		}
	}
	return r
}

// scrubChunk checks chunk id of s (see the file's comment).
func (eng *Engine) scrubChunk(ctx context.Context, s *schemeState, id ChunkID, r *ScrubReport) {
	s.mu.Lock()
	corrupt, ok := s.data.CheckChunk(id)
	s.mu.Unlock()
	if !ok {
		return // freed meanwhile
	}
	r.Chunks++
	r.Bytes += int64(s.spec.ChunkSize())
	if corrupt {
		r.Corrupt++
		eng.stats.CorruptChunks.Add(1)
		if err := eng.repairChunk(ctx, s, id); err != nil {
			eng.stats.Unrepaired.Add(1)
			eng.log.Error("stripe scrub: a corrupt chunk could not be repaired", "chunk", id.String(), "scheme", s.spec.String(), "err", err)
			return
		}
		r.Repaired++
		eng.stats.Repaired.Add(1)
		eng.log.Warn("stripe scrub: corrupt chunk repaired from its stripe", "chunk", id.String(), "scheme", s.spec.String())
	}
	s.mu.Lock()
	local, sealed, seq, ok := s.data.Read(id)
	s.mu.Unlock()
	m := eng.host.Map()
	holders, err := parityHolders(m, s.spec, id.List)
	if !ok || err != nil || CheckObjects(local) != nil {
		return
	}
	entry, _ := m.SchemeByID(s.id)
	lp := lostPosition{entry: entry, list: id.List, pos: int(id.Position)}
	for j, h := range holders {
		if (!sealed || j == replicaHolder(s.spec)) && parityUsable(m, lp, h, j) {
			eng.scrubCopy(ctx, s, h, j, id, seq, local, r)
		}
	}
	if sealed {
		eng.scrubParity(ctx, m, lp, holders, id, r)
	}
}

// scrubCopy compares holder j's copy of chunk id with local, the sound
// chunk at seq, and replaces a copy that differs.
func (eng *Engine) scrubCopy(ctx context.Context, s *schemeState, h cluster.Node, j int, id ChunkID, seq uint32, local []byte, r *ScrubReport) {
	c, err := eng.readChunk(ctx, h, readReq{Scheme: s.id, What: readImage, Chunk: id})
	r.Bytes += int64(len(local))
	switch {
	case err != nil || !c.Found:
		r.Unusable++
		return
	case c.Seq != seq:
		r.Busy++
		return
	case bytes.Equal(c.Bytes, local):
		return
	}
	r.Corrupt++
	eng.stats.CorruptCopies.Add(1)
	eng.sendRepair(ctx, s, h, repairReq{Op: repairImage, Chunk: id, J: uint8(j), Seq: seq, Bytes: local}, r)
}

// scrubParity re-encodes sealed chunk id's stripe from its data chunks
// and replaces every parity chunk that differs, if this node holds the
// stripe's first sealed position.
func (eng *Engine) scrubParity(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, id ChunkID, r *ScrubReport) {
	spec := lp.entry.Spec
	k, np, size := spec.K, parities(spec), spec.ChunkSize()
	if np == 0 {
		return
	}
	shards := make([][]byte, k+np)
	through, sealed := make([]uint32, k), make([]bool, k)
	for q := range k {
		c, whole, err := eng.readPosition(ctx, m, lp, id, q)
		if q == lp.pos {
			c, whole, err = eng.readOwn(lp, id)
		}
		r.Bytes += int64(size)
		switch {
		case err != nil || !whole:
			r.Unusable++
			return // a lost position's chunk is in parity until it is rebuilt
		case c.Found && c.Sealed && q < lp.pos:
			return // the first sealed position's coordinator checks the stripe
		case c.Found && c.Sealed:
			if CheckObjects(c.Bytes) != nil {
				return // its own coordinator's scrub repairs it first
			}
			shards[q], through[q], sealed[q] = c.Bytes, c.Seq, true
		default:
			shards[q] = make([]byte, size) // open or absent: not in parity
		}
	}
	for j := range np {
		shards[k+j] = make([]byte, size)
	}
	codec, err := ec.New(k, np)
	if err == nil {
		err = codec.Encode(shards)
	}
	if err != nil {
		return
	}
	for j := range np {
		eng.compareParity(ctx, m, lp, holders[j], j, id, through, sealed, shards[k+j], r)
	}
}

// readOwn is this node's own chunk id as readPosition gives another's.
func (eng *Engine) readOwn(lp lostPosition, id ChunkID) (chunkReply, bool, error) {
	s := eng.byID(lp.entry.ID)
	if s == nil {
		return chunkReply{}, false, fmt.Errorf("stripe: no state of scheme %s", lp.entry.Name())
	}
	var c chunkReply
	s.mu.Lock()
	c.Bytes, c.Sealed, c.Seq, c.Found = s.data.Read(id)
	s.mu.Unlock()
	return c, true, nil
}

// compareParity compares holder h's parity chunk j of id's stripe with
// want, encoded from data chunks at through, and replaces it if it
// differs while the holder is at the same seqs.
func (eng *Engine) compareParity(ctx context.Context, m *cluster.Map, lp lostPosition, h cluster.Node, j int, id ChunkID, through []uint32, sealed []bool, want []byte, r *ScrubReport) {
	if !parityUsable(m, lp, h, j) {
		r.Unusable++
		return
	}
	c, err := eng.readChunk(ctx, h, readReq{Scheme: lp.entry.ID, What: readParityChunk, Chunk: id})
	r.Bytes += int64(len(want))
	switch {
	case err != nil || !c.Found || int(c.J) != j:
		r.Unusable++
		return
	case !slices.Equal(c.SealedAt, sealed) || !sameSealedSeqs(c.Through, through, sealed):
		r.Busy++
		return
	case bytes.Equal(c.Bytes, want):
		return
	}
	r.Corrupt++
	eng.stats.CorruptParity.Add(1)
	s := eng.byID(lp.entry.ID)
	eng.sendRepair(ctx, s, h, repairReq{Op: repairParity, Chunk: id, J: uint8(j), Through: through, Sealed: sealed, Bytes: want}, r)
}

// sameSealedSeqs says whether a holder's seqs are the data's at every
// sealed position (an open position's updates do not touch parity).
func sameSealedSeqs(held, data []uint32, sealed []bool) bool {
	if len(held) != len(data) {
		return false
	}
	for q := range data {
		if sealed[q] && held[q] != data[q] {
			return false
		}
	}
	return true
}

// sendRepair asks holder h to take req's sound bytes, and counts what
// came of it.
func (eng *Engine) sendRepair(ctx context.Context, s *schemeState, h cluster.Node, req repairReq, r *ScrubReport) {
	req.Scheme = s.id
	_, err := eng.host.Call(ctx, h, MsgRepair, req.encode(nil))
	switch {
	case err == nil:
		r.Repaired++
		eng.stats.Repaired.Add(1)
		eng.log.Warn("stripe scrub: a holder's copy differed and was replaced", "holder", h.ID, "chunk", req.Chunk.String(), "what", req.what(), "scheme", s.spec.String())
	case errors.Is(err, ErrChanged) || isChangedReply(err):
		r.Busy++
	default:
		eng.log.Warn("stripe scrub: replacing a holder's copy failed", "holder", h.ID, "chunk", req.Chunk.String(), "err", err)
	}
}

// The scrub's repairs (MsgRepair).
const (
	repairImage  uint8 = iota + 1 // a copy of an open chunk, or a hybrid replica's
	repairParity                  // a parity chunk
)

// repairReq is a MsgRepair request: sound bytes for a holder to take.
type repairReq struct {
	Scheme  uint16
	Op      uint8
	Chunk   ChunkID // for parity, the position is ignored
	J       uint8
	Seq     uint32   // an image's
	Through []uint32 // parity's: per data position
	Sealed  []bool
	Bytes   []byte
}

func (q repairReq) what() string {
	if q.Op == repairParity {
		return "parity"
	}
	return "copy"
}

func (q repairReq) encode(e wire.Enc) wire.Enc {
	e = e.U16(q.Scheme).U8(q.Op).U16(q.Chunk.List).U8(q.Chunk.Position).U32(q.Chunk.Stripe).U8(q.J).U32(q.Seq).U8(uint8(len(q.Through)))
	for i, t := range q.Through {
		e = e.U32(t).Flag(q.Sealed[i])
	}
	return e.Bytes(q.Bytes)
}

func decodeRepairReq(b []byte) (repairReq, error) {
	d := wire.NewDec(b)
	q := repairReq{Scheme: d.U16(), Op: d.U8(), Chunk: ChunkID{List: d.U16(), Position: d.U8(), Stripe: d.U32()}, J: d.U8(), Seq: d.U32()}
	for range int(d.U8()) {
		q.Through, q.Sealed = append(q.Through, d.U32()), append(q.Sealed, d.Flag())
	}
	q.Bytes = d.Bytes()
	if d.Err() == nil && q.Op != repairImage && q.Op != repairParity {
		d.Fail()
	}
	return q, d.Done()
}

// OnRepair is a holder's side of MsgRepair: it takes the sound bytes if
// it is still where the scrub found it (Parity.RepairImage,
// RepairParity).
func (eng *Engine) OnRepair(b []byte) ([]byte, error) {
	q, err := decodeRepairReq(b)
	if err != nil {
		return nil, err
	}
	entry, ok := eng.host.Map().SchemeByID(q.Scheme)
	if !ok || !packedKind(entry.Spec.Kind) {
		return nil, fmt.Errorf("stripe: scheme id %d is not a packed scheme", q.Scheme)
	}
	s, err := eng.scheme(entry)
	if err != nil {
		return nil, err
	}
	if q.Op == repairImage && CheckObjects(q.Bytes) != nil {
		return nil, fmt.Errorf("stripe: a repair's copy of %s fails its checks: %w", q.Chunk, ErrChecksum)
	}
	s.mu.Lock()
	if q.Op == repairImage {
		_, err = s.parity.RepairImage(int(q.J), q.Chunk, q.Seq, q.Bytes)
	} else {
		_, err = s.parity.RepairParity(int(q.J), q.Chunk.List, q.Chunk.Stripe, q.Through, q.Sealed, q.Bytes)
	}
	s.mu.Unlock()
	return nil, err
}

// isChangedReply says whether a peer answered ErrChanged.
func isChangedReply(err error) bool {
	return err != nil && bytes.Contains([]byte(err.Error()), []byte(ErrChanged.Error()))
}
