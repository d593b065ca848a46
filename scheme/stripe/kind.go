package stripe

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// Kind is the scheme kind this package serves.
const Kind = scheme.Stripe

// Bound is a packed scheme (stripe:K+M, or hybrid:K+M through package
// hybrid) bound to a node: a kind.Packed whose objects live in the
// scheme's chunks on the node's Engine, with no primary record and nothing
// in the pieces store.
type Bound struct {
	kind.Base
	kind.Pieceless
	eng *Engine
}

// traits: a write waits for its parity holders; the coordinator
// reads its own chunks; nothing is in the pieces store.
var traits = kind.Traits{ReadsLocally: true, Pieces: kind.NoPieces, Rebuild: kind.RebuildPerKey}

// For returns the kind.Factory that binds stripe entries to eng, the
// node's engine: the stripe kind's registration line.
func For(eng *Engine) kind.Factory {
	return func(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) {
		if entry.Spec.Kind != Kind {
			return nil, fmt.Errorf("stripe: scheme %s is not a stripe scheme", entry.Name())
		}
		return Bind(eng, entry, env), nil
	}
}

// Bind binds packed scheme entry (stripe or hybrid) to eng on env: the
// packed kinds' common part, which package hybrid builds on. A batching
// entry's blind writes of a key overlap, so that they share rounds (under
// @auto a write that goes in place then appends: an update in place
// assumes no other write of its key in flight, stage).
func Bind(eng *Engine, entry cluster.SchemeEntry, env kind.Env) *Bound {
	t := traits
	t.Overlaps = entry.Spec.Mode != scheme.InPlace
	return &Bound{Base: kind.NewBase(entry, env, t), Pieceless: kind.Pieceless{Spec: entry.Spec}, eng: eng}
}

// New binds a stripe entry (a kind.Factory) without an engine: such a
// scheme has no data path, only its properties and piece methods (tests
// of properties). A node binds its stripe schemes with For.
func New(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) { return For(nil)(entry, env) }

// Record: the object lives in a chunk, never in a primary record.
func (s *Bound) Record(kind.Value) ([]byte, uint32) { return nil, 0 }

// Read fails: a stripe key has no primary record to read.
func (s *Bound) Read(_ context.Context, key []byte, _ store.Meta, _ []byte) ([]byte, error) {
	return nil, fmt.Errorf("stripe: key %q: scheme %s keeps no primary record", key, s.Entry().Name())
}

// Fill fails: recovery restores stripe keys from their chunks, never as
// stubs.
func (s *Bound) Fill(_ context.Context, key []byte, _ store.Meta) ([]byte, []byte, uint32, error) {
	return nil, nil, 0, fmt.Errorf("stripe: key %q: scheme %s has no copy to recover from", key, s.Entry().Name())
}

// Verify checks the key's chunk against its stripe (verifyKey) and
// reports where the chunk is.
func (s *Bound) Verify(ctx context.Context, key []byte, _ store.Meta, _ []byte) kind.Check {
	return s.eng.verifyKey(ctx, s.eng.host.Map(), key, s.Entry())
}

// Info is SCHEME.INFO's breakdown of the scheme's bytes over the
// cluster: keys and logical bytes of its keys, u its usage summed.
func (s *Bound) Info(keys, logical int64, u *Usage) []kind.Detail {
	return Info(s.Entry().Spec, keys, logical, u)
}

