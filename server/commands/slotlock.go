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
//
// A lock covers keyslot.Count/lockStripes slots (slot mod lockStripes):
// one per slot (384 KiB of locks) made every command's lock a cache miss,
// 4% of a node's CPU under GETs of random keys; 1024 stripes fit in 24
// KiB, and an EXEC holds 15 other slots a moment longer.
type slotLocks [lockStripes]sync.RWMutex

// lockStripes is how many locks cover the slots.
const lockStripes = 1024

// stripeOf is the lock that covers slot.
func stripeOf(slot int) uint16 { return uint16(slot % lockStripes) }

// lock holds slot exclusively (EXEC).
func (l *slotLocks) lock(slot int) { l[stripeOf(slot)].Lock() }

// unlock releases what lock held.
func (l *slotLocks) unlock(slot int) { l[stripeOf(slot)].Unlock() }

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

// rlockSlot is rlockKeys for keys whose one slot the caller knows.
func (l *slotLocks) rlockSlot(ctx context.Context, buf []uint16, slot int) []uint16 {
	if heldByTx(ctx) {
		return nil
	}
	return l.rlock(append(buf, uint16(slot)))
}

// rlock holds slots shared: their locks in increasing order and each
// once (turning slots into lock numbers, sorted and compacted in place),
// and returns the locks for runlock. The order keeps two multi-slot
// commands from each waiting for a lock the other holds while an EXEC
// waits on both.
func (l *slotLocks) rlock(slots []uint16) []uint16 {
	for i, s := range slots {
		slots[i] = stripeOf(int(s))
	}
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
