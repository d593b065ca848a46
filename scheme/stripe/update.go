package stripe

import "fmt"

// ChunkID names a data chunk within one stripe scheme: the stripe list
// (the shard whose placement's first K+M positions the list is), the data
// position in the list, and the stripe number there. Chunk (g, p, r) and
// the other positions' chunks with the same g and r form stripe (g, r),
// whose M parity chunks the list's parity positions hold.
type ChunkID struct {
	List     uint16
	Position uint8
	Stripe   uint32
}

func (id ChunkID) String() string {
	return fmt.Sprintf("chunk %d/%d/%d", id.List, id.Position, id.Stripe)
}

// UpdateKind says what an Update does to a chunk.
type UpdateKind uint8

// The kinds of Update.
const (
	// Delta XORs Bytes into the chunk at Offset: an append (the object's
	// bytes over zeros) or a deletion (the object's bytes over themselves).
	Delta UpdateKind = iota + 1
	// Seal closes the chunk: a parity holder folds its copy of the chunk
	// into its parity chunk. CRC is the chunk's CRC32C at this point.
	Seal
	// Free says the chunk is empty and gone: its bytes are all zero, so
	// it contributes nothing to parity, and the stripe position is free.
	Free
	// Resync gives a holder the whole chunk (Bytes) as of Seq, sealed or
	// not, when the updates it lacks are no longer logged (Parity.Resync).
	Resync
	// Stable tells a holder that every holder of the list has applied
	// every update of the chunk through Seq, so it may drop its backups of
	// them (Parity.PositionBackups). It changes nothing else and takes no seq.
	Stable
)

func (k UpdateKind) String() string {
	switch k {
	case Delta:
		return "delta"
	case Seal:
		return "seal"
	case Free:
		return "free"
	case Resync:
		return "resync"
	case Stable:
		return "stable"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// An Update is one event in a data chunk's life, as its coordinator sends
// it to each of the list's M parity holders (decision 0003). Seq numbers a
// chunk's updates from 1, in the order the coordinator made them, and Base
// is the seq of the last Seal or Free before it (0 if none). The deltas
// between two such boundaries commute, so holders apply them in any order,
// but each exactly once; a delta waits until its Base is applied (whether
// it goes to the copy or to parity depends on it), and a Seal or Free
// until every earlier update is.
type Update struct {
	Chunk  ChunkID
	Seq    uint32
	Base   uint32
	Kind   UpdateKind
	Offset int
	Bytes  []byte // Delta, Resync
	CRC    uint32 // Seal
	Sealed bool   // Resync
}

func (u Update) String() string {
	return fmt.Sprintf("%s #%d %s@%d+%d", u.Chunk, u.Seq, u.Kind, u.Offset, len(u.Bytes))
}
