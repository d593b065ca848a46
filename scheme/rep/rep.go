// Package rep is r-way replication (DESIGN.md §2, Ring §5.2): the
// coordinator's primary record and R−1 replicas on the next holders of the
// key's shard, each a whole copy with its CRC32C. A replica slot holds one
// version per key and scheme, replaced in place by newer ones.
package rep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// Kind is the scheme kind this package serves.
const Kind = scheme.Rep

// Scheme is a rep:R scheme on one node.
type Scheme struct {
	kind.Base
}

// traits: a write waits for its replicas, but goes ahead with whatever
// replicas are up, at reduced tolerance; the coordinator's record is a
// copy; replicas are whole copies, rebuilt by copying the record.
var traits = kind.Traits{ReadsLocally: true, Pieces: kind.Copies, Rebuild: kind.RebuildCopy, Role: "replica"}

// New binds a rep entry to a node (a kind.Factory).
func New(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) {
	return &Scheme{Base: kind.NewBase(entry, env, traits)}, nil
}

// Record keeps the value and its CRC32C: the coordinator's copy.
func (s *Scheme) Record(v kind.Value) ([]byte, uint32) { return v.Bytes(), v.CRC() }

// Detached: the record holds the whole value.
func (s *Scheme) Detached(store.Meta) int64 { return 0 }

// Targets are the key's holders other than its coordinator, whose primary
// record is the first copy; with no coordinator up, the last R−1.
func (s *Scheme) Targets(m *cluster.Map, key []byte) ([]kind.Target, error) {
	holders, err := kind.Holders(m, key, s.Entry().Spec)
	if err != nil {
		return nil, err
	}
	coord, _ := m.Coordinator(keyslot.Of(key))
	width := s.Entry().Spec.Nodes()
	out := make([]kind.Target, 0, width)
	for i, node := range holders {
		if node.ID != coord.ID {
			out = append(out, kind.Target{Index: i, Node: node})
		}
	}
	if len(out) == width {
		out = out[1:] // no coordinator up: keep R−1 replicas
	}
	return out, nil
}

// Encode gives every target the value itself.
func (s *Scheme) Encode(base kind.Piece, v kind.Value, targets []kind.Target) ([]kind.Piece, error) {
	value, crc := v.Bytes(), v.CRC()
	out := make([]kind.Piece, len(targets))
	for i, t := range targets {
		out[i] = base
		out[i].Index, out[i].CRC, out[i].Data = uint8(t.Index), crc, value
	}
	return out, nil
}

// Misplaced says whether holder should not keep key's replica: it is the
// coordinator (its primary record is its copy) or no replica holder.
func (s *Scheme) Misplaced(m *cluster.Map, key []byte, _ int, holder, coord cluster.NodeID) bool {
	if holder == coord {
		return true
	}
	targets, err := s.Targets(m, key)
	if err != nil {
		return false
	}
	return !slices.ContainsFunc(targets, func(t kind.Target) bool { return t.Node.ID == holder })
}

// Read checks the coordinator's copy against its CRC32C and replaces a
// corrupt one with a replica that passes.
func (s *Scheme) Read(ctx context.Context, key []byte, meta store.Meta, stored []byte) ([]byte, error) {
	if bigcopy.Checksum(stored) == meta.Aux {
		return stored, nil
	}
	s.Env().Corrupt()
	data, err := s.fetch(ctx, key, meta)
	switch {
	case errors.Is(err, kind.ErrNoCopy) && !errors.Is(err, kind.ErrOtherVersion):
		// Every holder answered and no copy passes its check: corrupt
		// beyond repair, not a copy a newer write released (a read
		// would then try again).
		return nil, &kind.CorruptError{Key: string(key), Scheme: s.Entry().Name(), Cause: err}
	case err != nil:
		return nil, fmt.Errorf("server: key %q fails its checksum; %w", key, err)
	}
	if err := s.Env().RepairRecord(key, meta, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Fill fetches a stub's value from a replica.
func (s *Scheme) Fill(ctx context.Context, key []byte, meta store.Meta) ([]byte, []byte, uint32, error) {
	data, err := s.fetch(ctx, key, meta)
	return data, data, meta.Aux, err
}

// fetch returns the value at meta's version: a replica whose CRC32C is
// meta.Aux, from this node's own pieces (a former replica holder that
// became coordinator keeps one) or from a holder. When every copy's node
// answered and none holds that value, the error wraps kind.ErrNoCopy.
func (s *Scheme) fetch(ctx context.Context, key []byte, meta store.Meta) ([]byte, error) {
	m := s.Env().Map()
	ref := kind.PieceRef{Key: key, Shard: kind.ShardID(m, key), Scheme: s.Entry().ID, Version: meta.Version}
	data, err := s.Env().LoadPiece(ref)
	if data, err = replicaOf(data, err, meta.Aux); err == nil {
		return data, nil
	}
	fails := []error{fmt.Errorf("this node: %w", err)}
	targets, err := s.Targets(m, key)
	if err != nil {
		return nil, err
	}
	// The shard's other live nodes too: one that stood in for a replica
	// holder may keep the only copy while that holder, readmitted empty,
	// waits for its rebuild.
	for _, node := range kind.OtherPlacementNodes(m, key, targets) {
		if node.ID != s.Env().Self() {
			targets = append(targets, kind.Target{Index: -1, Node: node})
		}
	}
	for _, t := range targets {
		data, err := s.Env().GetPiece(ctx, t.Node, ref)
		data, err = replicaOf(data, err, meta.Aux)
		switch {
		case err == nil:
			return data, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		fails = append(fails, fmt.Errorf("node %s: %w", t.Node.PeerAddr, err))
	}
	err = errors.Join(fails...)
	if !slices.ContainsFunc(fails, func(e error) bool { return !kind.IsLoss(e) }) {
		err = fmt.Errorf("%w: %w", kind.ErrNoCopy, err)
	}
	return nil, fmt.Errorf("server: key %q: no replica of version %d could be read with its checksum: %w",
		key, meta.Version, err)
}

// replicaOf checks a fetched replica against the wanted value's CRC32C:
// a copy of another version is as good as none (kind.ErrOtherVersion).
func replicaOf(data []byte, err error, crc uint32) ([]byte, error) {
	if err == nil && bigcopy.Checksum(data) != crc {
		return nil, kind.ErrOtherVersion
	}
	return data, err
}

// Verify checks that every replica holds the committed bytes.
func (s *Scheme) Verify(ctx context.Context, key []byte, meta store.Meta, value []byte) kind.Check {
	var c kind.Check
	m := s.Env().Map()
	targets, err := s.Targets(m, key)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c
	}
	ref := kind.PieceRef{Key: key, Shard: kind.ShardID(m, key), Scheme: s.Entry().ID, Version: meta.Version}
	for _, t := range targets {
		if t.Node.State == cluster.Failed {
			c.Unavailable++
			continue
		}
		data, err := s.Env().GetPiece(ctx, t.Node, ref)
		switch {
		case err != nil:
			c.Problems = append(c.Problems, fmt.Sprintf("replica on %s: %v", t.Node.PeerAddr, err))
		case !bytes.Equal(data, value):
			c.Problems = append(c.Problems, fmt.Sprintf("replica on %s holds %d other bytes", t.Node.PeerAddr, len(data)))
		default:
			c.Checked++
		}
	}
	return c
}
