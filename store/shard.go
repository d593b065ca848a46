package store

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// A shard is one lock's worth of the store: an index, the slabs its entries
// point into, and the large values that live outside the slabs.
type shard struct {
	mu    sync.RWMutex
	seed  maphash.Seed // the store's; the cleaner rehashes keys it moves
	tab   table
	mem   arena
	large [][]byte // large values by id; nil when free
	freeL []int    // free ids in large

	keyBytes   int64
	valBytes   int64
	largeBytes int64
	expiring   int           // records with ExpireAt ≠ 0, so the sampler can skip the shard
	expireSum  expireSum     // Σ ExpireAt of those records
	schemes    []schemeCount // by Meta.Scheme, for the schemes with records here

	_ [64]byte // keeps the next shard's lock off this shard's cache lines
}

func (sh *shard) init(seed maphash.Seed, minSeg int, ratio float64) {
	sh.seed = seed
	sh.tab = newTable()
	sh.mem = newArena(minSeg, ratio)
	sh.large, sh.freeL = nil, nil
	sh.keyBytes, sh.valBytes, sh.largeBytes, sh.expiring = 0, 0, 0, 0
	sh.expireSum = expireSum{}
	sh.schemes = nil
}

func prefixOf(seed maphash.Seed, key []byte) uint64 {
	return maphash.Bytes(seed, key) >> (64 - prefixBits)
}

// find returns the slot of key, whose hash prefix is p, or -1.
func (sh *shard) find(p uint64, key []byte) int {
	t := &sh.tab
	for i := t.seek(p); i < len(t.slots); i++ {
		e := t.slots[i]
		if e == 0 || entryPrefix(e) != p {
			break
		}
		if bytes.Equal(sh.rec(e).key(), key) {
			return i
		}
	}
	return -1
}

// slotOf returns the slot whose entry is exactly e, or -1; the cleaner uses
// it to tell live records from garbage without comparing keys.
func (sh *shard) slotOf(e uint64) int {
	t := &sh.tab
	for i := t.seek(entryPrefix(e)); i < len(t.slots) && t.slots[i] != 0 && entryPrefix(t.slots[i]) == entryPrefix(e); i++ {
		if t.slots[i] == e {
			return i
		}
	}
	return -1
}

func (sh *shard) rec(e uint64) rec { return parseRec(sh.mem.at(e & offsetMask)) }

func (sh *shard) value(r rec) []byte {
	if r.large() {
		return sh.large[r.largeID()]
	}
	return r.inline()
}

// planned is a record about to be written: where its value goes, the value
// bytes that go in the slab, and its encoded size.
type planned struct {
	val    valRef
	inline []byte
	size   int
}

// plan decides where the value goes. A record that would exceed
// MaxInlineRecord keeps only its header and key in the slab and its value
// (unless empty) in a []byte of its own: such values are few, and keeping
// them in slabs would make the cleaner copy megabytes.
//
// A large value comes already made the store's own (Store.own, outside
// the lock): copying it here would hold the shard's lock, and stall the
// goroutine's processor, for as long as a 512 MiB copy takes.
func (sh *shard) plan(key, val []byte, m *Meta) planned {
	if !isLarge(key, val, m) {
		return planned{val: valRef{n: uint64(len(val))}, inline: val, size: recSize(m, len(key), valRef{n: uint64(len(val))})}
	}
	v := valRef{large: true, n: uint64(sh.addLarge(val))}
	return planned{val: v, size: recSize(m, len(key), v)}
}

// isLarge says whether val goes outside the slabs, in a []byte of its own.
func isLarge(key, val []byte, m *Meta) bool {
	return len(val) > 0 && recSize(m, len(key), valRef{n: uint64(len(val))}) > MaxInlineRecord
}

// unplan undoes plan when the record could not be written.
func (sh *shard) unplan(pl planned) {
	if pl.val.large {
		sh.dropLarge(int(pl.val.n))
	}
}

// addLarge keeps val, the store's own (plan), as a large value.
func (sh *shard) addLarge(v []byte) int {
	sh.largeBytes += int64(len(v))
	if n := len(sh.freeL); n > 0 {
		id := sh.freeL[n-1]
		sh.freeL = sh.freeL[:n-1]
		sh.large[id] = v
		return id
	}
	sh.large = append(sh.large, v)
	return len(sh.large) - 1
}

func (sh *shard) dropLarge(id int) {
	sh.largeBytes -= int64(len(sh.large[id]))
	sh.large[id] = nil
	sh.freeL = append(sh.freeL, id)
}

