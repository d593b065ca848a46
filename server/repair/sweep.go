package repair

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/wire"
)

// This file is the piece sweep: garbage collection of redundancy pieces.
// Failures leave pieces nobody will release: a write whose coordinator died
// after sending them, a release that could not reach a node, a replica on a
// node that stood in for a failed one until a spare took its place, the
// replica a node kept of a key it then came to coordinate. They are never
// read (reads go through the primary record's version), but they cost
// memory, and each scheme's memory must come back to its formula after a
// failure (issue 5's robustness suite counts them).
//
// So every node walks its pieces, a page at a time, and asks each key's
// coordinator about them (peer.MsgAudit). The coordinator, which alone knows
// the key's committed version and placement, answers per piece: drop it
// when the key no longer exists, or exists in another scheme, or at another
// version (split shards are per version), or when the holder is not where
// the key's placement puts that piece; keep it otherwise, and keep
// everything while it cannot be sure: a write of the key in flight, the
// shard recovering or rebuilding, a stub not yet filled, a lost key, no
// fresh lease, or not being the key's coordinator in its own map. The
// holder drops a piece only if it still holds that very version, so a
// piece written meanwhile survives a verdict about an older one.
//
// Pieces and directory entries are named by the shard that keeps their
// key (kind.Piece): one of a shard that no longer keeps its key's slot (a
// migration moved the slot to another shard, or ended the shard) is
// garbage whatever its key's state, and the holder drops it without
// asking. A slot never returns to a shard it left (a migration always
// moves slots to a new shard), so a holder whose map is older than the
// coordinator's can only keep too much, never drop too much; a shard its
// map does not know yet keeps its pieces.

// sweepPage is how many pieces one audit step looks at.
const sweepPage = 1024

// AuditItem names one piece a holder asks its key's coordinator about.
type AuditItem struct {
	Key     []byte
	Shard   uint16
	Scheme  uint16
	Version uint64
	Kind    uint8 // pieceKindReplica or pieceKindShard
	Index   uint8 // a shard's index
}

// encodeAuditItems is the wire form of items.
func encodeAuditItems(items []AuditItem) []byte {
	return wire.EncodeList(items, func(e wire.Enc, a AuditItem) wire.Enc { return a.encode(e) })
}

func (a AuditItem) encode(e wire.Enc) wire.Enc {
	return e.Bytes(a.Key).U16(a.Shard).U16(a.Scheme).U64(a.Version).U8(a.Kind).U8(a.Index)
}

func readAuditItem(d *wire.Dec) AuditItem {
	a := AuditItem{Key: d.Bytes(), Shard: d.U16(), Scheme: d.U16(), Version: d.U64(), Kind: d.U8(), Index: d.U8()}
	if a.Kind > core.PieceKindShard {
		d.Fail()
	}
	return a
}

// encodeAudit is a peer.MsgAudit payload: the holder's id, then its pieces.
func encodeAudit(holder cluster.NodeID, items []AuditItem) []byte {
	return append(wire.Enc(nil).Bytes([]byte(holder)), encodeAuditItems(items)...)
}

func decodeAudit(b []byte) (cluster.NodeID, []AuditItem, error) {
	d := wire.NewDec(b)
	holder := cluster.NodeID(d.Bytes())
	if d.Err() != nil {
		return "", nil, d.Err()
	}
	items, err := wire.DecodeList(d.Rest(), readAuditItem)
	return holder, items, err
}

// SweepLoop audits this node's pieces, one page every --sweep-interval,
// starting over when it reaches the end, and retries the releases of
// unfinished deletions (server/core/purge.go) at the same pace.
func (n *Repairer) SweepLoop(ctx context.Context) {
	if n.Cfg.SweepInterval <= 0 {
		return
	}
	t := time.NewTicker(n.Cfg.SweepInterval)
	defer t.Stop()
	var cursor uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n.Serving() {
			cursor = n.sweepStep(ctx, cursor)
			n.FinishDeletions(ctx)
			n.stripes.Resend(ctx)
		}
	}
}

// heldPieceRow is one piece of this node's store, as the sweep found it.
type heldPieceRow struct {
	storeKey []byte
	item     AuditItem
}

// sweepStep audits one page of pieces from cursor and returns the next
// cursor (0 at the end of a pass).
func (n *Repairer) sweepStep(ctx context.Context, cursor uint64) uint64 {
	m := n.Ctl.Map()
	byNode := map[cluster.NodeID][]heldPieceRow{}
	nodes := map[cluster.NodeID]cluster.Node{}
	var foreign [][]byte // pieces of shards that no longer keep their slot
	next := n.Pieces.Scan(cursor, sweepPage, func(k []byte, meta store.Meta) bool {
		ref, kind, ok := core.ParsePieceKey(k)
		if !ok {
			return true
		}
		sh := m.ShardByID(int(ref.Shard))
		if shardLeft(sh, ref.Key) {
			foreign = append(foreign, append([]byte(nil), k...))
			return true
		}
		if kind == core.PieceKindDirectory || sh == nil {
			return true
		}
		coord, ok := m.CoordinatorOf(sh)
		if !ok || coord.State != cluster.Up {
			return true
		}
		row := heldPieceRow{storeKey: append([]byte(nil), k...),
			item: AuditItem{Key: append([]byte(nil), ref.Key...), Shard: ref.Shard, Scheme: ref.Scheme, Version: meta.Version, Kind: kind, Index: meta.Flags}}
		byNode[coord.ID] = append(byNode[coord.ID], row)
		nodes[coord.ID] = coord
		return true
	})
	for _, k := range foreign {
		if n.Pieces.Delete(k) {
			n.Health.Swept.Add(1)
		}
	}
	for id, rows := range byNode {
		items := make([]AuditItem, len(rows))
		for i, r := range rows {
			items[i] = r.item
		}
		drop, epoch, err := n.askAudit(ctx, nodes[id], items)
		if err != nil {
			n.Log.Debug("piece audit failed", "coordinator", id, "err", err)
			continue
		}
		if n.Ctl.Map().Epoch != epoch {
			continue // placements may have moved since the verdicts: ask again next pass
		}
		for i, r := range rows {
			if drop[i] {
				it := r.item
				if n.Pieces.DeleteIf(r.storeKey, func(meta store.Meta) bool {
					return meta.Version == it.Version && (it.Kind != core.PieceKindShard || meta.Flags == it.Index)
				}) {
					n.Health.Swept.Add(1)
				}
			}
		}
	}
	return next
}

