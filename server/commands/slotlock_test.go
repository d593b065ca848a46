package commands

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/keyslot"
)

// rlock holds each slot once, in increasing order, and runlock releases
// them: an exclusive lock of each is free again afterwards.
func TestSlotLocksHoldEachSlotOnce(t *testing.T) {
	l := new(slotLocks)
	keys := [][]byte{[]byte("b{x}"), []byte("a"), []byte("a{x}"), []byte("a")}
	held := l.rlockKeys(context.Background(), nil, keys)
	if len(held) != 2 || held[0] >= held[1] {
		t.Fatalf("held %v, want two locks in order", held)
	}
	for _, s := range held {
		if l[s].TryLock() {
			t.Fatalf("slot %d free while held", s)
		}
	}
	l.runlock(held)
	for _, s := range held {
		if !l[s].TryLock() {
			t.Fatalf("slot %d still held", s)
		}
	}
	if got := l.rlockKeys(context.WithValue(context.Background(), txHeld{}, 1), nil, keys); got != nil {
		t.Fatalf("an EXEC's context held %v", got)
	}
}

// A command waits for an EXEC holding its slot, and an EXEC for the
// commands holding it.
func TestSlotLocksExcludeExec(t *testing.T) {
	l := new(slotLocks)
	key := [][]byte{[]byte("k")}
	slot := keyslot.Of(key[0])
	l.lock(slot)
	var ran atomic.Bool
	done := make(chan struct{})
	go func() {
		held := l.rlockKeys(context.Background(), nil, key)
		ran.Store(true)
		l.runlock(held)
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	if ran.Load() {
		t.Fatal("a command ran while an EXEC held its slot")
	}
	l.unlock(slot)
	<-done
}

// BenchmarkSlotLockOneKey is what coordinate adds to a one-key command:
// the key's slot and a shared lock of it, taken and released.
func BenchmarkSlotLockOneKey(b *testing.B) {
	l := new(slotLocks)
	keys := make([][][]byte, 1024)
	for i := range keys {
		keys[i] = [][]byte{[]byte("key:" + strconv.Itoa(i))}
	}
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			var buf [4]uint16
			held := l.rlockKeys(ctx, buf[:0], keys[i&1023])
			l.runlock(held)
			i++
		}
	})
}

// BenchmarkSlotLockHotKey is the same for one key every goroutine uses.
func BenchmarkSlotLockHotKey(b *testing.B) {
	l := new(slotLocks)
	key := [][]byte{[]byte("hot")}
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var buf [4]uint16
			l.runlock(l.rlockKeys(ctx, buf[:0], key))
		}
	})
}
