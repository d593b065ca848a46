package repair

import (
	"context"
	"time"

	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/wire"
)

// This file is corruption handling (issue 4, "Corruption"). Every stored
// value and piece carries a CRC32C. A copy whose CRC does not match is
// treated as lost and repaired from the key's redundancy:
//
//   - on read: a rep key's corrupt primary record is replaced by a replica
//     that passes its check; a split read decodes around a corrupt shard
//     (as around a missing one) and then has the key's pieces stored again;
//   - by the scrub: each node walks its primary records and pieces at
//     --scrub-rate bytes per second; a corrupt primary record is repaired as
//     on read, a corrupt piece is dropped and its key's coordinator asked
//     (peer message Repair) to store the key's pieces again;
//   - packed schemes (stripe, hybrid, their @batch modes) check every
//     object in their chunks on each read (scheme/stripe/repair.go), and
//     the scrub walks the chunks and batch stripes this node coordinates
//     at the same pace: each chunk's objects, the holders' copies of open
//     chunks and hybrid replicas against the chunk, each stripe's parity
//     against a fresh encode, each batch piece against its stripe's
//     encode, replacing whatever differs (stripe.Engine.Scrub).
//
// A `none` key has no redundancy: its corrupt record answers an error that
// says so, and is never served.
//
// DEBUG FLIP (allowed with --enable-debug-command) flips a byte of every
// copy of a key this node stores, so tests and drills can corrupt data.

// scrubPage is how many records one scrub step checks.
const scrubPage = 256

// scrubRecordCost is what the scrub counts against --scrub-rate for each
// record beyond its key and value bytes: the lookup and copy cost about as
// much as reading that many bytes more.
const scrubRecordCost = 256

// ScrubLoop checks the CRC32C of everything this node stores, over and
// over, at cfg.ScrubRate bytes per second.
func (n *Repairer) ScrubLoop(ctx context.Context) {
	if n.Cfg.ScrubRate <= 0 {
		return
	}
	for ctx.Err() == nil {
		n.scrubStore(ctx, n.Primary, n.scrubPrimary)
		n.scrubStore(ctx, n.Pieces, n.scrubPiece)
		n.scrubPacked(ctx)
		// A pass over a small store is instant: rest between passes so
		// that an idle node does not spin.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// scrubStore runs check on every record of st, paced.
func (n *Repairer) scrubStore(ctx context.Context, st *store.Store, check func(context.Context, []byte, []byte, store.Meta)) {
	pace := core.NewPacer()
	var cursor uint64
	for {
		var keys [][]byte
		var cost int64 // of the page
		cursor = st.Scan(cursor, scrubPage, func(k []byte, _ store.Meta) bool {
			keys = append(keys, append([]byte(nil), k...))
			return true
		})
		for _, k := range keys {
			if val, meta, ok := st.View(k); ok { // checked, never modified
				// Pace on the record, not just its value: a store of small
				// values is scrubbed at a bounded number of records too.
				cost += int64(len(k) + len(val) + scrubRecordCost)
				n.Health.Scrubbed.Add(int64(len(val)))
				check(ctx, k, val, meta)
			}
		}
		_ = pace.Wait(ctx, cost, n.Cfg.ScrubRate)
		if cursor == 0 || ctx.Err() != nil {
			return
		}
	}
}

// scrubPacked checks this node's packed chunks and batch stripes at
// --scrub-rate (stripe.Engine.Scrub).
func (n *Repairer) scrubPacked(ctx context.Context) {
	if !n.stripes.InUse() {
		return
	}
	pace := core.NewPacer()
	r := n.stripes.Scrub(ctx, func(bytes int64) {
		n.Health.Scrubbed.Add(bytes)
		_ = pace.Wait(ctx, bytes, n.Cfg.ScrubRate)
	})
	if r.Corrupt > 0 {
		n.Log.Warn("scrub: packed chunks checked", "chunks", r.Chunks, "corrupt", r.Corrupt, "repaired", r.Repaired, "busy", r.Busy)
	}
}

// scrubPrimary checks one primary record that keeps its value (none,
// rep: kind.Scheme.ReadsLocally) against its CRC32C; a corrupt one is
// read through its scheme, which repairs it where it keeps another copy.
func (n *Repairer) scrubPrimary(ctx context.Context, key, val []byte, meta store.Meta) {
	sch, ok := n.Schemes(n.Ctl.Map()).Lookup(meta.Scheme)
	if !ok || !sch.Traits().ReadsLocally || core.IsStub(meta) || bigcopy.Checksum(val) == meta.Aux {
		return
	}
	if _, err := sch.Read(ctx, key, meta, val); err != nil {
		n.Log.Warn("scrub: corrupt record", "key", string(key), "err", err)
	}
}

// scrubPiece checks one piece; a corrupt one is dropped and its key's
// coordinator asked to store the key's pieces again.
func (n *Repairer) scrubPiece(ctx context.Context, k, val []byte, meta store.Meta) {
	ref, kind, ok := core.ParsePieceKey(k)
	if !ok || kind == core.PieceKindDirectory || bigcopy.Checksum(val) == meta.Aux {
		return
	}
	n.Health.Corrupt.Add(1)
	n.Pieces.DeleteIf(k, func(m store.Meta) bool { return m.Version == meta.Version })
	m := n.Ctl.Map()
	sh := m.ShardByID(int(ref.Shard))
	if sh == nil || !sh.Keeps(keyslot.Of(ref.Key)) {
		return // a shard's that no longer keeps the key: nothing to repair
	}
	coord, ok := m.CoordinatorOf(sh) // the importer's, in a migration
	if !ok {
		return
	}
	var err error
	if coord.ID == n.NodeID {
		err = n.RepairKey(ctx, ref.Key)
	} else {
		_, err = n.Call(ctx, coord, peer.MsgRepair, wire.Enc(nil).Bytes(ref.Key))
	}
	n.Log.Warn("scrub: corrupt piece dropped, repair asked", "key", string(ref.Key), "coordinator", coord.ID, "err", err)
}
