package server

import (
	"context"
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// stripeKind is a stripe:K+M scheme as the record side of the coordinator
// sees it: a stripe key has no primary record and no pieces in the pieces
// store; its object lives in the scheme's chunks (stripe.go), which the
// data path still reaches directly until the stripe data path moves into
// scheme/stripe behind kind.Scheme (decision 0007).
type stripeKind struct {
	kind.Base
}

// stripeTraits: a write waits for its parity holders; the coordinator
// reads its own chunks; nothing is in the pieces store.
var stripeTraits = kind.Traits{ReadsLocally: true, Pieces: kind.NoPieces, Rebuild: kind.RebuildPerKey}

// newStripeKind binds a stripe entry (a kind.Factory).
func newStripeKind(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) {
	return stripeKind{Base: kind.NewBase(entry, env, stripeTraits)}, nil
}

// Record: the object lives in a chunk, never in a primary record.
func (s stripeKind) Record(kind.Value) ([]byte, uint32) { return nil, 0 }

// Detached: a stripe key has no primary record.
func (s stripeKind) Detached(store.Meta) int64 { return 0 }

// Targets is empty, once the shard has the K+M nodes the scheme needs.
func (s stripeKind) Targets(m *cluster.Map, key []byte) ([]kind.Target, error) {
	_, err := kind.Holders(m, key, s.Entry().Spec)
	return nil, err
}

// Encode makes no piece.
func (s stripeKind) Encode(kind.Piece, kind.Value, []kind.Target) ([]kind.Piece, error) {
	return nil, nil
}

// Misplaced: a stripe scheme keeps nothing in the pieces store.
func (s stripeKind) Misplaced(*cluster.Map, []byte, int, cluster.NodeID, cluster.NodeID) bool {
	return true
}

// Read fails: a stripe key has no primary record to read.
func (s stripeKind) Read(_ context.Context, key []byte, _ store.Meta, _ []byte) ([]byte, error) {
	return nil, fmt.Errorf("server: key %q: scheme %s keeps no primary record", key, s.Entry().Name())
}

// Fill fails: recovery restores stripe keys from their chunks, never as
// stubs.
func (s stripeKind) Fill(_ context.Context, key []byte, _ store.Meta) ([]byte, []byte, uint32, error) {
	return nil, nil, 0, fmt.Errorf("server: key %q: scheme %s has no copy to recover from", key, s.Entry().Name())
}

// Verify: the stripe data path checks its chunks itself (verifyStripe).
func (s stripeKind) Verify(context.Context, []byte, store.Meta, []byte) kind.Check {
	return kind.Check{}
}
