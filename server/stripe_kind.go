package server

import (
	"context"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
)

// stripeKind is a stripe:K+M scheme bound to the node: a kind.Packed whose
// objects live in the scheme's chunks (stripe.go), with no primary record
// and nothing in the pieces store. Its methods are the node's stripe data
// path until that moves into scheme/stripe (decision 0007).
type stripeKind struct {
	kind.Base
	kind.Pieceless
	n *Node
}

// stripeTraits: a write waits for its parity holders; the coordinator
// reads its own chunks; nothing is in the pieces store.
var stripeTraits = kind.Traits{ReadsLocally: true, Pieces: kind.NoPieces, Rebuild: kind.RebuildPerKey}

// newStripeKind binds a stripe entry (a kind.Factory). The stripe data
// path is still the node's (stripe*.go), so it needs the node itself; a
// stripe scheme bound without one (tests of properties) has no data path.
func newStripeKind(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) {
	s := &stripeKind{Base: kind.NewBase(entry, env, stripeTraits), Pieceless: kind.Pieceless{Spec: entry.Spec}}
	if e, ok := env.(schemeEnv); ok {
		s.n = e.n
	}
	return s, nil
}

// Record: the object lives in a chunk, never in a primary record.
func (s *stripeKind) Record(kind.Value) ([]byte, uint32) { return nil, 0 }

// Read fails: a stripe key has no primary record to read.
func (s *stripeKind) Read(_ context.Context, key []byte, _ store.Meta, _ []byte) ([]byte, error) {
	return nil, fmt.Errorf("server: key %q: scheme %s keeps no primary record", key, s.Entry().Name())
}

// Fill fails: recovery restores stripe keys from their chunks, never as
// stubs.
func (s *stripeKind) Fill(_ context.Context, key []byte, _ store.Meta) ([]byte, []byte, uint32, error) {
	return nil, nil, 0, fmt.Errorf("server: key %q: scheme %s has no copy to recover from", key, s.Entry().Name())
}

// Verify checks the key's chunk against its stripe (verifyStripe) and
// reports where the chunk is.
func (s *stripeKind) Verify(ctx context.Context, key []byte, _ store.Meta, _ []byte) kind.Check {
	var r verifyReport
	s.n.verifyStripe(ctx, s.n.ctl.Map(), key, s.Entry(), &r)
	c := kind.Check{Checked: r.checked, Unavailable: r.unavailable, Problems: r.problems}
	if ch := r.chunk; ch != nil {
		c.Details = []kind.Detail{
			{Name: "chunk", Value: fmt.Sprintf("%d/%d/%d", ch.id.List, ch.id.Position, ch.id.Stripe)},
			{Name: "sealed", Value: ch.sealed},
			{Name: "stripe_nodes", Value: ch.nodes},
		}
	}
	return c
}

// info is SCHEME.INFO's breakdown of the scheme's bytes (stripeInfo).
func (s *stripeKind) info(u *schemeUsage) []resp.Reply { return stripeInfo(s.Entry().Spec, u) }

// state is this node's state for the scheme, created on first use.
func (s *stripeKind) state() (*stripeScheme, error) { return s.n.stripes.scheme(s.Entry()) }

// Find looks key up in the scheme's chunks.
// The caller holds the key's move lock for reading.
func (s *stripeKind) Find(key []byte, withValue bool) (store.Meta, []byte, bool) {
	st := s.n.stripes.byID(s.Entry().ID)
	if st == nil {
		return store.Meta{}, nil, false
	}
	st.mu.Lock()
	o, ok := st.data.Get(key)
	var value []byte
	if ok && withValue {
		value = o.Value
		if !st.data.Fragmented(key) { // else assembled: a copy already
			value = slices.Clone(o.Value)
		}
	}
	st.mu.Unlock()
	if !ok {
		return store.Meta{}, nil, false
	}
	return store.Meta{Version: o.Version, ExpireAt: o.ExpireAt, Scheme: st.id}, value, true
}

// Stage places w's object in a chunk (stageStripe).
func (s *stripeKind) Stage(ctx context.Context, w *kind.Staged) error {
	return s.n.stageStripe(ctx, s.Entry(), w)
}

// Flush sends the staged writes' updates as one group (sendStripeGrouped).
func (s *stripeKind) Flush(ctx context.Context, ws []*kind.Staged) {
	var st *stripeScheme
	var ups []stripe.Update
	for _, w := range ws {
		if pl, ok := w.Place.(*stripePlace); ok {
			st, ups = pl.s, append(ups, pl.ups...)
		}
	}
	if st == nil {
		return
	}
	if err := s.n.sendStripeGrouped(ctx, st, ups); err != nil {
		for _, w := range ws {
			w.Err = err
		}
	}
}

// Commit indexes w's staged object, which removes the object it replaces
// here.
func (s *stripeKind) Commit(w *kind.Staged) (bool, error) {
	pl, ok := w.Place.(*stripePlace)
	if !ok {
		return false, fmt.Errorf("server: %q has no object to commit", w.Key)
	}
	st := pl.s
	st.mu.Lock()
	applied, _, ups, err := st.data.Commit(w.Key, pl.loc)
	st.mu.Unlock()
	if err != nil {
		s.Abort(w)
		return false, err
	}
	w.Place = nil
	s.n.sendStripeLater(st, ups)
	return applied, nil
}

// Abort removes w's staged object and tells the parity holders in the
// background.
func (s *stripeKind) Abort(w *kind.Staged) {
	pl, ok := w.Place.(*stripePlace)
	if !ok {
		return
	}
	st := pl.s
	st.mu.Lock()
	ups, err := st.data.Abort(pl.loc)
	st.mu.Unlock()
	w.Place = nil
	if err != nil {
		s.n.log.Warn("stripe abort failed", "key", string(w.Key), "err", err)
		return
	}
	s.n.sendStripeLater(st, ups)
}

// Remove deletes key's object older than below from the scheme's chunks.
func (s *stripeKind) Remove(key []byte, below uint64) kind.Pending {
	st := s.n.stripes.byID(s.Entry().ID)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	_, ups, err := st.data.Delete(key, below)
	st.mu.Unlock()
	if err != nil {
		s.n.log.Warn("stripe delete failed", "key", string(key), "scheme", st.spec, "err", err)
	}
	if len(ups) == 0 {
		return nil
	}
	return stripeUpdates{n: s.n, s: st, ups: ups}
}

// stripePlace is where a staged write's object is in stripe scheme s
// (kind.Staged.Place) and the updates its parity holders must acknowledge
// before the write commits.
type stripePlace struct {
	s   *stripeScheme
	loc stripe.Loc
	ups []stripe.Update
}

// stripeUpdates are chunk updates one stripe scheme owes its parity
// holders (kind.Pending).
type stripeUpdates struct {
	n   *Node
	s   *stripeScheme
	ups []stripe.Update
}

// Send delivers them and waits (sendStripe).
func (u stripeUpdates) Send(ctx context.Context) error { return u.n.sendStripe(ctx, u.s, u.ups) }

// SendLater delivers them with the scheme's next group (sendStripeLater).
func (u stripeUpdates) SendLater() { u.n.sendStripeLater(u.s, u.ups) }
