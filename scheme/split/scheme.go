package split

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// Kind is the scheme kind this package serves.
const Kind = scheme.Split

// Scheme is a split:K+M scheme on one node: the coordinator's primary
// record keeps the value's length and version, and the K+M shards of each
// version live at their positions of the key's shard placement.
type Scheme struct {
	kind.Base
}

// New binds a split entry to a node (a kind.Factory). A write waits for
// its shards and needs k of them stored; a read gathers k shards; shards
// are kept per version and rebuilt by decoding.
func New(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) {
	traits := kind.Traits{Pieces: kind.Shards, Quorum: entry.Spec.K, Rebuild: kind.RebuildDecode, Role: "shard"}
	return &Scheme{Base: kind.NewBase(entry, env, traits)}, nil
}

// Record keeps no bytes: the value lives in the shards (each with its own
// CRC32C), and Aux holds its length.
func (s *Scheme) Record(v kind.Value) ([]byte, uint32) { return nil, uint32(len(v.Bytes())) }

// Detached is the whole value's length.
func (s *Scheme) Detached(meta store.Meta) int64 { return int64(meta.Aux) }

// Targets are every holder of the key's shard placement: shard i at
// position i.
func (s *Scheme) Targets(m *cluster.Map, key []byte) ([]kind.Target, error) {
	holders, err := kind.Holders(m, key, s.Entry().Spec)
	if err != nil {
		return nil, err
	}
	out := make([]kind.Target, len(holders))
	for i, node := range holders {
		out[i] = kind.Target{Index: i, Node: node}
	}
	return out, nil
}

// Encode cuts the value into K+M shards and gives each target its own.
func (s *Scheme) Encode(base kind.Piece, v kind.Value, targets []kind.Target) ([]kind.Piece, error) {
	shards, err := Encode(base.Key, v.Bytes(), s.Entry().Spec.K, s.Entry().Spec.M)
	if err != nil {
		return nil, err
	}
	out := make([]kind.Piece, len(targets))
	for i, t := range targets {
		out[i] = base
		out[i].Versioned = true
		out[i].Index, out[i].CRC, out[i].Data = uint8(t.Index), bigcopy.Checksum(shards[t.Index]), shards[t.Index]
	}
	return out, nil
}

// Misplaced says whether holder should not keep shard index of key: its
// position now belongs to another up node. A shard whose position's node
// failed with no stand-in is kept: it may be the only copy.
func (s *Scheme) Misplaced(m *cluster.Map, key []byte, index int, holder, _ cluster.NodeID) bool {
	targets, err := s.Targets(m, key)
	if err != nil {
		return false
	}
	for _, t := range targets {
		if t.Index == index {
			return t.Node.ID != holder && t.Node.State == cluster.Up
		}
	}
	return true // an index past the scheme's width
}

// Read gathers and decodes the value at meta's version.
func (s *Scheme) Read(ctx context.Context, key []byte, meta store.Meta, _ []byte) ([]byte, error) {
	return s.gather(ctx, key, meta)
}

// Fill decodes a stub's value and records its length.
func (s *Scheme) Fill(ctx context.Context, key []byte, meta store.Meta) ([]byte, []byte, uint32, error) {
	v, err := s.gather(ctx, key, meta)
	return v, nil, uint32(len(v)), err
}

// gather fetches the k data shards of the value at meta's version in
// parallel, falls back to parity shards for any that fail, and decodes. A
// shard missing because a newer commit released it answers
// kind.ErrPieceGone: read again. Beyond M lost shards the key is reported
// lost.
func (s *Scheme) gather(ctx context.Context, key []byte, meta store.Meta) ([]byte, error) {
	spec := s.Entry().Spec
	m := s.Env().Map()
	targets, err := s.Targets(m, key)
	if err != nil {
		return nil, err
	}
	shards := make([][]byte, len(targets))
	errs := make([]error, len(targets))
	ref := func(i int) kind.PieceRef {
		return kind.PieceRef{Key: key, Shard: kind.ShardID(m, key), Scheme: s.Entry().ID, Version: meta.Version, Versioned: true,
			HasIndex: true, Index: uint8(targets[i].Index)}
	}
	fetch := func(idx []int) {
		var wg sync.WaitGroup
		for _, i := range idx {
			wg.Go(func() { shards[i], errs[i] = s.Env().GetPiece(ctx, targets[i].Node, ref(i)) })
		}
		wg.Wait()
	}
	first, rest := ReadOrder(m, key, targets, spec.K)
	fetch(first)
	if slices.ContainsFunc(first, func(i int) bool { return errs[i] != nil }) {
		if s.Env().Superseded(key, meta.Version) {
			return nil, kind.ErrPieceGone // a newer commit released them: read again
		}
		fetch(rest)
		s.fetchFromOthers(ctx, m, key, targets, ref, shards, errs)
	}
	v, err := Decode(shards, key, spec.K, spec.M)
	if err == nil && slices.ContainsFunc(errs, func(e error) bool { return errors.Is(e, kind.ErrPieceCorrupt) }) {
		s.Env().RepairLater(key) // read around the corrupt shard; now store it again
	}
	if err != nil {
		return nil, s.unreadable(key, err, errs)
	}
	return v, nil
}

