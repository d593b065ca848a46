package kind

import (
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/store"
)

// Target is one placement node that holds a piece of a key, at its
// position in the shard's placement.
type Target struct {
	Index int
	Node  cluster.Node
}

// Piece is one piece of a key's redundancy as a coordinator sends it: a
// replica or a shard of one version, of the key as its shard Shard keeps
// it. A holder keeps pieces of different shards apart (decision 0016): in
// a migration the source's and the importer's shards hold the same keys,
// often on the same nodes, and neither end's write, release or recovery
// may touch the other's.
type Piece struct {
	Key       []byte
	Shard     uint16
	Scheme    uint16
	Version   uint64
	ExpireAt  int64
	Index     uint8 // replica number or shard index
	Versioned bool  // stored per version (Shards)
	CRC       uint32
	Data      []byte
}

// PieceRef names stored pieces: a key's replica in a scheme (up to a
// version, or exactly one with Exact), or one version's shard (Versioned),
// at Index when HasIndex, as shard Shard keeps the key (see Piece).
type PieceRef struct {
	Key       []byte
	Shard     uint16
	Scheme    uint16
	Version   uint64
	Versioned bool
	Exact     bool
	HasIndex  bool
	Index     uint8
}

// ShardID is the id of the shard that keeps key in m (the importing shard
// in its coordinator's view of a migration, cluster.Map.ViewFor): what
// the key's pieces are named by. A map without shards has none: 0.
func ShardID(m *cluster.Map, key []byte) uint16 {
	if sh := m.ShardOf(keyslot.Of(key)); sh != nil {
		return uint16(sh.ID)
	}
	return 0
}

// PlacementTargets lists every node of key's shard placement that is not
// failed, at its position.
func PlacementTargets(m *cluster.Map, key []byte) []Target {
	return ShardTargets(m, m.ShardOf(keyslot.Of(key)))
}

// ShardTargets lists every node of sh's placement (sh of m, or nil: none)
// that is not failed, at its position.
func ShardTargets(m *cluster.Map, sh *cluster.Shard) []Target {
	if sh == nil {
		return nil
	}
	var out []Target
	for p, id := range sh.Placement {
		if node, ok := m.Node(id); ok && !node.Gone() {
			out = append(out, Target{Index: p, Node: node})
		}
	}
	return out
}

// OtherPlacementNodes are the live nodes of key's shard placement that are
// not among targets: a node that stood in for a failed one keeps the
// pieces it got while the failed node, readmitted empty, waits for its
// rebuild.
func OtherPlacementNodes(m *cluster.Map, key []byte, targets []Target) []cluster.Node {
	var out []cluster.Node
	for _, p := range PlacementTargets(m, key) {
		if !slices.ContainsFunc(targets, func(t Target) bool { return t.Node.ID == p.Node.ID }) {
			out = append(out, p.Node)
		}
	}
	return out
}

// Holders returns the nodes of key's shard a scheme of spec occupies, in
// placement order (cluster.Map.HoldersOf, which stands survivors in for
// failed nodes), or an error when the shard has fewer than it needs.
func Holders(m *cluster.Map, key []byte, spec scheme.Spec) ([]cluster.Node, error) {
	width := spec.Nodes()
	holders := m.HoldersOf(keyslot.Of(key), width)
	if width > len(holders) {
		return nil, fmt.Errorf("server: scheme %s needs %d nodes, the shard has %d", spec, width, len(holders))
	}
	return holders, nil
}

// Pieceless is the piece side of a kind that keeps nothing in the pieces
// store (none; packed kinds, whose redundancy is per chunk): no pieces, so
// none to place, encode or keep, and records that hold their whole value.
// A kind embeds it beside Base.
type Pieceless struct{ Spec scheme.Spec }

// Detached: a record holds its whole value, if the kind has records.
func (Pieceless) Detached(store.Meta) int64 { return 0 }

// Targets is empty, once the shard has the nodes the scheme needs.
func (p Pieceless) Targets(m *cluster.Map, key []byte) ([]Target, error) {
	_, err := Holders(m, key, p.Spec)
	return nil, err
}

// Encode makes no piece.
func (Pieceless) Encode(Piece, Value, []Target) ([]Piece, error) { return nil, nil }

// Misplaced: the kind keeps no piece, so any in the pieces store is.
func (Pieceless) Misplaced(*cluster.Map, []byte, int, cluster.NodeID, cluster.NodeID) bool {
	return true
}
