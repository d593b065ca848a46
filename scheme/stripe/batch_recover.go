package stripe

import (
	"context"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

// This file recovers the batch stripes of a shard whose coordinator
// failed (decision 0009): the new coordinator lists the shard's pieces on
// every live node of the list, reads each stripe's data chunks where they
// survive and decodes the others (the failed coordinator's chunk 0, under
// stripe@batch), and hands their objects of the shard to the node as
// candidates, as Recover does for in-place chunks; the node re-homes the
// newest version of each key through its own write path, after which the
// old stripes are freed (Defer). Every stripe is read before the shard
// serves: batch stripes carry no per-chunk state to defer on.

// batchStripeFound is what the list found of one old stripe.
type batchStripeFound struct {
	lens     []uint32
	pieces   map[int][]byte // by role
	manifest []byte
	dead     deadSet // the union of the holders' dead marks
}

// recoverBatch adds to found the objects of sh's slots in the shard's
// batch stripes of every batching scheme of m, and returns the stripes
// read (by scheme) for Defer to free, and the stripes lost beyond
// tolerance as gone chunks.
func (eng *Engine) recoverBatch(ctx context.Context, m *cluster.Map, sh cluster.Shard, found map[uint16][]Object) (map[uint16][]uint64, []goneChunk, error) {
	read := map[uint16][]uint64{}
	var gone []goneChunk
	for _, entry := range m.Schemes {
		if !packedKind(entry.Spec.Kind) || entry.Spec.Mode == scheme.InPlace {
			continue
		}
		s, err := eng.scheme(entry)
		if err != nil {
			return nil, nil, err
		}
		stripes, err := eng.listShardStripes(ctx, m, s, uint16(sh.ID))
		if err != nil {
			return nil, nil, err
		}
		serials := slices.Sorted(func(yield func(uint64) bool) {
			for serial := range stripes {
				if !yield(serial) {
					return
				}
			}
		})
		within := positionsLost(m, lostPosition{entry: entry, list: uint16(sh.ID)}) <= s.spec.M
		for _, serial := range serials {
			f := stripes[serial]
			data, err := eng.stripeData(s, f)
			switch {
			case err != nil && within:
				// Within tolerance every acknowledged stripe decodes: this
				// is a round the coordinator was still putting when it
				// failed, whose writes nobody was told of. Not a loss;
				// Defer frees what arrived. (Beyond tolerance the two
				// cannot be told apart, and its keys are named lost.)
				eng.log.Info("an unfinished batch round of a failed coordinator dropped", "scheme", s.spec, "shard", sh.ID, "stripe", serial, "pieces", len(f.pieces))
				continue
			case err != nil:
				gone = append(gone, eng.goneStripe(m, s, sh, f, err))
				continue
			}
			for q, d := range data {
				if err := keepLiveObjects(found, entry.ID, sh, d, func(off int) bool { return f.dead.has(q, off) }); err != nil {
					return nil, nil, err
				}
			}
		}
		if len(serials) > 0 {
			s.mu.Lock()
			s.batch.data.SeenSerial(uint16(sh.ID), serials[len(serials)-1])
			s.mu.Unlock()
			read[entry.ID] = serials
		}
	}
	return read, gone, nil
}

// keepLiveObjects adds to found the objects of sh's slots in data chunk
// d of scheme id that are not marked dead.
func keepLiveObjects(found map[uint16][]Object, id uint16, sh cluster.Shard, d []byte, dead func(off int) bool) error {
	err := Scan(d, func(off int, o Object) bool {
		if slot := keyslot.Of(o.Key); slot >= sh.First && slot <= sh.Last && !dead(off) {
			found[id] = append(found[id], o)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("stripe: a recovered batch chunk of shard %d: %w", sh.ID, err)
	}
	return nil
}

// listShardStripes lists, with their bytes, the pieces of shard's batch
// stripes of s on every live node of the list, by serial.
func (eng *Engine) listShardStripes(ctx context.Context, m *cluster.Map, s *schemeState, shard uint16) (map[uint64]*batchStripeFound, error) {
	holders, err := listHolders(m, s.spec, shard)
	if err != nil {
		return nil, err
	}
	out := map[uint64]*batchStripeFound{}
	for _, h := range holders {
		if h.State != cluster.Up {
			continue
		}
		err := eng.listPieces(ctx, h, s, shard, true, func(l batchListed) {
			f := out[l.Serial]
			if f == nil {
				f = &batchStripeFound{lens: l.Lens, pieces: map[int][]byte{}, dead: deadSet{}}
				out[l.Serial] = f
			}
			f.pieces[int(l.Role)] = l.Bytes
			if l.Manifest != nil {
				f.manifest = l.Manifest
			}
			for _, d := range l.Dead {
				f.dead[d] = true
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stripeData returns f's data chunks: as listed where they survive and
// pass their objects' checks, the others decoded from K pieces; a decode
// that fails the checks (a corrupt piece spoiled it) is tried again
// without each other piece in turn.
func (eng *Engine) stripeData(s *schemeState, f *batchStripeFound) ([][]byte, error) {
	k, total := s.spec.K, s.spec.K+batchParities(s.spec)
	if len(f.lens) != k {
		return nil, fmt.Errorf("stripe: a batch stripe of %d data chunks, want %d", len(f.lens), k)
	}
	skip := map[int]bool{}
	for q := range k {
		if b, ok := f.pieces[q]; ok && CheckObjects(b) != nil {
			skip[q] = true
			eng.stats.CorruptBatch.Add(1)
		}
	}
	data, err := decodeFound(s, f, skip)
	if err == nil && checkedChunks(data) {
		if len(skip) > 0 {
			eng.stats.Repaired.Add(int64(len(skip)))
		}
		return data, nil
	}
	for role := range total {
		if skip[role] || f.pieces[role] == nil {
			continue
		}
		skip[role] = true
		if data, err = decodeFound(s, f, skip); err == nil && checkedChunks(data) {
			eng.stats.Repaired.Add(1)
			return data, nil
		}
		delete(skip, role)
	}
	if err == nil {
		err = fmt.Errorf("stripe: no decode of a batch stripe passes its objects' checks: %w", ErrChecksum)
	}
	return nil, err
}

// checkedChunks says whether every object of data passes its check.
func checkedChunks(data [][]byte) bool {
	return !slices.ContainsFunc(data, func(d []byte) bool { return CheckObjects(d) != nil })
}

// decodeFound returns f's data chunks: as listed where they survive and
// are not in skip, the others decoded from the pieces not in skip.
func decodeFound(s *schemeState, f *batchStripeFound, skip map[int]bool) ([][]byte, error) {
	k, total := s.spec.K, s.spec.K+batchParities(s.spec)
	n := 0
	for _, l := range f.lens {
		n = max(n, int(l))
	}
	data, missing := make([][]byte, k), false
	for q := range k {
		b, ok := f.pieces[q]
		if ok && len(b) == int(f.lens[q]) && !skip[q] {
			data[q] = b
		} else {
			missing = true
		}
	}
	if !missing {
		return data, nil
	}
	shards := make([][]byte, total)
	for role, b := range f.pieces {
		if role < total && !skip[role] && (role >= k || len(b) == int(f.lens[role])) {
			shards[role] = padded(b, n)
		}
	}
	if err := s.batch.codec.ReconstructData(shards); err != nil {
		return nil, err
	}
	for q := range k {
		if data[q] == nil {
			data[q] = shards[q][:f.lens[q]]
		}
	}
	return data, nil
}

// goneStripe is a batch stripe of sh that cannot be decoded, as the
// gone chunk reportGone names: by its manifest's tags of sh's slots, or
// unnamed when its first parity holder is lost too.
func (eng *Engine) goneStripe(m *cluster.Map, s *schemeState, sh cluster.Shard, f *batchStripeFound, err error) goneChunk {
	entry, _ := m.SchemeByID(s.id)
	g := goneChunk{lp: lostPosition{entry: entry, list: uint16(sh.ID)}, unnamed: f.manifest == nil, err: err}
	Tags(f.manifest, func(t uint32) {
		if slot := keyslot.TagSlot(t); slot >= sh.First && slot <= sh.Last && !slices.Contains(g.tags, t) {
			g.tags = append(g.tags, t)
		}
	})
	return g
}

// freeRecovered frees the old batch stripes a recovery of shard read,
// once their objects are re-homed.
func (eng *Engine) freeRecovered(shard uint16, read map[uint16][]uint64) {
	for id, serials := range read {
		if s := eng.byID(id); s != nil {
			eng.freeStripes(s, shard, serials)
		}
	}
}
