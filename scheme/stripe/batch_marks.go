package stripe

import (
	"context"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/wire"
)

// Dead marks (decision 0009). A batch stripe is immutable, so a deleted
// key's object stays in it until the GC frees the stripe, and a recovery
// that decoded it then would bring the key back once the deletion's
// directory tombstone is purged. So a deletion of a batch key (or a move
// out of its scheme) sends a dead mark, (stripe, chunk, offset), to every
// holder of the stripe, which keeps it beside its piece; the core purges
// the tombstone only once every live holder has it, as it does for an
// in-place removal's delta. Recovery skips the objects any holder marked
// dead; losing every mark would take every node of the stripe. An
// overwrite sends nothing: versions settle which object is the key's.

// deadMark is one batch object turned garbage by a deletion.
type deadMark struct {
	shard  uint16
	serial uint64
	chunk  int
	offset int
}

// deleteMarked deletes key's batch object older than below and returns
// its dead mark, or nil if the scheme held none. The caller holds the
// scheme's mu.
func (b *batchMode) deleteMarked(key []byte, below uint64) (*deadMark, error) {
	loc, ok, err := b.data.Delete(key, below)
	if !ok || err != nil {
		return nil, err
	}
	shard, serial, _ := b.data.Serial(loc.Slot)
	return &deadMark{shard: shard, serial: serial, chunk: loc.Chunk, offset: loc.Offset}, nil
}

// deadMarks is a deletion's dead mark owed to a stripe's holders
// (kind.Pending).
type deadMarks struct {
	eng  *Engine
	s    *schemeState
	mark deadMark
}

// Send delivers the mark to every live holder of the stripe and waits.
func (d deadMarks) Send(ctx context.Context) error { return d.eng.sendMark(ctx, d.s, d.mark) }

// SendLater delivers it in the background; the deletion's tombstone
// stays, as for any removal not known to have arrived.
func (d deadMarks) SendLater() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d.eng.cfg.PeerTimeout)
		defer cancel()
		if err := d.eng.sendMark(ctx, d.s, d.mark); err != nil {
			d.eng.log.Debug("stripe: a batch dead mark was not delivered", "err", err)
		}
	}()
}

// sendMark sends mark to every live node of its stripe's list.
func (eng *Engine) sendMark(ctx context.Context, s *schemeState, mark deadMark) error {
	holders, err := listHolders(eng.host.Map(), s.spec, mark.shard)
	if err != nil {
		return err
	}
	payload := wire.Enc(nil).U8(batchMark).U16(s.id).U16(mark.shard).U64(mark.serial).U8(uint8(mark.chunk)).U32(uint32(mark.offset))
	var reqs []Request
	for _, h := range holders {
		if h.State == cluster.Up { // this node too, if it stands in for a holder
			reqs = append(reqs, Request{Node: h, Msg: MsgBatch, Payload: payload})
		}
	}
	_, errs := eng.callEach(ctx, reqs)
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("stripe: a dead mark to %s: %w", reqs[i].Node.ID, err)
		}
	}
	return nil
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
