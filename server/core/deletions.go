package core

import (
	"sync/atomic"

	"github.com/memgest/memgest/keyslot"
)

// Deletions counts, per slot, the deletions this node committed as
// coordinator (DEL, expiry, FLUSHALL) since it started. A deleted key
// leaves no record whose version WATCH could compare, so a transaction
// watching a key that is absent at WATCH and at EXEC asks whether the
// slot's count moved in between: a key created and deleted meanwhile
// moved it (docs/decisions/0015-transactions.md). The count is
// conservative: another key's deletion in the slot moves it too.
type Deletions struct {
	slots [keyslot.Count]atomic.Uint64
	flush atomic.Uint64 // FlushStores, which deletes every slot's keys
}

// note counts a deletion of key.
func (d *Deletions) note(key []byte) { d.slots[keyslot.Of(key)].Add(1) }

// Mark is slot's count: it changes whenever a key of the slot is deleted.
func (d *Deletions) Mark(slot int) uint64 { return d.slots[slot].Load() + d.flush.Load() }
