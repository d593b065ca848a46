package stripe

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/wire"
)

// Dead marks (decision 0009). A batch stripe is immutable, so an object
// that stops being its key's current one (overwritten, deleted, moved
// out, or written by a write that aborted) stays in its stripe until the
// GC frees the stripe, and a recovery that decoded it then would bring
// it back once a deletion's directory tombstone is purged. So every such
// object gets a dead mark, (stripe, chunk, offset), which the coordinator
// queues and sends to its stripes' mark holders (the list's parity
// holders, and under hybrid the holder of data chunk 0's copy: with the
// coordinator, M nodes) in the frames of its next round, and a deletion
// sends the queue at once and waits until every mark queued up to its own
// has arrived before the core purges the tombstone. Recovery skips the
// objects any holder marked dead. A coordinator that fails with marks
// undelivered leaves only objects older than their key's current version
// unmarked (a deletion's tombstone is still there), which recovery's
// judging of versions settles.

// deadMark is one batch object that is no longer its key's current one,
// and the coordinator's position its stripe was laid out for.
type deadMark struct {
	shard  uint16
	serial uint64
	chunk  int
	offset int
	c      int
}

// seqMark is a queued mark and its number.
type seqMark struct {
	seq  uint64
	mark deadMark
}

// markQueue is a coordinator's dead marks owed to its stripes' mark
// holders, by shard, numbered so that a deletion can wait for every mark
// queued before its own. Guarded by the scheme's mu.
type markQueue struct {
	next     uint64               // the number of the next mark
	queued   map[uint16][]seqMark // by shard, in order
	inFlight map[uint64]seqMark   // a send's id → its first mark
	sends    uint64               // ids of sends
}

func newMarkQueue() markQueue {
	return markQueue{next: 1, queued: map[uint16][]seqMark{}, inFlight: map[uint64]seqMark{}}
}

// add queues m and returns its number.
func (q *markQueue) add(m deadMark) uint64 {
	n := q.next
	q.next++
	q.queued[m.shard] = append(q.queued[m.shard], seqMark{seq: n, mark: m})
	return n
}

// take takes shard's queued marks for a send, and returns them and the
// send's id (0 when there are none).
func (q *markQueue) take(shard uint16) ([]seqMark, uint64) {
	ms := q.queued[shard]
	if len(ms) == 0 {
		return nil, 0
	}
	delete(q.queued, shard)
	q.sends++
	q.inFlight[q.sends] = ms[0]
	return ms, q.sends
}

// done ends send id: its marks arrived, or else they are queued again.
func (q *markQueue) done(id uint64, ms []seqMark, ok bool) {
	if id == 0 {
		return
	}
	delete(q.inFlight, id)
	if !ok && len(ms) > 0 {
		shard := ms[0].mark.shard
		q.queued[shard] = append(ms, q.queued[shard]...)
	}
}

// delivered says whether every mark of shard numbered up to n has
// arrived.
func (q *markQueue) delivered(shard uint16, n uint64) bool {
	for _, first := range q.inFlight {
		if first.mark.shard == shard && first.seq <= n {
			return false
		}
	}
	ms := q.queued[shard]
	return len(ms) == 0 || ms[0].seq > n
}

// last is the number of the last mark queued, 0 if none ever was.
func (q *markQueue) last() uint64 { return q.next - 1 }

// markRoles are the roles of a stripe of spec whose holders keep dead
// marks: the parities, and under hybrid data chunk 0 (whose holder is the
// last position), so that with the coordinator M nodes have them.
func markRoles(spec scheme.Spec) []int {
	var roles []int
	for j := range batchParities(spec) {
		roles = append(roles, spec.K+j)
	}
	if spec.Kind == scheme.Hybrid {
		roles = append(roles, 0)
	}
	return roles
}

// keepsMarks says whether node keeps the marks of a stripe laid out for
// a coordinator at position c.
func keepsMarks(spec scheme.Spec, holders []cluster.Node, c int, node cluster.NodeID) bool {
	for _, role := range markRoles(spec) {
		if holders[batchPosition(spec, role, c)].ID == node {
			return true
		}
	}
	return false
}

// marksFor are the marks of ms that node keeps.
func marksFor(spec scheme.Spec, holders []cluster.Node, ms []seqMark, node cluster.NodeID) []seqMark {
	var out []seqMark
	for _, m := range ms {
		if keepsMarks(spec, holders, m.mark.c, node) {
			out = append(out, m)
		}
	}
	return out
}

// deadMarks are the dead marks a deletion (or a move out) waits for
// before the core may purge its tombstone: every mark of the key's shard
// queued up to it, which covers the key's own object deleted now and
// every older object of it that an overwrite, a move or an in-place write
// turned into garbage before (kind.Pending).
type deadMarks struct {
	eng   *Engine
	s     *schemeState
	shard uint16
	seq   uint64
	ups   []Update // the key's in-place removal, if it had an in-place object too
}