// Find looks key up in the scheme's chunks and batch stripes: its
// newest object of the two.
// The caller holds the key's move lock for reading.
func (s *Bound) Find(key []byte, withValue bool) (store.Meta, []byte, bool) {
	st := s.eng.byID(s.Entry().ID)
	if st == nil {
		return store.Meta{}, nil, false
	}
	st.mu.Lock()
	o, ok, corrupt := st.find(key, withValue)
	fragmented, remote := ok && st.data.Fragmented(key), corrupt
	if st.batch != nil && !corrupt {
		if bo, bloc, local, bok := st.batch.data.Get(key); bok && (!ok || bo.Version > o.Version) {
			// A kept object failing its check is read as one kept
			// elsewhere: Fetch decodes it from the stripe.
			remote = withValue && (!local || st.batch.data.CheckKept(bloc) != nil)
			o, ok, fragmented = bo, true, false
		}
	}
	var value []byte
	if ok && withValue {
		value = o.Value
		if !fragmented { // else assembled: a copy already
			value = slices.Clone(o.Value)
		}
	}
	st.mu.Unlock()
	if !ok {
		return store.Meta{}, nil, false
	}
	meta := store.Meta{Version: o.Version, ExpireAt: o.ExpireAt, Scheme: st.id}
	if remote {
		meta.Flags = kind.RemoteValue
	}
	return meta, value, true
}

// find is Find's look in the chunks: with withValue every byte checked
// (GetChecked), and corrupt set, with ok, when the chunks must be
// repaired before key's object can be read (it may be key's, or the
// damaged entry of a key that is not there). The caller holds st.mu.
func (st *schemeState) find(key []byte, withValue bool) (o Object, ok, corrupt bool) {
	if !withValue {
		o, ok = st.data.Get(key)
		return o, ok, false
	}
	o, ok, err := st.data.GetChecked(key)
	if errors.Is(err, ErrChecksum) {
		return Object{}, true, true
	}
	return o, ok && err == nil, false
}

// Fetch reads key's value where Find left it out: a batch object kept on
// another node, or found failing its check here (fetchBatch); or an
// in-place object whose chunk failed its checks, which it repairs from
// the stripe (repairKey) and then has the caller read again
// (kind.ErrPieceGone), or names as corrupt when no copy repairs it.
func (s *Bound) Fetch(ctx context.Context, key []byte) (store.Meta, []byte, error) {
	st := s.eng.byID(s.Entry().ID)
	if st == nil {
		return store.Meta{}, nil, fmt.Errorf("stripe: %q: scheme %s has no state here: %w", key, s.Entry().Name(), kind.ErrPieceGone)
	}
	st.mu.Lock()
	_, inBatch := st.newerInBatch(key)
	st.mu.Unlock()
	if !inBatch {
		if err := s.eng.repairKey(ctx, st, key); err != nil {
			return store.Meta{}, nil, s.eng.corruptKey(st, key, err)
		}
		return store.Meta{}, nil, fmt.Errorf("stripe: %q: its chunk was repaired; read again: %w", key, kind.ErrPieceGone)
	}
	o, err := s.eng.fetchBatch(ctx, st, key)
	if err != nil {
		return store.Meta{}, nil, err
	}
	return store.Meta{Version: o.Version, ExpireAt: o.ExpireAt, Scheme: st.id}, o.Value, nil
}

// Stage places w's object in a chunk (stage).
func (s *Bound) Stage(ctx context.Context, w *kind.Staged) error {
	return s.eng.stage(ctx, s.Entry(), w)
}

// Flush sends the staged in-place writes' updates as one group
// (sendGrouped) and waits for the batch writes' rounds (flushBatch).
func (s *Bound) Flush(ctx context.Context, ws []*kind.Staged) {
	var st *schemeState
	var ups []Update
	for _, w := range ws {
		if pl, ok := w.Place.(*place); ok {
			st, ups = pl.s, append(ups, pl.ups...)
		}
	}
	if st != nil {
		if err := s.eng.sendGrouped(ctx, st, ups); err != nil {
			for _, w := range ws {
				if _, inPlace := w.Place.(*place); inPlace {
					w.Err = err
				}
			}
		}
	}
	flushBatch(ctx, ws)
}

