package kind

import (
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/store"
)

// Env is what a node offers its schemes: the map, its own and its peers'
// pieces, and the node's bookkeeping of corrupt and lost keys.
type Env interface {
	// Self is this node's id.
	Self() cluster.NodeID
	// Map is the newest cluster map this node has.
	Map() *cluster.Map
	// LoadPiece returns a piece this node holds, checked against its
	// CRC32C: ErrPieceGone when it does not hold that piece,
	// ErrPieceCorrupt when it fails its check.
	LoadPiece(r PieceRef) ([]byte, error)
	// GetPiece is LoadPiece on node (this node or a peer); a node marked
	// failed answers ErrNodeFailed at once.
	GetPiece(ctx context.Context, node cluster.Node, r PieceRef) ([]byte, error)
	// Superseded says whether key's committed version is no longer v: a
	// newer write or a deletion released v's pieces.
	Superseded(key []byte, v uint64) bool
	// RepairLater stores key's pieces again in the background, after a
	// read found one of them corrupt.
	RepairLater(key []byte)
	// RepairRecord replaces key's corrupt primary record, if it is still
	// at meta's version, with stored, a copy that passes its check.
	RepairRecord(key []byte, meta store.Meta, stored []byte) error
	// Corrupt counts a corrupt copy found.
	Corrupt()
	// ReportLost counts key among the lost until a write or DEL of it,
	// and returns the error a read of it answers.
	ReportLost(k LostKey) error
}
