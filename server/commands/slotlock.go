package commands

import (
	"context"
	"slices"
	"sync"

	"github.com/memgest/memgest/keyslot"
)

// slotLocks keep a transaction apart from every other command on its slot
// (docs/decisions/0015-transactions.md). A key command holds its keys'
// slots shared while it runs on their coordinator (coordinate, a set
// group's flush); EXEC holds its slot exclusively while it checks the
// watched versions and runs the queued commands, so no command of another
// connection reads or writes the slot in between. Writes a node makes by
// itself (expiry of a key already expired, compaction's relocations,
// policy moves, repair) do not take them: none changes a value a client
// can read.
//
// A handler must not run another command on its own keys through execute
// while it holds them: a shared lock taken twice by one goroutine
// deadlocks once an EXEC waits between the two. Inside EXEC the slot is
// marked held in the context (txHeld), and coordinate takes nothing.
type slotLocks [keyslot.Count]sync.RWMutex

// txHeld marks the context of the commands an EXEC runs: their slot is
// held exclusively already.
type txHeld struct{}

// heldByTx says whether ctx is an EXEC's, whose slot is held.
func heldByTx(ctx context.Context) bool { return ctx.Value(txHeld{}) != nil }

// rlockKeys holds the slots of keys shared and returns them for
// runlock, appended to buf (which a caller keeps on its stack for the
// usual one key). In an EXEC's context it holds nothing.
func (l *slotLocks) rlockKeys(ctx context.Context, buf []uint16, keys [][]byte) []uint16 {
	if heldByTx(ctx) {
		return nil
	}
	for _, k := range keys {
		buf = append(buf, uint16(keyslot.Of(k)))
	}
	return l.rlock(buf)
}

// rlock holds slots shared, in increasing order and each once (sorting
// and compacting slots in place), and returns them. The order keeps two
// multi-slot commands from each waiting for a slot the other holds while
// an EXEC waits on both.
func (l *slotLocks) rlock(slots []uint16) []uint16 {
	if len(slots) > 1 {
		slices.Sort(slots)
		slots = slices.Compact(slots)
	}
	for _, s := range slots {
		l[s].RLock()
	}
	return slots
}

// runlock releases what rlock held.
func (l *slotLocks) runlock(slots []uint16) {
	for _, s := range slots {
		l[s].RUnlock()
	}
}
