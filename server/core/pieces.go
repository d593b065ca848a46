package core

import (
	"encoding/binary"
	"math"

	"github.com/memgest/memgest/server/peer"
)

// ParsePieceKey reads what storeKey (or dirKey) wrote, and the
// piece kind.
func ParsePieceKey(k []byte) (peer.PieceRef, uint8, bool) {
	if len(k) < 3 || k[2] > PieceKindDirectory {
		return peer.PieceRef{}, 0, false
	}
	kind := k[2]
	r := peer.PieceRef{Scheme: binary.BigEndian.Uint16(k), Versioned: kind == PieceKindShard}
	shard, n := binary.Uvarint(k[3:])
	if n <= 0 || shard > math.MaxUint16 {
		return peer.PieceRef{}, 0, false
	}
	r.Shard, k = uint16(shard), k[3+n:]
	if r.Versioned {
		if len(k) < 8 {
			return peer.PieceRef{}, 0, false
		}
		r.Version, k = binary.BigEndian.Uint64(k), k[8:]
	}
	r.Key = k
	return r, kind, true
}