// shardLeft says whether sh (nil: a shard the map does not know yet) no
// longer keeps key's slot: then its pieces of key are garbage (see the
// file comment).
func shardLeft(sh *cluster.Shard, key []byte) bool {
	return sh != nil && !sh.Keeps(keyslot.Of(key))
}

// askAudit asks node (the coordinator of items' keys) which of this
// node's pieces items it should drop, and returns the map epoch the
// verdicts were given under.
func (n *Repairer) askAudit(ctx context.Context, node cluster.Node, items []AuditItem) ([]bool, uint64, error) {
	if node.ID == n.NodeID {
		drop, epoch := n.AuditVerdicts(n.NodeID, items)
		return drop, epoch, nil
	}
	resp, err := n.Call(ctx, node, peer.MsgAudit, encodeAudit(n.NodeID, items))
	if err != nil {
		return nil, 0, err
	}
	if len(resp) != 12+len(items) || int(binary.BigEndian.Uint32(resp[8:])) != len(items) {
		return nil, 0, wire.ErrMalformed
	}
	drop := make([]bool, len(items))
	for i := range drop {
		drop[i] = resp[12+i] == 1
	}
	return drop, binary.BigEndian.Uint64(resp), nil
}

// OnAudit answers a holder's peer.MsgAudit (the holder's id, then the pieces):
// the map epoch of the verdicts, a count, then one byte per piece, 1 to
// drop it.
func (n *Repairer) OnAudit(b []byte) ([]byte, error) {
	holder, items, err := decodeAudit(b)
	if err != nil {
		return nil, err
	}
	verdicts, epoch := n.AuditVerdicts(holder, items)
	out := make([]byte, 12+len(items))
	binary.BigEndian.PutUint64(out, epoch)
	binary.BigEndian.PutUint32(out[8:], uint32(len(items)))
	for i, drop := range verdicts {
		if drop {
			out[12+i] = 1
		}
	}
	return out, nil
}

// AuditVerdicts decides which of holder's pieces items are garbage, and
// returns the map epoch it decided under. The node answers for the keys it
// coordinates in its own map, under a fresh lease, once it has run for two
// failure timeouts (a node restarted empty must be failed over, not believed
// that its keys are gone); anything else is kept.
func (n *Repairer) AuditVerdicts(holder cluster.NodeID, items []AuditItem) ([]bool, uint64) {
	drop := make([]bool, len(items))
	m := n.Ctl.Map()
	if !n.Leased() || time.Since(n.Started) < 2*n.Cfg.FailureTimeout {
		return drop, m.Epoch
	}
	for i, it := range items {
		drop[i] = n.isGarbage(m, holder, it)
	}
	return drop, m.Epoch
}

// isGarbage is the verdict on one piece held by holder; see the file
// comment. The caller holds a lease.
func (n *Repairer) isGarbage(m *cluster.Map, holder cluster.NodeID, it AuditItem) bool {
	slot := keyslot.Of(it.Key)
	sh := m.ShardOf(slot)
	coord, ok := m.Coordinator(slot)
	if sh == nil || !ok || coord.ID != n.NodeID || uint16(sh.ID) != it.Shard || sh.Recovering || len(sh.Rebuild) > 0 {
		return false
	}
	if m.ImporterOf(slot) != nil {
		// A migrating slot's pieces are this node's or the importer's
		// (decision 0016): neither knows the other's, so nothing is
		// judged until the migration ends.
		return false
	}
	if n.Lost.Named(it.Key) {
		return false
	}
	s := n.Inflight.Shard(it.Key)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.Newest(it.Key) != nil {
		return false
	}
	meta, exists := n.Primary.Meta(it.Key)
	switch {
	case !exists:
		return true // deleted, or never committed
	case core.IsStub(meta):
		return false // its value is being fetched from pieces like this one
	case it.Scheme != meta.Scheme:
		return true // the key moved to another scheme
	}
	sch, ok := n.Schemes(m).Lookup(meta.Scheme)
	if !ok {
		return false
	}
	if sch.Traits().Pieces == kind.Shards && it.Version != meta.Version {
		return true // shards are per version; the committed one is another
	}
	return sch.Misplaced(m, it.Key, int(it.Index), holder, n.NodeID)
}
