package stripe

import (
	"bytes"
	"errors"
	"hash/maphash"
	"math/bits"
)

// Index maps keys to where their objects lie (chunk number and offset) in
// 8 bytes a slot, with no pointers for the garbage collector to scan and no
// copy of the key: keys live only in the chunks, and the index reads one
// back (KeyAt) to confirm a match. It is MemEC's object index (§3.2):
// cuckoo hashing with 4-way buckets, which stays correct at over 90% of its
// slots used.
//
// Each slot holds a 12-bit tag of the key's hash beside the location, so a
// lookup reads a key from a chunk only when the tag matches (one in 4,095
// for another key). A key's two buckets are its hash's, and that bucket
// XOR a hash of the tag ("partial-key cuckoo hashing"), so an entry can move
// to its other bucket without its key being read. Growing the table does
// read every key once. An Index is not safe for concurrent use.
type Index struct {
	buckets []bucket
	pending []uint64 // entries a failed insert left without a slot
	count   int
	keyAt   KeyAt
	seed    maphash.Seed
	rng     uint64 // picks the entry to displace
}

// Loc is an object's place on its node: the chunk's number (the caller's
// name for it) and the offset in the chunk.
type Loc struct {
	Chunk  uint32
	Offset uint32
}

// KeyAt returns the key of the object at loc.
type KeyAt func(loc Loc) []byte

// MaxOffset is the largest offset a Loc can hold: 20 bits, enough for
// MaxChunkSize.
const MaxOffset = 1<<offsetBits - 1

const (
	slotsPerBucket = 4
	tagBits        = 12
	offsetBits     = 20
	chunkShift     = offsetBits
	tagShift       = 64 - tagBits
	maxKicks       = 500
)

// ErrOffset is returned for a location whose offset does not fit.
var ErrOffset = errors.New("stripe: offset too large for the index")

// bucket holds 4 slots; 0 is an empty slot (tags are never 0).
type bucket [slotsPerBucket]uint64

// NewIndex returns an empty index that reads keys with keyAt.
func NewIndex(keyAt KeyAt) *Index {
	return &Index{buckets: make([]bucket, 16), keyAt: keyAt, seed: maphash.MakeSeed(), rng: 0x9E3779B97F4A7C15}
}

// Len is how many keys the index holds.
func (x *Index) Len() int { return x.count }

// Bytes is the memory the index's table takes.
func (x *Index) Bytes() int { return len(x.buckets) * slotsPerBucket * 8 }

// Get returns key's location.
func (x *Index) Get(key []byte) (Loc, bool) {
	b, s, ok := x.find(key)
	if !ok {
		return Loc{}, false
	}
	return unpack(x.buckets[b][s]), true
}

// Put sets key's location, adding the key if it is new.
func (x *Index) Put(key []byte, loc Loc) error {
	if loc.Offset > MaxOffset {
		return ErrOffset
	}
	h := x.hash(key)
	tag := tagOf(h)
	slot := pack(tag, loc)
	if b, s, ok := x.findHashed(key, h); ok {
		x.buckets[b][s] = slot
		return nil
	}
	if !x.insert(x.home(h), tag, slot) {
		x.grow()
	}
	x.count++
	return nil
}

// Delete removes key and reports whether it was there.
func (x *Index) Delete(key []byte) bool {
	b, s, ok := x.find(key)
	if ok {
		x.buckets[b][s] = 0
		x.count--
	}
	return ok
}

// Range calls fn for every key's location until fn returns false.
func (x *Index) Range(fn func(loc Loc) bool) {
	for _, b := range x.buckets {
		for _, slot := range b {
			if slot != 0 && !fn(unpack(slot)) {
				return
			}
		}
	}
}

func (x *Index) find(key []byte) (int, int, bool) { return x.findHashed(key, x.hash(key)) }

// findHashed looks for key (of hash h) in its two buckets.
func (x *Index) findHashed(key []byte, h uint64) (int, int, bool) {
	tag := tagOf(h)
	b1 := x.home(h)
	for _, b := range [2]int{b1, x.alt(b1, tag)} {
		for s, slot := range x.buckets[b] {
			if slot != 0 && slotTag(slot) == tag && bytes.Equal(x.keyAt(unpack(slot)), key) {
				return b, s, true
			}
		}
	}
	return 0, 0, false
}

