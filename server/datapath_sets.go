package server

import (
	"context"
	"errors"
	"slices"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
)

// blindWrite is one plain SET (or one MSET pair): it needs no earlier state
// of the key, unless a write of the key is in flight.
type blindWrite struct {
	key, value []byte
	op         *writeOp
	p          *pending // set while the write waits for its redundancy
	err        error
}

// writeBlind runs plain SETs together: a pipeline's, or an MSET's keys on
// this coordinator. Each key gets Node.set's semantics, but every write
// takes its version first, the redundancy of all of them goes out in one
// frame per node (PutPieces for replicas and shards, Stripe for stripe
// schemes' chunk updates), and each commits once the replies are in, so a
// batch of rep:3 SETs costs two frames each way instead of two per key. A
// key with a write already in flight, repeated in the batch, or held as a
// rep stub, is written afterwards through Node.set, which waits for that
// write or fills the stub. began is when the writes began (a monotime).
func (n *Coordinator) writeBlind(ctx context.Context, ws []blindWrite, began int64) {
	var later []int
	for i := range ws {
		if !n.beginBlind(ctx, &ws[i], began) {
			later = append(later, i)
		}
	}
	n.settleBlind(ctx, ws)
	for _, i := range later {
		ws[i].err = n.set(ctx, ws[i].key, ws[i].value, 0, false, nil)
	}
}

// settleBlind sends the redundancy of every begun write of ws (those with
// a pending version) together, then commits each whose redundancy was
// acknowledged and aborts the others.
func (n *Coordinator) settleBlind(ctx context.Context, ws []blindWrite) {
	var packed packedBatch
	m := n.ctl.Map()
	batch := pieceBatch{sizeHint: replicaFrameSize(n, ws)}
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
			n.abort(w.key, w.p) // nothing was appended or sent
			w.p, w.err = nil, err
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
func replicaFrameSize(n *Coordinator, ws []blindWrite) int {
	size := peer.PutPiecesHeader
	for i := range ws {
		if w := &ws[i]; w.p != nil && !isPacked(w.op.scheme(n)) {
			size += peer.Piece{Key: w.key, Data: w.value}.InlineLen()
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
func (b *packedBatch) add(ctx context.Context, p kind.Packed, op *writeOp, v uint64, owner int) error {
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
func (n *Coordinator) beginBlind(ctx context.Context, w *blindWrite, began int64) bool {
	s := n.inflight.shard(w.key)
	s.mu.Lock()
	if s.newest(w.key) != nil {
		s.mu.Unlock()
		return false
	}
	if op, done, err := n.writeUnpeeked(s, w.key, w.value, began); done {
		w.op, w.err = op, err
		return true
	}
	cur, pk := n.peekLocked(w.key)
	w.op = n.valueOp(cur, w.key, w.value, 0, false, nil)
	w.op.began = began
	if n.overwritesStub(cur, w.op) {
		s.mu.Unlock()
		return false // Node.set fills the stub first
	}
	if w.op.scheme(n).Traits().Immediate {
		w.err = n.writeLocked(ctx, s, w.op, pk) // commits and unlocks
		return true
	}
	w.p = s.begin(w.key, n.clock.next())
	s.mu.Unlock()
	if err := n.checkMemory(w.op); err != nil {
		n.abort(w.key, w.p)
		w.p, w.err = nil, err
	}
	return true
}

// finishBlind commits w if all its pieces were stored (sendErr nil), else
// aborts it and releases whatever pieces did get stored.
func (n *Coordinator) finishBlind(ctx context.Context, w *blindWrite, sendErr error) {
	if sendErr != nil {
		sendErr = notAcknowledged(w.key, sendErr)
	}
	w.err = n.settle(ctx, w.p, w.op, ownPieces(w.op, w.p.version), sendErr)
}
