package kind

import (
	"context"
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/store"
)

// Scheme is one scheme of the map's catalogue bound to its kind's
// behaviour. The node keeps one per catalogue entry and calls it for every
// key of that scheme.
type Scheme interface {
	// Entry is the catalogue entry this scheme serves.
	Entry() cluster.SchemeEntry

	// Traits are what the core may assume of every key of the scheme.
	Traits() Traits
	// Record is what the coordinator's primary record keeps of v: the
	// bytes it stores (nil when the value lives in pieces only) and the
	// record's Aux.
	Record(v Value) (stored []byte, aux uint32)
	// Detached is how many logical value bytes of a record (meta) the
	// primary store does not hold.
	Detached(meta store.Meta) int64

	// Targets lists where key's pieces go in m, each with its placement
	// position; none for a scheme without pieces. It fails when the
	// shard has fewer nodes than the scheme needs.
	Targets(m *cluster.Map, key []byte) ([]Target, error)
	// Encode makes one piece of v per target; base carries the key,
	// scheme, version and expiry every piece has.
	Encode(base Piece, v Value, targets []Target) ([]Piece, error)
	// Misplaced says whether holder should not keep the piece of key at
	// position index (a piece the sweep may drop), coord being the key's
	// coordinator.
	Misplaced(m *cluster.Map, key []byte, index int, holder, coord cluster.NodeID) bool

	// Read returns the value of key's committed record meta, whose
	// stored bytes the primary store holds: it checks them, repairs a
	// corrupt one where the scheme keeps another copy, or gathers pieces.
	Read(ctx context.Context, key []byte, meta store.Meta, stored []byte) ([]byte, error)
	// Fill fetches the value of a stub record (recovered metadata first):
	// the value, the bytes the full record stores and its Aux. When no
	// copy is left on live nodes the error wraps ErrNoCopy.
	Fill(ctx context.Context, key []byte, meta store.Meta) (value, stored []byte, aux uint32, err error)
	// Verify checks key's pieces against its committed record meta and
	// value (SCHEME.VERIFY); no write of the key runs meanwhile.
	Verify(ctx context.Context, key []byte, meta store.Meta, value []byte) Check
}

// Check is what verifying a key's pieces found.
type Check struct {
	Checked     int // pieces read and found to agree
	Unavailable int // pieces on failed nodes nobody stands in for
	Problems    []string
	// Details are fields SCHEME.VERIFY adds to its answer for the kind
	// (a stripe key's chunk, say).
	Details []Detail
}

// Detail is one named field of a kind's report: Value is a string, an
// int64, a bool (answered as 0 or 1, as Redis does) or a []string.
type Detail struct {
	Name  string
	Value any
}

// Traits are a scheme's fixed answers to what the core asks of every
// key: fixed for the scheme's life, so a kind sets them once when bound.
type Traits struct {
	// Immediate: a write commits as it begins; it sends nothing, so it
	// needs no version in flight.
	Immediate bool
	// ReadsLocally: the coordinator reads a committed value from its own
	// record, without gathering pieces; such a record is one of the
	// scheme's copies.
	ReadsLocally bool
	// Pieces is what the scheme keeps beyond the primary record.
	Pieces Pieces
	// Quorum is how many pieces a write must store on live nodes.
	Quorum int
	// Rebuild is how the shard's rebuild restores lost pieces in bulk.
	Rebuild Rebuild
	// Role names one piece in SCHEME.OF ("replica", "shard").
	Role string
	// Overlaps: blind writes (plain SET) of one key may be in flight
	// together; the kind keeps the newest at commit (a batch round stores
	// only a key's newest object, decision 0009). Otherwise a key's write
	// waits for the one in flight.
	Overlaps bool
}

// Base is what every kind's Scheme holds: its catalogue entry, its node's
// environment and its traits. A kind embeds it in the struct it binds by
// pointer, for Entry and Traits (pointer receivers: the core asks them on
// every write, and a value receiver copied the whole Base each time).
type Base struct {
	entry  cluster.SchemeEntry
	env    Env
	traits Traits
}

// NewBase is the Base of entry bound to env, with traits.
func NewBase(entry cluster.SchemeEntry, env Env, traits Traits) Base {
	return Base{entry: entry, env: env, traits: traits}
}

// Entry is the catalogue entry this scheme serves.
func (b *Base) Entry() cluster.SchemeEntry { return b.entry }

// Traits are the scheme's traits.
func (b *Base) Traits() Traits { return b.traits }

// Env is the node the scheme is bound to.
func (b *Base) Env() Env { return b.env }

// Value is a value being written: its bytes, and their CRC32C, computed
// once on first use and only by a kind that needs it.
type Value interface {
	Bytes() []byte
	CRC() uint32
}

// Pieces describes what a scheme keeps beyond the coordinator's primary
// record.
type Pieces uint8

const (
	// NoPieces: the primary record is the only copy.
	NoPieces Pieces = iota
	// Copies: whole copies of the value, one per holder per key and
	// scheme, each replacing the version before; any one serves a read.
	Copies
	// Shards: coded shards of one version, each at its placement
	// position and kept per version; k of them make the value.
	Shards
)

// Rebuild is how a kind's lost pieces are rebuilt in bulk.
type Rebuild uint8

const (
	// RebuildPerKey: key by key, through a read-modify-write.
	RebuildPerKey Rebuild = iota
	// RebuildCopy: the value is copied from the coordinator's record,
	// many keys to a frame.
	RebuildCopy
	// RebuildDecode: shards are fetched in bulk and decoded.
	RebuildDecode
)

// Factory binds a catalogue entry of its kind to a node's environment.
type Factory func(entry cluster.SchemeEntry, env Env) (Scheme, error)

// Registry maps each scheme kind to the package implementing it.
type Registry map[scheme.Kind]Factory

// Bind returns entry's Scheme on env, or an error naming a kind no package
// implements.
func (r Registry) Bind(entry cluster.SchemeEntry, env Env) (Scheme, error) {
	f, ok := r[entry.Spec.Kind]
	if !ok {
		return nil, fmt.Errorf("kind: scheme %s: kind %s is not supported", entry.Name(), entry.Spec.Kind)
	}
	return f(entry, env)
}
