package stripe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/wire"
)

// This file reads batch objects kept on other nodes (stripe@batch's data
// chunks 1..K−1, decision 0009): from the chunk's holder, one peer hop as
// BCStore's reads go to their data process (§IV-B), or, with the holder
// down or lacking the piece, decoded from K other pieces of the stripe
// over the object's range only.

// batchRef is what a read of a batch object needs to know of it.
type batchRef struct {
	head   Object // the object, whole when local, else without value
	local  bool
	loc    BatchLoc
	size   int
	shard  uint16
	serial uint64
	c      int // the coordinator's position the stripe was laid out for
}

// ref returns key's batch object's reference. The caller holds s.mu.
func (s *schemeState) ref(key []byte) (batchRef, bool) {
	loc, ok := s.batch.data.Locate(key)
	if !ok {
		return batchRef{}, false
	}
	e, err := s.batch.data.entry(loc)
	if err != nil {
		return batchRef{}, false
	}
	shard, serial, _ := s.batch.data.Serial(loc.Slot)
	return batchRef{head: e.o, local: e.local, loc: loc, size: e.size, shard: shard, serial: serial, c: s.batch.data.stripes[loc.Slot].c}, true
}

// newerInBatch returns key's batch object's reference if the scheme's
// batch stripes hold a newer version of key than its chunks (the object a
// read finds). The caller holds s.mu.
func (s *schemeState) newerInBatch(key []byte) (batchRef, bool) {
	if s.batch == nil {
		return batchRef{}, false
	}
	r, ok := s.ref(key)
	if o, inPlace := s.data.Get(key); ok && inPlace {
		ok = r.head.Version > o.Version
	}
	return r, ok
}

// fetchBatch returns key's current batch object with its value, read
// from wherever it is kept. A key no longer in the scheme's batch
// stripes fails with kind.ErrPieceGone (a write moved it: the caller
// reads again).
func (eng *Engine) fetchBatch(ctx context.Context, s *schemeState, key []byte) (Object, error) {
	s.mu.Lock()
	r, ok := s.ref(key)
	kept := ok && r.local && s.batch.data.CheckKept(r.loc) == nil
	if ok && r.local && !kept {
		eng.stats.CorruptBatch.Add(1)
		eng.log.Warn("stripe: a batch object kept here fails its checksum; reading it from its stripe", "key", string(key))
	}
	if kept {
		r.head.Value = append([]byte(nil), r.head.Value...)
	}
	s.mu.Unlock()
	switch {
	case !ok:
		return Object{}, fmt.Errorf("stripe: %q left the batch stripes: %w", key, kind.ErrPieceGone)
	case kept:
		return r.head, nil
	}
	m := eng.host.Map()
	holders, err := listHolders(m, s.spec, r.shard)
	if err != nil {
		return Object{}, err
	}
	var bad cluster.Node // the holder whose piece failed its check
	if !r.local || s.spec.Kind == scheme.Hybrid {
		// The holder gets half of what is left: a node cut off but not
		// yet marked failed must leave the decode time to read the others.
		direct, cancel := context.WithTimeout(ctx, halfLeft(ctx, eng.cfg.PeerTimeout))
		b, err := eng.readPieceRange(direct, holders[batchPosition(s.spec, r.loc.Chunk, r.c)], s, r, r.loc.Chunk)
		cancel()
		if err == nil {
			o, err := objectAt(b, key, r.head.Version)
			if !errors.Is(err, ErrChecksum) {
				if err == nil && r.local { // hybrid: the piece is a copy of the one kept here
					eng.restoreBatchCopy(ctx, s, r, b, cluster.Node{})
				}
				return o, err
			}
			eng.stats.CorruptBatch.Add(1)
			bad = holders[batchPosition(s.spec, r.loc.Chunk, r.c)]
			eng.log.Warn("stripe: a batch object read from its holder fails its checksum; decoding it", "key", string(key), "holder", bad.ID)
		} else {
			eng.log.Debug("stripe: a batch object's holder did not answer; decoding it", "key", string(key), "err", err)
		}
	}
	return eng.decodeBatchObject(ctx, m, holders, s, r, key, bad)
}

// decodeBatchObject decodes key's batch object r from the other pieces
// of its stripe, and again without each piece in turn while what comes
// out fails its checksum (a corrupt piece spoils the decode). A sound
// object read for a corrupt copy kept here restores the copy.
func (eng *Engine) decodeBatchObject(ctx context.Context, m *cluster.Map, holders []cluster.Node, s *schemeState, r batchRef, key []byte, bad cluster.Node) (Object, error) {
	var corrupt error
	for without := -1; without < s.spec.K+batchParities(s.spec); without++ {
		if without == r.loc.Chunk {
			continue
		}
		b, err := eng.decodeBatchRange(ctx, holders, s, r, without)
		if err != nil && without >= 0 {
			continue // too few pieces left without this one
		}
		switch lost := lostRoles(s, r, holders); {
		case errors.Is(err, errBatchLost) && lost > batchParities(s.spec):
			return Object{}, eng.lostBatchKey(m, s, lost, key, err)
		case err != nil:
			// Within tolerance the pieces are there: a node that does
			// not answer yet, a read that ran out of time. Not a loss.
			return Object{}, fmt.Errorf("stripe: key %q: its batch stripe cannot be read now: %w", key, err)
		}
		o, err := objectAt(b, key, r.head.Version)
		if !errors.Is(err, ErrChecksum) {
			if err == nil && (r.local || bad.ID != "") {
				eng.restoreBatchCopy(ctx, s, r, b, bad)
			}
			return o, err
		}
		corrupt = err
	}
	eng.stats.Unrepaired.Add(1)
	return Object{}, eng.corruptKey(s, key, fmt.Errorf("no decode of its batch stripe passes: %w", corrupt))
}