// insert places slot (of tag, home bucket b) in a free slot of its two
// buckets, displacing entries to their other bucket up to maxKicks times.
// On false the entry displaced last waits in x.pending, and the table must
// grow.
func (x *Index) insert(b int, tag uint64, slot uint64) bool {
	for kick := 0; kick < maxKicks; kick++ {
		for _, c := range [2]int{b, x.alt(b, tag)} {
			if s := free(&x.buckets[c]); s >= 0 {
				x.buckets[c][s] = slot
				return true
			}
		}
		b = x.alt(b, tag) // evict from the other bucket, whose entries may move
		s := int(x.next() % slotsPerBucket)
		slot, x.buckets[b][s] = x.buckets[b][s], slot
		tag = slotTag(slot)
	}
	x.pending = append(x.pending, slot)
	return false
}

// grow doubles the table until every entry, the pending ones included, has
// a slot, reading each key once a doubling.
func (x *Index) grow() {
	for len(x.pending) > 0 {
		old, pending := x.buckets, x.pending
		x.buckets, x.pending = make([]bucket, 2*len(old)), nil
		for _, b := range old {
			for _, slot := range b {
				if slot != 0 {
					x.place(slot)
				}
			}
		}
		for _, slot := range pending {
			x.place(slot)
		}
	}
}

// place puts an entry back after a doubling (a failure joins x.pending).
func (x *Index) place(slot uint64) {
	h := x.hash(x.keyAt(unpack(slot)))
	x.insert(x.home(h), tagOf(h), slot)
}

func free(b *bucket) int {
	for s, slot := range b {
		if slot == 0 {
			return s
		}
	}
	return -1
}

func (x *Index) hash(key []byte) uint64 { return maphash.Bytes(x.seed, key) }

func (x *Index) home(h uint64) int { return int(h & uint64(len(x.buckets)-1)) }

// alt is a bucket's partner for tag: an involution, so alt(alt(b)) == b.
func (x *Index) alt(b int, tag uint64) int {
	return (b ^ int(mix(tag))) & (len(x.buckets) - 1)
}

// next is a xorshift step for choosing victims.
func (x *Index) next() uint64 {
	x.rng ^= x.rng << 13
	x.rng ^= x.rng >> 7
	x.rng ^= x.rng << 17
	return x.rng
}

// tagOf takes a key hash's top bits, never 0 (0 marks an empty slot).
func tagOf(h uint64) uint64 {
	if t := h >> tagShift; t != 0 {
		return t
	}
	return 1
}

func mix(tag uint64) uint64 { return bits.RotateLeft64(tag*0x9E3779B97F4A7C15, 29) }

func pack(tag uint64, loc Loc) uint64 {
	return tag<<tagShift | uint64(loc.Chunk)<<chunkShift | uint64(loc.Offset)
}

func unpack(slot uint64) Loc {
	return Loc{Chunk: uint32(slot >> chunkShift), Offset: uint32(slot & MaxOffset)}
}

func slotTag(slot uint64) uint64 { return slot >> tagShift }

// Suspects returns the places of the entries in key's two buckets whose
// tag is key's but whose key, read back, is not: where key's object is if
// damage changed its key bytes (or another key's, one in 4,095). A read
// that misses checks them (Data.GetChecked).
func (x *Index) Suspects(key []byte) []Loc {
	h := x.hash(key)
	tag := tagOf(h)
	b1 := x.home(h)
	var out []Loc
	for _, b := range [2]int{b1, x.alt(b1, tag)} {
		for _, slot := range x.buckets[b] {
			if slot != 0 && slotTag(slot) == tag && !bytes.Equal(x.keyAt(unpack(slot)), key) {
				out = append(out, unpack(slot))
			}
		}
	}
	return out
}

// Reseat puts back in its buckets every entry of chunk number chunk that
// a lookup of its key no longer finds: one a growth placed by the hash of
// damaged key bytes, once the chunk is restored (Data.Restore). It reads
// the whole table, which only a repair pays.
func (x *Index) Reseat(chunk uint32) {
	var lost []uint64
	for b := range x.buckets {
		for s, slot := range x.buckets[b] {
			if slot == 0 || unpack(slot).Chunk != chunk {
				continue
			}
			if fb, fs, ok := x.find(x.keyAt(unpack(slot))); !ok || fb != b || fs != s {
				lost = append(lost, slot)
				x.buckets[b][s] = 0
			}
		}
	}
	for _, slot := range lost {
		key := x.keyAt(unpack(slot))
		h := x.hash(key)
		if !x.insert(x.home(h), tagOf(h), pack(tagOf(h), unpack(slot))) {
			x.grow()
		}
	}
}
