// Package none is the scheme kind without redundancy (DESIGN.md §2): the
// coordinator's primary record is the only copy of a value, written at once
// and lost with its node.
package none

import (
	"context"
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// Kind is the scheme kind this package serves.
const Kind = scheme.None

// Scheme is a none scheme on one node.
type Scheme struct {
	kind.Base
	kind.Pieceless
}

// traits: a write sends nothing and commits as it begins; the record is
// the value and the only copy.
var traits = kind.Traits{Immediate: true, ReadsLocally: true, Pieces: kind.NoPieces, Rebuild: kind.RebuildPerKey}

// New binds a none entry to a node (a kind.Factory).
func New(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) {
	return &Scheme{kind.NewBase(entry, env, traits), kind.Pieceless{Spec: entry.Spec}}, nil
}

// Record keeps the value and its CRC32C.
func (s *Scheme) Record(v kind.Value) ([]byte, uint32) { return v.Bytes(), v.CRC() }

// Read checks the record against its CRC32C; a corrupt one has no other
// copy to be repaired from.
func (s *Scheme) Read(_ context.Context, key []byte, meta store.Meta, stored []byte) ([]byte, error) {
	if bigcopy.Checksum(stored) != meta.Aux {
		s.Env().Corrupt()
		return nil, fmt.Errorf("server: key %q fails its checksum and scheme %s keeps no other copy", key, s.Entry().Name())
	}
	return stored, nil
}

// Fill fails: recovery never restores a none key, having nothing to find.
func (s *Scheme) Fill(_ context.Context, key []byte, _ store.Meta) ([]byte, []byte, uint32, error) {
	return nil, nil, 0, fmt.Errorf("server: key %q: scheme %s has no copy to recover from", key, s.Entry().Name())
}

// Verify finds nothing to check: the record is the only copy.
func (s *Scheme) Verify(context.Context, []byte, store.Meta, []byte) kind.Check { return kind.Check{} }