// unreadable is the error of a value that did not decode (err) after the
// shard fetches failed with errs: a lost key beyond M shards gone, counted
// where status and INFO look until a write or DEL of the key ends it.
func (s *Scheme) unreadable(key []byte, err error, errs []error) error {
	lost := 0
	for _, e := range errs {
		if kind.IsLoss(e) {
			lost++
		}
	}
	spec := s.Entry().Spec
	if lost > spec.M {
		return s.Env().ReportLost(kind.LostKey{Key: string(key), Scheme: s.Entry().Name(), Lost: lost, Total: spec.K + spec.M})
	}
	return fmt.Errorf("server: key %q cannot be read: %w", key, errors.Join(append([]error{err}, errs...)...))
}

// fetchFromOthers looks for the shards that the targets lost (kind.IsLoss)
// on the shard's other live placement nodes: a node that stood in for a
// failed one keeps the shards it got while the failed node, readmitted
// empty, waits for its rebuild (robustness finding 14). Without them a read
// in that window found too few shards and reported a live key lost.
func (s *Scheme) fetchFromOthers(ctx context.Context, m *cluster.Map, key []byte, targets []kind.Target,
	ref func(int) kind.PieceRef, shards [][]byte, errs []error) {
	others := kind.OtherPlacementNodes(m, key, targets)
	for i := range targets {
		if !kind.IsLoss(errs[i]) {
			continue
		}
		for _, node := range others {
			if data, err := s.Env().GetPiece(ctx, node, ref(i)); err == nil {
				shards[i], errs[i] = data, nil
				break
			}
		}
	}
}

// ReadOrder splits a split key's targets into the k to fetch first and the
// rest, fetched only if one of those fails. Positions whose piece may be
// missing (their node failed, or they are listed for rebuild: a spare or
// stand-in that has not received it yet) go last, so a degraded read
// decodes from parity in one round trip rather than finding the hole
// first; with none, the data shards come first and no decode is needed.
func ReadOrder(m *cluster.Map, key []byte, targets []kind.Target, k int) (first, rest []int) {
	sh := m.ShardOf(keyslot.Of(key))
	var doubtful []int
	for i, t := range targets {
		switch {
		case t.Node.State == cluster.Failed || (sh != nil && slices.Contains(sh.Rebuild, t.Index)):
			doubtful = append(doubtful, i)
		case len(first) < k:
			first = append(first, i)
		default:
			rest = append(rest, i)
		}
	}
	for len(first) < k && len(doubtful) > 0 {
		first, doubtful = append(first, doubtful[0]), doubtful[1:]
	}
	return first, append(rest, doubtful...)
}

// Verify checks that every shard of the committed version is present
// with a valid CRC32C, and that the value decodes the same from the data
// shards and from the parity shards.
func (s *Scheme) Verify(ctx context.Context, key []byte, meta store.Meta, value []byte) kind.Check {
	var c kind.Check
	m := s.Env().Map()
	targets, err := s.Targets(m, key)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c
	}
	shards := make([][]byte, len(targets))
	for i, t := range targets {
		if t.Node.State == cluster.Failed {
			c.Unavailable++
			continue
		}
		ref := kind.PieceRef{Key: key, Shard: kind.ShardID(m, key), Scheme: s.Entry().ID, Version: meta.Version, Versioned: true,
			HasIndex: true, Index: uint8(t.Index)}
		data, err := s.Env().GetPiece(ctx, t.Node, ref)
		if err != nil {
			c.Problems = append(c.Problems, fmt.Sprintf("shard %d on %s: %v", t.Index, t.Node.PeerAddr, err))
			continue
		}
		shards[i] = data
		c.Checked++
	}
	if len(c.Problems) > 0 || c.Unavailable > 0 {
		return c // decoding is checked on a whole set of shards only
	}
	c.Problems = s.decodeBothWays(key, shards, value)
	return c
}

// decodeBothWays decodes shards once from the data shards and once from
// the parity shards, and says where either disagrees with value.
func (s *Scheme) decodeBothWays(key []byte, shards [][]byte, value []byte) []string {
	k, m := s.Entry().Spec.K, s.Entry().Spec.M
	fromData := slices.Clone(shards)
	for i := k; i < k+m; i++ {
		fromData[i] = nil
	}
	fromParity := slices.Clone(shards)
	for i := 0; i < m && i < k; i++ {
		fromParity[i] = nil
	}
	var problems []string
	for _, c := range []struct {
		what   string
		shards [][]byte
	}{{"the data shards", fromData}, {"the parity shards", fromParity}} {
		v, err := Decode(c.shards, key, k, m)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("decoding with %s: %v", c.what, err))
		case !bytes.Equal(v, value):
			problems = append(problems, fmt.Sprintf("decoding with %s gives %d other bytes", c.what, len(v)))
		}
	}
	return problems
}
