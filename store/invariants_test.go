package store

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// checkInvariants verifies every structural property the store relies on,
// shard by shard: the index is sorted and gap-free, each entry points at a
// record whose key hashes to the entry's shard and prefix, and the slab,
// large-value and byte counters match what the records add up to.
func checkInvariants(t testing.TB, s *Store) {
	t.Helper()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		err := sh.check(s, i)
		sh.mu.RUnlock()
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
}

func (sh *shard) check(s *Store, index int) error {
	if err := sh.tab.check(); err != nil {
		return err
	}
	segLive := make([]int32, len(sh.mem.segs))
	var keyBytes, valBytes int64
	expiring := 0
	var expires expireSum
	largeRefs := map[int]bool{}
	schemes := map[uint16]SchemeStats{}
	for _, e := range sh.tab.slots {
		if e == 0 {
			continue
		}
		off := e & offsetMask
		id := off >> segBits
		if id == 0 || int(id) >= len(sh.mem.segs) || sh.mem.segs[id].buf == nil {
			return fmt.Errorf("entry %x points at segment %d, not in use", e, id)
		}
		if pos := off & (maxSegSize - 1); pos >= uint64(sh.mem.segs[id].used) {
			return fmt.Errorf("entry %x points past the used end of segment %d", e, id)
		}
		r := sh.rec(e)
		if h := hashOf(s, r.key()); h&s.mask != uint64(index) || h>>(64-prefixBits) != entryPrefix(e) {
			return fmt.Errorf("key %q in shard %d with prefix %x: hash %x", r.key(), index, entryPrefix(e), h)
		}
		segLive[id] += int32(r.size())
		keyBytes += int64(r.keyLen)
		valBytes += int64(len(sh.value(r)))
		if r.meta().ExpireAt != 0 {
			expiring++
			expires.add(r.meta().ExpireAt, 1)
		}
		c := schemes[r.meta().Scheme]
		c.Keys, c.KeyBytes, c.ValueBytes = c.Keys+1, c.KeyBytes+int64(r.keyLen), c.ValueBytes+int64(len(sh.value(r)))
		schemes[r.meta().Scheme] = c
		if r.large() {
			if largeRefs[r.largeID()] || sh.large[r.largeID()] == nil {
				return fmt.Errorf("large id %d referenced twice or freed", r.largeID())
			}
			largeRefs[r.largeID()] = true
		}
	}
	if keyBytes != sh.keyBytes || valBytes != sh.valBytes || expiring != sh.expiring || expires != sh.expireSum {
		return fmt.Errorf("counters: keys %d/%d values %d/%d expiring %d/%d expiry sum %v/%v",
			keyBytes, sh.keyBytes, valBytes, sh.valBytes, expiring, sh.expiring, expires, sh.expireSum)
	}
	for _, c := range sh.schemes {
		want, ok := schemes[c.id]
		if !ok || c.SchemeStats != want {
			return fmt.Errorf("scheme %d: counted %+v, records add up to %+v (listed twice, or with no record)", c.id, c.SchemeStats, want)
		}
		delete(schemes, c.id)
	}
	if len(schemes) != 0 {
		return fmt.Errorf("schemes %v not counted", schemes)
	}
	if err := sh.checkLarge(largeRefs); err != nil {
		return err
	}
	return sh.mem.check(segLive)
}

func hashOf(s *Store, key []byte) uint64 { return maphash.Bytes(s.seed, key) }

func (sh *shard) checkLarge(refs map[int]bool) error {
	var bytes int64
	live := 0
	for id, v := range sh.large {
		if v != nil {
			live++
			bytes += int64(len(v))
			if !refs[id] {
				return fmt.Errorf("large id %d is held but no record refers to it", id)
			}
		}
	}
	if live+len(sh.freeL) != len(sh.large) || bytes != sh.largeBytes {
		return fmt.Errorf("large values: %d live + %d free of %d, %d bytes counted %d",
			live, len(sh.freeL), len(sh.large), bytes, sh.largeBytes)
	}
	return nil
}

func (t *table) check() error {
	n := 0
	prev := uint64(0)
	for i, e := range t.slots {
		if e == 0 {
			continue
		}
		n++
		p := entryPrefix(e)
		h := t.homeOf(p)
		if h > i {
			return fmt.Errorf("slot %d holds prefix %x whose home is %d", i, p, h)
		}
		for j := h; j < i; j++ {
			if t.slots[j] == 0 {
				return fmt.Errorf("slot %d: empty slot %d between it and its home %d", i, j, h)
			}
		}
		if p < prev {
			return fmt.Errorf("slot %d: prefix %x after %x", i, p, prev)
		}
		prev = p
	}
	if n != t.count {
		return fmt.Errorf("count %d, %d entries", t.count, n)
	}
	return nil
}

func (a *arena) check(segLive []int32) error {
	var live, garbage, reserved int64
	for id, s := range a.segs {
		if s.live != segLive[id] {
			return fmt.Errorf("segment %d: live %d, records add up to %d", id, s.live, segLive[id])
		}
		if s.buf == nil {
			continue
		}
		if id != int(a.head) && s.live == 0 {
			return fmt.Errorf("segment %d: no live records but not released", id)
		}
		live += int64(s.live)
		garbage += int64(s.used - s.live)
		reserved += int64(len(s.buf))
	}
	reserved += int64(len(a.spare))
	if live != a.live || garbage != a.garbage || reserved != a.reserved {
		return fmt.Errorf("arena: live %d/%d garbage %d/%d reserved %d/%d",
			live, a.live, garbage, a.garbage, reserved, a.reserved)
	}
	return nil
}