// restoreBatchCopy writes a sound copy obj of r's object over its
// corrupt one: the copy kept here, or the piece of holder bad (if it is
// not the zero node), and counts the repair.
func (eng *Engine) restoreBatchCopy(ctx context.Context, s *schemeState, r batchRef, obj []byte, bad cluster.Node) {
	if r.local {
		s.mu.Lock()
		ok := s.batch.data.restoreKept(r.loc, r.serial, obj)
		s.mu.Unlock()
		if !ok {
			return
		}
	}
	if bad.ID != "" {
		req := wire.Enc(nil).U8(batchRepair)
		req = batchPieceKey{scheme: s.id, shard: r.shard, serial: r.serial, role: uint8(r.loc.Chunk)}.encode(req).U32(uint32(r.loc.Offset)).Bytes(obj)
		if _, err := eng.host.Call(ctx, bad, MsgBatch, req); err != nil {
			eng.log.Warn("stripe: writing a repaired batch object back to its holder failed", "holder", bad.ID, "err", err)
			return
		}
	}
	eng.stats.Repaired.Add(1)
}

// halfLeft is half the time ctx has left, at most max.
func halfLeft(ctx context.Context, max time.Duration) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return min(max, time.Until(dl)/2)
	}
	return max
}

// lostRoles counts the pieces of r's stripe whose node the map marks not
// up (down, or failed with no stand-in).
func lostRoles(s *schemeState, r batchRef, holders []cluster.Node) int {
	lost := 0
	for role := range s.spec.K + batchParities(s.spec) {
		if p := batchPosition(s.spec, role, r.c); p < len(holders) && holders[p].State != cluster.Up {
			lost++
		}
	}
	return lost
}

// lostBatchKey is the error of a read of key whose batch stripe lost
// more pieces than its scheme tolerates: -LOST, never nil.
func (eng *Engine) lostBatchKey(m *cluster.Map, s *schemeState, lost int, key []byte, err error) error {
	entry, _ := m.SchemeByID(s.id)
	return kind.LostKey{Key: string(key), Scheme: entry.Name(), Lost: lost, Total: s.spec.K + s.spec.M,
		Cause: fmt.Sprintf("its batch stripe: %v", err)}.Err()
}

// objectAt parses b as the object of key at version, checked against its
// checksum (an error matching ErrChecksum where it fails it, or where the
// bytes are not that object at all).
func objectAt(b, key []byte, version uint64) (Object, error) {
	o, n, err := ParseChecked(b)
	if err != nil || n != len(b) || string(o.Key) != string(key) || o.Version != version {
		return Object{}, fmt.Errorf("stripe: key %q: the batch object read back is not version %d of it (%v): %w", key, version, err, ErrChecksum)
	}
	return o, nil
}

// readPieceRange reads r's object range of role's piece from node.
func (eng *Engine) readPieceRange(ctx context.Context, node cluster.Node, s *schemeState, r batchRef, role int) ([]byte, error) {
	if node.State != cluster.Up {
		return nil, fmt.Errorf("stripe: %s is %s", node.ID, node.State)
	}
	req := batchReadReq{Key: batchPieceKey{scheme: s.id, shard: r.shard, serial: r.serial, role: uint8(role)},
		Offset: uint32(r.loc.Offset), Length: uint32(r.size)}
	b, err := eng.host.Call(ctx, node, MsgBatch, req.encode(nil))
	if err == nil && len(b) != r.size {
		err = fmt.Errorf("stripe: %s answered %d bytes of a batch piece, want %d", node.ID, len(b), r.size)
	}
	return b, err
}

// errBatchLost says too few of a stripe's pieces could be read to decode
// an object.
var errBatchLost = errors.New("too few pieces of its batch stripe are readable")

// decodeBatchRange decodes r's object range of its data chunk from K
// other pieces of its stripe, none of them role without (−1: any):
// chunk 0 from the coordinator's copy, the rest read from their holders,
// those on live nodes first.
func (eng *Engine) decodeBatchRange(ctx context.Context, holders []cluster.Node, s *schemeState, r batchRef, without int) ([]byte, error) {
	k, total := s.spec.K, s.spec.K+batchParities(s.spec)
	shards := make([][]byte, total)
	have := 0
	s.mu.Lock()
	for q := range k {
		if c := s.batch.data.keptChunk(r.loc.Slot, r.serial, q); q != r.loc.Chunk && q != without && c != nil {
			shards[q] = rangeOf(c, r.loc.Offset, r.size)
			have++
		}
	}
	s.mu.Unlock()
	for role := 0; role < total && have < k; role++ {
		if role == r.loc.Chunk || role == without || shards[role] != nil {
			continue
		}
		b, err := eng.readPieceRange(ctx, holders[batchPosition(s.spec, role, r.c)], s, r, role)
		if err != nil {
			continue
		}
		shards[role] = b
		have++
	}
	if have < k {
		return nil, fmt.Errorf("%w (%d of %d)", errBatchLost, have, k)
	}
	if err := s.batch.codec.ReconstructData(shards); err != nil {
		return nil, err
	}
	return shards[r.loc.Chunk], nil
}

// rangeOf is n bytes of b from off, zero-padded past b's end.
func rangeOf(b []byte, off, n int) []byte {
	out := make([]byte, n)
	if off < len(b) {
		copy(out, b[off:])
	}
	return out
}
