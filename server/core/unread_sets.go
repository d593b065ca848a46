package core

import (
	"context"
	"errors"
	"slices"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
)

// BlindWrite is one plain SET (or one MSET pair): it needs no earlier state
// of the key, unless a write of the key is in flight.
type BlindWrite struct {
	Key, Value []byte
	op         *WriteOp
	p          *pending // set while the write waits for its redundancy
	Err        error
}

// WriteBlind runs plain SETs together: a pipeline's, or an MSET's keys on
// this coordinator. Each key gets Node.set's semantics, but every write
// takes its version first, the redundancy of all of them goes out in one
// frame per node (PutPieces for replicas and shards, Stripe for stripe
// schemes' chunk updates), and each commits once the replies are in, so a
// batch of rep:3 SETs costs two frames each way instead of two per key. A
// key with a write already in flight, repeated in the batch, or held as a
// rep stub, is written afterwards through Node.set, which waits for that
// write or fills the stub. began is when the writes began (a monotime).
func (n *Coordinator) WriteBlind(ctx context.Context, ws []BlindWrite, began int64) {
	var later []int
	for i := range ws {
		if !n.beginBlind(ctx, &ws[i], began) {
			later = append(later, i)
		}
	}
	n.settleBlind(ctx, ws)
	for _, i := range later {
		ws[i].Err = n.Set(ctx, ws[i].Key, ws[i].Value, 0, false, nil)
	}
}

// settleBlind sends the redundancy of every begun write of ws (those with
// a pending version) together, then commits each whose redundancy was
// acknowledged and aborts the others.
func (n *Coordinator) settleBlind(ctx context.Context, ws []BlindWrite) {
	var packed packedBatch
	m := n.Ctl.Map()
	batch := PieceBatch{sizeHint: replicaFrameSize(n, ws)}
	for i := range ws {
		w := &ws[i]
		if w.p == nil {
			continue // not begun, committed already (none) or failed
		}
		var err error
		if p, ok := w.op.packedOf(n); ok {
			err = packed.add(ctx, p, w.op, w.p.version, i)
		} else {
			err = batch.add(n, m, w.op, w.p.version, i)
		}
		if err != nil {
			n.abort(w.Key, w.p) // nothing was appended or sent
			w.p, w.Err = nil, err
		}
	}
	errs := make([]error, len(ws))
	if len(batch.dests) > 0 {
		errs = n.groups.join(ctx, n, len(ws), batch.into)
	}
	packed.send(ctx, errs)
	for i := range ws {
		if ws[i].p != nil {
			n.finishBlind(ctx, &ws[i], errs[i])
		}
	}
}

// replicaFrameSize is the size of the PutPieces payload a node holding a
// replica of every begun rep or split write of ws gets, but for the large
// values it refers to (spool): what settleBlind's frames start with, so
// that they are not grown piece by piece. Writes to
// none (committed already) and to packed schemes add nothing.
func replicaFrameSize(n *Coordinator, ws []BlindWrite) int {
	size := peer.PutPiecesHeader
	for i := range ws {
		if w := &ws[i]; w.p != nil && !IsPacked(w.op.scheme(n)) {
			size += peer.Piece{Key: w.Key, Data: w.Value}.InlineLen()
		}
	}
	return size
}

// packedBatch gathers a batch's writes to packed schemes by scheme, so
// that each scheme's updates go out together (kind.Packed.Flush).
type packedBatch struct {
	schemes []kind.Packed
	writes  [][]*kind.Staged
	owners  [][]int
}

// add places op's object at version v in its packed scheme p on behalf of
// write owner.
func (b *packedBatch) add(ctx context.Context, p kind.Packed, op *WriteOp, v uint64, owner int) error {
	w := op.stage(v)
	if err := p.Stage(ctx, w); err != nil {
		return err
	}
	id := p.Entry().ID
	i := slices.IndexFunc(b.schemes, func(q kind.Packed) bool { return q.Entry().ID == id })
	if i < 0 {
		i = len(b.schemes)
		b.schemes = append(b.schemes, p)
		b.writes = append(b.writes, nil)
		b.owners = append(b.owners, nil)
	}
	b.writes[i] = append(b.writes[i], w)
	b.owners[i] = append(b.owners[i], owner)
	return nil
}

// send flushes each scheme's writes and files a failure in errs for every
// write whose updates did not arrive.
func (b *packedBatch) send(ctx context.Context, errs []error) {
	for i, p := range b.schemes {
		p.Flush(ctx, b.writes[i])
		for j, w := range b.writes[i] {
			if w.Err != nil {
				owner := b.owners[i][j]
				errs[owner] = errors.Join(errs[owner], w.Err)
			}
		}
	}
}

// beginBlind starts w unless a write of its key is in flight or it would
// write over a stub (false: Node.set handles both). A
// write in scheme none commits at once; any other takes a version and
// registers in flight.
func (n *Coordinator) beginBlind(ctx context.Context, w *BlindWrite, began int64) bool {
	s := n.Inflight.Shard(w.Key)
	s.Mu.Lock()
	if q := s.Newest(w.Key); q != nil {
		p, op := n.overlapLocked(s, q, w.Key, w.Value)
		s.Mu.Unlock()
		if p == nil {
			return false // Node.set waits for q
		}
		op.began = began
		w.op, w.p = op, p
		if err := n.checkMemory(w.op); err != nil {
			n.abort(w.Key, w.p)
			w.p, w.Err = nil, err
		}
		return true
	}
	if op, done, err := n.writeUnpeeked(s, w.Key, w.Value, began); done {
		w.op, w.Err = op, err
		return true
	}
	cur, pk := n.peekLocked(w.Key)
	w.op = n.ValueOp(cur, w.Key, w.Value, 0, false, nil)
	w.op.began = began
	if n.overwritesStub(cur, w.op) {
		s.Mu.Unlock()
		return false // Node.set fills the stub first
	}
	if w.op.scheme(n).Traits().Immediate {
		w.Err = n.writeLocked(ctx, s, w.op, pk) // commits and unlocks
		return true
	}
	w.p = s.Begin(w.Key, n.Versions.next())
	n.markOverlaps(w.p, w.op)
	s.Mu.Unlock()
	if err := n.checkMemory(w.op); err != nil {
		n.abort(w.Key, w.p)
		w.p, w.Err = nil, err
	}
	return true
}

// finishBlind commits w if all its pieces were stored (sendErr nil), else
// aborts it and releases whatever pieces did get stored.
func (n *Coordinator) finishBlind(ctx context.Context, w *BlindWrite, sendErr error) {
	if sendErr != nil {
		sendErr = notAcknowledged(w.Key, sendErr)
	}
	w.Err = n.settle(ctx, w.p, w.op, n.ownPieces(w.op, w.p.version), sendErr)
}
