package stripe

import (
	"bytes"
	"cmp"
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
// scheme, and its batch stripes, calling pace after each page of chunks
// with the bytes read for it (the caller's rate bound).
func (eng *Engine) Scrub(ctx context.Context, pace func(bytes int64)) ScrubReport {
	var r ScrubReport
	for _, s := range eng.all() {
		for _, page := range s.scrubPages() {
			if ctx.Err() != nil {
				return r
			}
			before := r.Bytes
			eng.scrubPage(ctx, s, page, &r)
			pace(r.Bytes - before)
		}
		if s.batch != nil {
			eng.scrubBatch(ctx, s, pace, &r)
		}
	}
	return r
}

// scrubPages are the chunks of s here, by list and position, in pages
// whose stripe numbers span at most rangePage: a page's stripe-mates and
// parity are read a range read per node (readDataRange, readParityRange,
// readCopyRange), not a read per chunk.
func (s *schemeState) scrubPages() [][]ChunkID {
	var ids []ChunkID
	s.mu.Lock()
	s.data.Chunks(func(id ChunkID, _ []byte, _ bool) { ids = append(ids, id) })
	s.mu.Unlock()
	slices.SortFunc(ids, func(a, b ChunkID) int {
		return cmp.Or(cmp.Compare(a.List, b.List), cmp.Compare(a.Position, b.Position), cmp.Compare(a.Stripe, b.Stripe))
	})
	var pages [][]ChunkID
	for len(ids) > 0 {
		n := 1
		for n < len(ids) && ids[n].List == ids[0].List && ids[n].Position == ids[0].Position && ids[n].Stripe-ids[0].Stripe < rangePage {
			n++
		}
		pages, ids = append(pages, ids[:n]), ids[n:]
	}
	return pages
}

// scrubPage checks one page of s's chunks, all of one list and position
// (see the file's comment).
func (eng *Engine) scrubPage(ctx context.Context, s *schemeState, page []ChunkID, r *ScrubReport) {
	for _, id := range page {
		eng.scrubOwn(ctx, s, id, r)
	}
	m := eng.host.Map()
	entry, ok := m.SchemeByID(s.id)
	holders, err := parityHolders(m, s.spec, page[0].List)
	if !ok || err != nil {
		return
	}
	lp := lostPosition{entry: entry, list: page[0].List, pos: int(page[0].Position)}
	view, err := eng.scrubView(ctx, m, lp, holders, page[0].Stripe, page[len(page)-1].Stripe)
	if err != nil {
		r.Unusable++
		return
	}
	for _, id := range page {
		eng.scrubStripe(ctx, m, s, lp, holders, view, id, r)
	}
}

// scrubOwn checks chunk id's objects and restores a corrupt chunk from
// its stripe.
func (eng *Engine) scrubOwn(ctx context.Context, s *schemeState, id ChunkID, r *ScrubReport) {
	s.mu.Lock()
	corrupt, ok := s.data.CheckChunk(id)
	s.mu.Unlock()
	if !ok {
		return // freed meanwhile
	}
	r.Chunks++
	r.Bytes += int64(s.spec.ChunkSize())
	if !corrupt {
		return
	}
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

// scrubView reads a page's stripes, stripe numbers from..to of lp's list:
// every usable parity holder's parity chunks, every other data
// position's chunks from its live node, and a hybrid replica holder's
// copies of lp's sealed chunks. A position not whole (lost, stood in for,
// awaiting its rebuild) has no chunks in the view: its stripes' parity is
// not checked.
func (eng *Engine) scrubView(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, from, to uint32) (*prefetch, error) {
	k := lp.entry.Spec.K
	sh := &m.Shards[lp.list]
	pre := &prefetch{parities: make([]map[uint32]chunkReply, len(holders)), data: make([]map[uint32]chunkReply, k), whole: make([]bool, k)}
	var err error
	for j, h := range holders {
		if !parityUsable(m, lp, h, j) {
			continue
		}
		what := uint8(readParityRange)
		if j == replicaHolder(lp.entry.Spec) {
			what = readCopyRange
		}
		got, err := eng.readChunkRange(ctx, h, lp.entry.ID, what, lp.list, uint8(lp.pos), from, to)
		if err != nil {
			return nil, err
		}
		if what == readCopyRange {
			pre.copies = got
		} else {
			pre.parities[j] = got
		}
	}
	for q := range k {
		pre.whole[q] = wholePosition(m, sh, q)
		if q == lp.pos || !pre.whole[q] {
			continue
		}
		node, _ := m.Node(sh.Placement[q])
		if pre.data[q], err = eng.readChunkRange(ctx, node, lp.entry.ID, readDataRange, lp.list, uint8(q), from, to); err != nil {
			return nil, err
		}
	}
	return pre, nil
}

// scrubStripe checks chunk id against what view read of its stripe: an
// open chunk against each holder's copy, a sealed one against a hybrid
// replica's copy, and its stripe's parity against a fresh encode.
func (eng *Engine) scrubStripe(ctx context.Context, m *cluster.Map, s *schemeState, lp lostPosition, holders []cluster.Node, view *prefetch, id ChunkID, r *ScrubReport) {
	s.mu.Lock()
	local, sealed, seq, ok := s.data.Read(id)
	s.mu.Unlock()
	if !ok || CheckObjects(local) != nil {
		return // freed, or not repaired: nothing sound to compare with
	}
	if !sealed {
		for j, h := range holders {
			if parityUsable(m, lp, h, j) {
				eng.scrubCopy(ctx, s, h, j, id, seq, local, r)
			}
		}
		return
	}
	if j := replicaHolder(s.spec); j >= 0 && parityUsable(m, lp, holders[j], j) {
		eng.compareCopy(ctx, s, holders[j], j, id, seq, local, view.copies[id.Stripe], r)
	}
	eng.scrubParity(ctx, m, lp, holders, view, id, local, seq, r)
}

// scrubCopy reads holder j's copy of open chunk id and compares it with
// local, the sound chunk at seq.
func (eng *Engine) scrubCopy(ctx context.Context, s *schemeState, h cluster.Node, j int, id ChunkID, seq uint32, local []byte, r *ScrubReport) {
	c, err := eng.readChunk(ctx, h, readReq{Scheme: s.id, What: readImage, Chunk: id})
	if err != nil {
		r.Unusable++
		return
	}
	eng.compareCopy(ctx, s, h, j, id, seq, local, c, r)
}

// compareCopy compares holder j's copy c of chunk id with local, the
// sound chunk at seq, and replaces a copy that differs.
func (eng *Engine) compareCopy(ctx context.Context, s *schemeState, h cluster.Node, j int, id ChunkID, seq uint32, local []byte, c chunkReply, r *ScrubReport) {
	r.Bytes += int64(len(local))
	switch {
	case !c.Found:
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
// (local, at seq, and the view's) and replaces every parity chunk that
// differs, if this node holds the stripe's first sealed position.
func (eng *Engine) scrubParity(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, view *prefetch, id ChunkID, local []byte, seq uint32, r *ScrubReport) {
	spec := lp.entry.Spec
	k, np, size := spec.K, parities(spec), spec.ChunkSize()
	if np == 0 {
		return
	}
	shards := make([][]byte, k+np)
	through, sealed := make([]uint32, k), make([]bool, k)
	shards[lp.pos], through[lp.pos], sealed[lp.pos] = local, seq, true
	for q := range k {
		if q == lp.pos {
			continue
		}
		c := view.data[q][id.Stripe]
		switch {
		case !view.whole[q]:
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
	if encodeParity(shards, k, np, size) != nil {
		return
	}
	for j := range np {
		eng.compareParity(ctx, m, lp, holders[j], j, id, through, sealed, shards[k+j], view.parities[j][id.Stripe], r)
	}
}

// encodeParity fills shards' np parity chunks, size bytes each, with an
// RS(k, np) encode of its k data chunks.
func encodeParity(shards [][]byte, k, np, size int) error {
	for j := range np {
		shards[k+j] = make([]byte, size)
	}
	codec, err := ec.New(k, np)
	if err == nil {
		err = codec.Encode(shards)
	}
	return err
}

// compareParity compares holder h's parity chunk j of id's stripe, c as
// the view read it, with want, encoded from data chunks at through, and
// replaces it if it differs while the holder is at the same seqs.
func (eng *Engine) compareParity(ctx context.Context, m *cluster.Map, lp lostPosition, h cluster.Node, j int, id ChunkID, through []uint32, sealed []bool, want []byte, c chunkReply, r *ScrubReport) {
	r.Bytes += int64(len(want))
	switch {
	case !parityUsable(m, lp, h, j) || !c.Found || int(c.J) != j:
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