// Commit indexes w's staged object, which removes the object it replaces
// here.
func (s *Bound) Commit(w *kind.Staged) (bool, error) {
	if bp, ok := w.Place.(*batchPlace); ok {
		w.Place = nil
		return s.eng.commitBatch(bp, w.Key)
	}
	pl, ok := w.Place.(*place)
	if !ok {
		return false, fmt.Errorf("stripe: %q has no object to commit", w.Key)
	}
	st := pl.s
	st.mu.Lock()
	if st.batch != nil {
		if bo, _, _, newer := st.batch.data.Get(w.Key); newer && bo.Version >= w.Version {
			st.mu.Unlock()
			s.Abort(w) // a batch write of the key is newer
			return false, nil
		}
	}
	applied, _, ups, err := st.data.Commit(w.Key, pl.loc)
	if err == nil && applied && st.batch != nil {
		if _, _, derr := st.batch.data.Delete(w.Key, w.Version-1); derr != nil {
			s.eng.log.Warn("stripe: dropping a key's older batch object failed", "key", string(w.Key), "err", derr)
		}
	}
	st.mu.Unlock()
	if err != nil {
		s.Abort(w)
		return false, err
	}
	w.Place = nil
	s.eng.sendLater(st, ups)
	s.eng.finishDetachedLater(st)
	return applied, nil
}

// Abort removes w's staged object and tells the parity holders in the
// background.
func (s *Bound) Abort(w *kind.Staged) {
	if bp, ok := w.Place.(*batchPlace); ok {
		w.Place = nil
		abortBatch(bp)
		return
	}
	pl, ok := w.Place.(*place)
	if !ok {
		return
	}
	st := pl.s
	st.mu.Lock()
	ups, err := st.data.Abort(pl.loc)
	st.mu.Unlock()
	w.Place = nil
	if err != nil {
		s.eng.log.Warn("stripe abort failed", "key", string(w.Key), "err", err)
		return
	}
	s.eng.sendLater(st, ups)
}

// Remove deletes key's object older than below from the scheme's chunks.
func (s *Bound) Remove(key []byte, below uint64) kind.Pending {
	st := s.eng.byID(s.Entry().ID)
	if st == nil {
		return nil
	}
	sh := s.eng.host.Map().ShardOf(keyslot.Of(key))
	st.mu.Lock()
	_, ups, err := st.data.Delete(key, below)
	detached := len(st.data.detached) > 0
	var marks uint64
	if st.batch != nil && err == nil && sh != nil {
		_, _, err = st.batch.data.Delete(key, below) // queues its dead mark
		// Owed: every mark of the key's shard not yet delivered, if any.
		if last := st.batch.data.marks.last(); !st.batch.data.marks.delivered(uint16(sh.ID), last) {
			marks = last
		}
	}
	st.mu.Unlock()
	if err != nil {
		s.eng.log.Warn("stripe delete failed", "key", string(key), "scheme", st.spec, "err", err)
	}
	if marks != 0 {
		s.eng.finishDetachedLater(st)
		return deadMarks{eng: s.eng, s: st, shard: uint16(sh.ID), seq: marks, ups: ups}
	}
	if len(ups) == 0 && !detached {
		return nil
	}
	return owedUpdates{eng: s.eng, s: st, ups: ups, detached: detached}
}

// place is where a staged write's object is in stripe scheme s
// (kind.Staged.Place) and the updates its parity holders must acknowledge
// before the write commits.
type place struct {
	s   *schemeState
	loc Loc
	ups []Update
}

// owedUpdates are chunk updates one stripe scheme owes its parity
// holders (kind.Pending), and with detached the removal of objects that
// failed their checks, which waits for their chunks' repair.
type owedUpdates struct {
	eng      *Engine
	s        *schemeState
	ups      []Update
	detached bool
}

// Send delivers them and waits (send; finishDetached).
func (u owedUpdates) Send(ctx context.Context) error {
	err := u.eng.send(ctx, u.s, u.ups)
	if u.detached {
		err = errors.Join(err, u.eng.finishDetached(ctx, u.s))
	}
	return err
}

// SendLater delivers them with the scheme's next group (sendLater).
func (u owedUpdates) SendLater() {
	u.eng.sendLater(u.s, u.ups)
	if u.detached {
		u.eng.finishDetachedLater(u.s)
	}
}