// put inserts or replaces key; with ifNewer it leaves a stored record whose
// version is at least m.Version alone and reports false.
func (sh *shard) put(p uint64, key, val []byte, m *Meta, ifNewer bool) (bool, error) {
	i := sh.find(p, key)
	if i < 0 {
		return true, sh.insert(p, key, val, m)
	}
	if ifNewer && m.Version <= sh.rec(sh.tab.slots[i]).meta().Version {
		return false, nil
	}
	return true, sh.replace(i, key, val, m)
}

func (sh *shard) insert(p uint64, key, val []byte, m *Meta) error {
	pl := sh.plan(key, val, m)
	off, b, err := sh.mem.alloc(pl.size)
	if err != nil {
		sh.unplan(pl)
		return err
	}
	encodeRec(b, m, key, pl.val, pl.inline)
	sh.tab.add(p<<offsetBits | off)
	sh.account(len(key), len(val), m, 1)
	return nil
}

// replace overwrites the record in slot i. A new record of the same encoded
// size (a fixed-size value, the usual case) is written in place and makes
// no garbage.
func (sh *shard) replace(i int, key, val []byte, m *Meta) error {
	e := sh.tab.slots[i]
	old := sh.rec(e)
	oldMeta, oldSize, oldLen := old.meta(), old.size(), len(sh.value(old))
	oldLarge, oldID := old.large(), old.largeID()
	pl := sh.plan(key, val, m)
	if pl.size == oldSize {
		encodeRec(old.b, m, key, pl.val, pl.inline)
	} else {
		off, b, err := sh.mem.alloc(pl.size)
		if err != nil {
			sh.unplan(pl)
			return err
		}
		encodeRec(b, m, key, pl.val, pl.inline)
		sh.tab.slots[i] = e&^offsetMask | off
		sh.mem.free(e&offsetMask, oldSize)
	}
	if oldLarge {
		sh.dropLarge(oldID)
	}
	sh.account(len(key), oldLen, &oldMeta, -1)
	sh.account(len(key), len(val), m, 1)
	return nil
}

// setMeta rewrites the header of the record in slot i, in place when the
// encoded size does not change and by moving the record otherwise.
func (sh *shard) setMeta(i int, m *Meta) error {
	e := sh.tab.slots[i]
	r := sh.rec(e)
	old, valLen := r.meta(), len(sh.value(r))
	size := recSize(m, r.keyLen, r.val)
	if size == r.size() {
		encodeRec(r.b, m, r.key(), r.val, r.inline())
	} else {
		off, b, err := sh.mem.alloc(size)
		if err != nil {
			return err
		}
		encodeRec(b, m, r.key(), r.val, r.inline())
		sh.tab.slots[i] = e&^offsetMask | off
		sh.mem.free(e&offsetMask, r.size())
	}
	sh.account(r.keyLen, valLen, &old, -1)
	sh.account(r.keyLen, valLen, m, 1)
	return nil
}

// remove deletes the record in slot i.
func (sh *shard) remove(i int) {
	e := sh.tab.slots[i]
	r := sh.rec(e)
	m := r.meta()
	sh.account(r.keyLen, len(sh.value(r)), &m, -1)
	if r.large() {
		sh.dropLarge(r.largeID())
	}
	sh.mem.free(e&offsetMask, r.size())
	sh.tab.remove(i)
}

// schemeCount is one scheme's counters in a shard.
type schemeCount struct {
	id uint16
	SchemeStats
}

// schemeCount returns the index of scheme id's counters in sh.schemes,
// adding them if new. A shard holds records of a few schemes (account drops
// a scheme's counters with its last record), so a scan of a short slice
// beats a map lookup, whose buckets cost one more cache miss per write.
func (sh *shard) schemeCount(id uint16) int {
	for i := range sh.schemes {
		if sh.schemes[i].id == id {
			return i
		}
	}
	sh.schemes = append(sh.schemes, schemeCount{id: id})
	return len(sh.schemes) - 1
}

// account adds (sign 1) or removes (sign −1) a record in the counters.
func (sh *shard) account(keyLen, valLen int, m *Meta, sign int) {
	sh.keyBytes += int64(sign * keyLen)
	sh.valBytes += int64(sign * valLen)
	if m.ExpireAt != 0 {
		sh.expiring += sign
		sh.expireSum.add(m.ExpireAt, sign)
	}
	i := sh.schemeCount(m.Scheme)
	c := &sh.schemes[i]
	c.Keys += sign
	c.KeyBytes += int64(sign * keyLen)
	c.ValueBytes += int64(sign * valLen)
	if c.Keys == 0 { // a scheme's last record here: keep the list short
		sh.schemes[i] = sh.schemes[len(sh.schemes)-1]
		sh.schemes = sh.schemes[:len(sh.schemes)-1]
	}
}