// Send sends the shard's queued marks and waits until every mark up to
// the deletion's own has arrived (a round's frames may carry some).
func (d deadMarks) Send(ctx context.Context) error {
	if len(d.ups) > 0 {
		if err := d.eng.send(ctx, d.s, d.ups); err != nil {
			return err
		}
	}
	for {
		if err := d.eng.sendMarks(ctx, d.s, d.shard); err != nil {
			return err
		}
		d.s.mu.Lock()
		done := d.s.batch.data.marks.delivered(d.shard, d.seq)
		d.s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// SendLater sends them in the background; the deletion's tombstone
// stays, as for any removal not known to have arrived.
func (d deadMarks) SendLater() {
	d.eng.sendLater(d.s, d.ups)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d.eng.cfg.PeerTimeout)
		defer cancel()
		if err := d.eng.sendMarks(ctx, d.s, d.shard); err != nil {
			d.eng.log.Debug("stripe: batch dead marks were not delivered", "err", err)
		}
	}()
}

// sendMarks sends shard's queued marks to its mark holders and waits.
func (eng *Engine) sendMarks(ctx context.Context, s *schemeState, shard uint16) error {
	s.mu.Lock()
	ms, id := s.batch.data.marks.take(shard)
	s.mu.Unlock()
	if id == 0 {
		return nil
	}
	err := eng.deliverMarks(ctx, s, shard, ms)
	s.mu.Lock()
	s.batch.data.marks.done(id, ms, err == nil)
	s.mu.Unlock()
	return err
}

// deliverMarks sends ms to shard's mark holders in one batchMark frame
// each.
func (eng *Engine) deliverMarks(ctx context.Context, s *schemeState, shard uint16, ms []seqMark) error {
	holders, err := listHolders(eng.host.Map(), s.spec, shard)
	if err != nil {
		return err
	}
	var reqs []Request
	for _, h := range holders {
		if mine := marksFor(s.spec, holders, ms, h.ID); h.State == cluster.Up && len(mine) > 0 {
			payload := append(wire.Enc(nil).U8(batchMark).U16(s.id).U16(shard), encodeMarks(mine)...)
			reqs = append(reqs, Request{Node: h, Msg: MsgBatch, Payload: payload})
		}
	}
	_, errs := eng.callEach(ctx, reqs)
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("stripe: dead marks to %s: %w", reqs[i].Node.ID, err)
		}
	}
	return nil
}

// encodeMarks is a list of marks, grouped by stripe to keep them small
// (a mark rides along with every overwrite): a u32 count of stripes,
// then per stripe its serial as a uvarint delta from the previous one, a
// uvarint count and, per mark, the chunk (u8) and the offset (uvarint).
func encodeMarks(ms []seqMark) wire.Enc {
	sorted := slices.Clone(ms)
	slices.SortFunc(sorted, func(a, b seqMark) int {
		switch {
		case a.mark.serial < b.mark.serial:
			return -1
		case a.mark.serial > b.mark.serial:
			return 1
		}
		return 0
	})
	var groups [][]seqMark
	for i := 0; i < len(sorted); {
		j := i + 1
		for j < len(sorted) && sorted[j].mark.serial == sorted[i].mark.serial {
			j++
		}
		groups, i = append(groups, sorted[i:j]), j
	}
	e := wire.Enc(nil).U32(uint32(len(groups)))
	prev := uint64(0)
	for _, g := range groups {
		e = binary.AppendUvarint(e, g[0].mark.serial-prev)
		e = binary.AppendUvarint(e, uint64(len(g)))
		prev = g[0].mark.serial
		for _, m := range g {
			e = binary.AppendUvarint(e.U8(uint8(m.mark.chunk)), uint64(m.mark.offset))
		}
	}
	return e
}

// decodeMarks reads what encodeMarks wrote.
func decodeMarks(b []byte) ([]markedAt, error) {
	d := wire.NewDec(b)
	groups := int(d.U32())
	if groups > len(b) {
		return nil, wire.ErrMalformed
	}
	var out []markedAt
	serial := uint64(0)
	for range groups {
		delta, n := uvarint(&d), uvarint(&d)
		if d.Err() != nil || n > uint64(len(b)) {
			return nil, wire.ErrMalformed
		}
		serial += delta
		for range n {
			chunk := d.U8()
			off := uvarint(&d)
			if off > MaxChunkSize {
				d.Fail()
			}
			out = append(out, markedAt{serial: serial, chunk: chunk, offset: uint32(off)})
		}
	}
	return out, d.Done()
}

// uvarint reads a uvarint from d (failing d on a bad one).
func uvarint(d *wire.Dec) uint64 {
	rest := d.Rest()
	v, n := binary.Uvarint(rest)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.Take(n)
	return v
}

// markDead records that the object at (chunk, offset) of stripe (scheme,
// shard, serial) is dead on every piece of it held here.
func (h *batchPieces) markDead(schemeID, shard uint16, serial uint64, chunk uint8, offset uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sp := h.shard(batchPieceKey{scheme: schemeID, shard: shard}, false)
	if sp == nil {
		return
	}
	at := uint64(chunk)<<32 | uint64(offset)
	for _, x := range sp.bySerial[serial] {
		if !slices.Contains(x.p.dead, at) {
			x.p.dead = append(x.p.dead, at)
		}
	}
}

// deadSet is the dead marks of a stripe, by chunk<<32 | offset.
type deadSet map[uint64]bool

// has says whether the object at chunk and offset is marked dead.
func (d deadSet) has(chunk, offset int) bool { return d[uint64(chunk)<<32|uint64(offset)] }

// markedAt is one mark as a holder reads it.
type markedAt struct {
	serial uint64
	chunk  uint8
	offset uint32
}
