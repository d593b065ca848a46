package kind

import (
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/store"
)

// Packed is implemented by a Scheme whose keys' objects live in chunks of
// its own on their coordinator, not in primary records (stripe, and
// RE-Store's hybrid). Its redundancy is per chunk, and it sends its chunks'
// updates itself: the core stages a write (Stage), has every staged write
// of a batch delivered (Flush), then commits or aborts each one.
//
// A key is in the primary store or in one packed scheme, never both once
// a commit has ended. The core moves it between them under a lock of its
// own, so a reader that misses the primary store and then finds the key
// here sees it in one or the other.
type Packed interface {
	Scheme
	// Find returns the metadata of key's committed object here, and with
	// withValue its value: bytes nothing else modifies. A value kept on
	// another node is left out, and meta.Flags has RemoteValue: Fetch
	// reads it.
	Find(key []byte, withValue bool) (meta store.Meta, value []byte, ok bool)
	// Fetch reads key's committed object with its value where Find left
	// the value out (a batch stripe's chunk kept elsewhere, decision
	// 0009). It fails with ErrPieceGone when the key left the scheme
	// meanwhile (the caller reads again), and names the key when no copy
	// of the value can be read.
	Fetch(ctx context.Context, key []byte) (meta store.Meta, value []byte, err error)
	// Stage places w's object at w.Version, in place of the key's current
	// object where it fits, else appended. It sets w.Place: where the
	// object is and the updates the holders must acknowledge before w
	// commits.
	Stage(ctx context.Context, w *Staged) error
	// Flush delivers the updates of the staged writes ws, grouped with
	// other writers', and waits; a write whose updates did not arrive gets
	// its error in Err.
	Flush(ctx context.Context, ws []*Staged)
	// Commit makes w's staged object the key's committed object here,
	// unless a newer one is, and sends the resulting updates in the
	// background. It reports whether w's object is the committed one now.
	Commit(w *Staged) (bool, error)
	// Abort drops w's staged object, if it has one, and tells its holders
	// in the background.
	Abort(w *Staged)
	// Remove deletes key's object older than version below, returning
	// the updates its holders must get (nil if the scheme held none).
	Remove(key []byte, below uint64) Pending
}

// RemoteValue is set in the meta.Flags of a Find whose value lives on
// another node (Packed.Fetch).
const RemoteValue uint8 = 1 << 7

// Staged is one write a packed scheme is placing: the object, and where
// the scheme put it and what its holders must acknowledge first (Place,
// the scheme's own; nil until Stage and after Commit or Abort).
type Staged struct {
	Key      []byte
	Value    []byte
	ExpireAt int64
	Version  uint64
	// Relocate appends the object even where it could be updated in
	// place: compaction moves objects out of their chunks.
	Relocate bool
	Place    any
	// Err is what Flush found for this write.
	Err error
}

// Pending is the chunk updates a packed scheme owes its holders.
type Pending interface {
	// Send delivers them and waits for every holder.
	Send(ctx context.Context) error
	// SendLater delivers them in the background; a failure leaves them
	// to be sent again.
	SendLater()
}

// Layout is where one key's redundancy is, as SCHEME.OF shows it, for a
// kind whose pieces are not per key (a packed kind: its chunk's list).
type Layout struct {
	// Pieces are the nodes keeping the key's redundancy, each with its
	// role, its position and whether it awaits its rebuild.
	Pieces []Placed
	// Tolerates is how many more node failures the key survives now.
	Tolerates int
	// Details are fields of the kind's own (the chunk, its state).
	Details []Detail
}

// Placed is one node of a key's Layout.
type Placed struct {
	Role       string
	Index      int
	Node       cluster.Node
	Rebuilding bool // the position's pieces are lost until its rebuild
}

// Describer is a bound scheme that describes a key's layout itself
// (SCHEME.OF) rather than by Targets.
type Describer interface {
	Layout(m *cluster.Map, key []byte) (Layout, bool)
}
