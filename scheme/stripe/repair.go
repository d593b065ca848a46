package stripe

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
)

// This file repairs corrupt objects (DESIGN.md §4 "Corruption": a
// mismatch on read is treated as a lost piece and repaired from
// redundancy, KVMD §3.2). A read that finds its object failing its
// checksum (Data.GetChecked) never serves it: the chunk is restored from
// its stripe first — an open chunk from a parity holder's copy, a sealed
// hybrid chunk from the replica holder's, any sealed chunk by a decode of
// its stripe without it (solveChunk, as a degraded read decodes a lost
// chunk) — and the copy is taken only if every object in it passes its
// check and the chunk has not changed meanwhile (Data.Restore). A decode
// that a corrupt parity chunk spoiled fails that check, and is tried
// again without each parity in turn. When no copy passes, the read
// answers kind.CorruptError, naming the key.

// repairAttempts is how many times a repair reads its copies again while
// the chunk or its stripe changes under it.
const repairAttempts = 5

// repairKey restores the chunks of key's in-place object that fail
// their checks. It returns nil when nothing of key's is corrupt any more.
func (eng *Engine) repairKey(ctx context.Context, s *schemeState, key []byte) error {
	s.mu.Lock()
	_, _, err := s.data.GetChecked(key)
	s.mu.Unlock()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		return nil // repaired meanwhile, rewritten or gone
	}
	for _, id := range ce.Chunks {
		eng.stats.CorruptChunks.Add(1)
		if err := eng.repairChunk(ctx, s, id); err != nil {
			eng.stats.Unrepaired.Add(1)
			eng.log.Error("stripe: a corrupt chunk could not be repaired", "chunk", id.String(), "scheme", s.spec.String(), "key", string(key), "err", err)
			return err
		}
		eng.stats.Repaired.Add(1)
		eng.log.Warn("stripe: corrupt chunk repaired from its stripe", "chunk", id.String(), "scheme", s.spec.String(), "key", string(key))
	}
	return nil
}

// repairChunk restores this node's chunk id from its stripe, reading the
// copies again while the chunk or the stripe changes under it.
func (eng *Engine) repairChunk(ctx context.Context, s *schemeState, id ChunkID) error {
	m := eng.host.Map()
	entry, ok := m.SchemeByID(s.id)
	if !ok {
		return fmt.Errorf("stripe: scheme id %d is not in the map", s.id)
	}
	holders, err := parityHolders(m, s.spec, id.List)
	if err != nil {
		return err
	}
	lp := lostPosition{entry: entry, list: id.List, pos: int(id.Position)}
	return retryBusy(ctx, repairAttempts, func() error {
		s.mu.Lock()
		_, sealed, seq, found := s.data.Read(id)
		s.mu.Unlock()
		if !found {
			return nil // freed meanwhile: nothing left to serve from it
		}
		busy := false
		for b, err := range eng.chunkCopies(ctx, m, lp, holders, id, sealed, seq) {
			if err != nil {
				busy = busy || errors.Is(err, errBusy)
				continue
			}
			s.mu.Lock()
			_, err = s.data.Restore(id, seq, b)
			s.mu.Unlock()
			if err == nil {
				return nil
			}
			busy = busy || errors.Is(err, ErrChanged)
		}
		if busy {
			return fmt.Errorf("%w: %s changed under its repair", errBusy, id)
		}
		return fmt.Errorf("stripe: no copy of %s that its stripe gives passes its checks", id)
	})
}

// chunkCopies yields the copies of chunk id at seq that its stripe can
// give, cheapest first, each with the error of reading it: the parity
// holders' copies of an open chunk; for a sealed one the replica
// holder's copy (hybrid), then a decode of the stripe with every parity
// and then without each in turn (one of them may be the corrupt one).
func (eng *Engine) chunkCopies(ctx context.Context, m *cluster.Map, lp lostPosition, holders []cluster.Node, id ChunkID, sealed bool, seq uint32) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		if !sealed || replicaHolder(lp.entry.Spec) >= 0 {
			for j, h := range holders {
				if !sealed || j == replicaHolder(lp.entry.Spec) {
					if !parityUsable(m, lp, h, j) {
						continue
					}
					if !yield(eng.copyAt(ctx, h, lp, id, seq)) {
						return
					}
				}
			}
		}
		if !sealed {
			return
		}
		v, err := eng.readStripeView(ctx, m, lp, holders, id)
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(solveChunk(lp, v, id, seq)) {
			return
		}
		for j := range v.parities {
			if !v.parities[j].Found {
				continue
			}
			without := v
			without.parities = append([]chunkReply(nil), v.parities...)
			without.parities[j] = chunkReply{}
			if !yield(solveChunk(lp, without, id, seq)) {
				return
			}
		}
	}
}

// copyAt reads holder's copy of chunk id, which must be at seq exactly:
// an older copy lacks updates, a newer one has an in-place update not
// yet committed here.
func (eng *Engine) copyAt(ctx context.Context, holder cluster.Node, lp lostPosition, id ChunkID, seq uint32) ([]byte, error) {
	c, err := eng.readChunk(ctx, holder, readReq{Scheme: lp.entry.ID, What: readImage, Chunk: id})
	switch {
	case err != nil:
		return nil, err
	case !c.Found:
		return nil, fmt.Errorf("stripe: %s holds no copy of %s", holder.ID, id)
	case c.Seq != seq:
		return nil, fmt.Errorf("%w: %s holds %s at seq %d, not %d", errBusy, holder.ID, id, c.Seq, seq)
	}
	return c.Bytes, nil
}

// corruptKey is the error of a read of key whose object no copy could
// restore.
func (eng *Engine) corruptKey(s *schemeState, key []byte, err error) error {
	name := s.spec.String()
	if entry, ok := eng.host.Map().SchemeByID(s.id); ok {
		name = entry.Name()
	}
	return &kind.CorruptError{Key: string(key), Scheme: name, Cause: err}
}

// finishDetached restores the chunks of s holding objects removed while
// they failed their checks (Data.detach), then removes those objects for
// good and sends the removals, waiting for the holders: a removal's delta
// computed from a sound object, never from damaged bytes.
func (eng *Engine) finishDetached(ctx context.Context, s *schemeState) error {
	s.mu.Lock()
	ids := s.data.Detached()
	s.mu.Unlock()
	var errs []error
	for _, id := range ids {
		if err := eng.repairChunk(ctx, s, id); err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		ups, _ := s.data.RemoveDetached(id)
		s.mu.Unlock()
		if err := eng.send(ctx, s, ups); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// finishDetachedLater runs finishDetached in the background if s has
// detached objects and no such run is under way.
func (eng *Engine) finishDetachedLater(s *schemeState) {
	s.mu.Lock()
	pending := len(s.data.detached) > 0
	s.mu.Unlock()
	if !pending || !s.finishing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.finishing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 4*eng.cfg.PeerTimeout)
		defer cancel()
		if err := eng.finishDetached(ctx, s); err != nil {
			eng.log.Warn("stripe: removing objects that failed their checks; the next sweep tries again", "scheme", s.spec.String(), "err", err)
		}
	}()
}

// repairList restores this node's chunks of list that fail their
// objects' checks, before a resync sends them whole to a new holder,
// which would fold their damage into its parity.
func (eng *Engine) repairList(ctx context.Context, s *schemeState, list uint16) {
	var bad []ChunkID
	s.mu.Lock()
	s.data.Chunks(func(id ChunkID, _ []byte, _ bool) {
		if corrupt, _ := s.data.CheckChunk(id); id.List == list && corrupt {
			bad = append(bad, id)
		}
	})
	s.mu.Unlock()
	for _, id := range bad {
		eng.stats.CorruptChunks.Add(1)
		if err := eng.repairChunk(ctx, s, id); err != nil {
			eng.stats.Unrepaired.Add(1)
			eng.log.Error("stripe: a corrupt chunk could not be repaired before its resync", "chunk", id.String(), "err", err)
			continue
		}
		eng.stats.Repaired.Add(1)
	}
}
