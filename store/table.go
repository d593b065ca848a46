package store

// The index of one shard is an open-addressing table of uint64 entries with
// linear probing, kept sorted by hash prefix (the "ordered hash table" of
// Amble and Knuth, which is Robin Hood hashing with linear probing and a
// total order). An entry packs
//
//	bits 63-36  prefix: the top 28 bits of the key's 64-bit hash
//	bits 35-0   offset of the record in the shard's slabs (never 0)
//
// and 0 marks an empty slot. The home slot of prefix p in a table of n home
// slots is p·n >> 28, which is monotone in p for any n, so:
//
//   - Every entry sits at or after its home slot with no empty slot between,
//     and occupied slots are sorted by prefix across the whole table. A
//     lookup walks from the home slot past smaller prefixes and stops at the
//     first larger one, comparing keys only on an equal 28-bit prefix.
//   - The table never wraps around: a tail of overflow slots follows the n
//     home slots, and an insert that would run off the end grows the table.
//   - n need not be a power of two, so the table grows by 1.2× instead of
//     2×, which keeps the load between 0.75 and 0.9 (8.9 to 10.7 bytes of
//     index per key) instead of 0.45-0.9 (up to 17.8 bytes).
//   - Scan cursors are prefixes, not slot numbers: resizing moves entries
//     but never changes their order, so a cursor stays valid (scan.go).
//
// Resizing rebuilds the table in one pass over the sorted entries, with no
// rehashing and no shifting: entry by entry it goes to max(home, next free).
const (
	prefixBits = 28
	offsetBits = 36
	offsetMask = 1<<offsetBits - 1
	prefixEnd  = 1 << prefixBits // one past the largest prefix

	minHome = 8
)

type table struct {
	slots []uint64 // home slots, then the overflow tail
	home  uint64   // number of home slots
	count int
}

func newTable() table {
	t := table{}
	t.rebuild(minHome)
	return t
}

func entryPrefix(e uint64) uint64 { return e >> offsetBits }

func (t *table) homeOf(p uint64) int { return int(p * t.home >> prefixBits) }

// seek returns the first slot that is empty or holds a prefix ≥ p. Entries
// with prefix p, if any, start there; every later entry has a prefix ≥ p.
func (t *table) seek(p uint64) int {
	i := t.homeOf(p)
	for i < len(t.slots) {
		e := t.slots[i]
		if e == 0 || entryPrefix(e) >= p {
			break
		}
		i++
	}
	return i
}

// add inserts e, growing the table first when it is 90% full.
func (t *table) add(e uint64) {
	if uint64(t.count+1)*10 > t.home*9 {
		t.rebuild(t.count*4/3 + 1)
	}
	for !t.insert(e) {
		t.rebuild(int(t.home + t.home/4 + 1))
	}
}

// insert puts e in front of the entries with an equal or larger prefix,
// shifting them right up to the next empty slot. It fails, changing nothing,
// when no empty slot follows.
func (t *table) insert(e uint64) bool {
	i := t.seek(entryPrefix(e))
	j := i
	for j < len(t.slots) && t.slots[j] != 0 {
		j++
	}
	if j == len(t.slots) {
		return false
	}
	copy(t.slots[i+1:j+1], t.slots[i:j])
	t.slots[i] = e
	t.count++
	return true
}

// remove deletes the entry in slot i by shifting left the entries after it
// that are not at their home slot (backward-shift deletion: no tombstones),
// and shrinks the table once it is less than a quarter full.
func (t *table) remove(i int) {
	j := i + 1
	for j < len(t.slots) {
		e := t.slots[j]
		if e == 0 || t.homeOf(entryPrefix(e)) >= j {
			break
		}
		j++
	}
	copy(t.slots[i:j-1], t.slots[i+1:j])
	t.slots[j-1] = 0
	t.count--
	if t.home > minHome && uint64(t.count)*4 < t.home {
		t.rebuild(max(minHome, t.count*2))
	}
}

// rebuild lays the entries out again over home home slots.
func (t *table) rebuild(home int) {
	old := t.slots
	t.home = uint64(home)
	end := 0 // first pass: where the last entry lands
	for _, e := range old {
		if e != 0 {
			end = max(t.homeOf(entryPrefix(e)), end) + 1
		}
	}
	t.slots = make([]uint64, max(home, end)+tailSlots(home))
	pos := 0
	for _, e := range old {
		if e != 0 {
			pos = max(t.homeOf(entryPrefix(e)), pos)
			t.slots[pos] = e
			pos++
		}
	}
}

// tailSlots is the overflow room after the home slots. Clusters at load
// 0.9 are short, so running off the end (which forces a grow) is rare.
func tailSlots(home int) int { return 16 + home/128 }

func (t *table) bytes() int64 { return int64(len(t.slots)) * 8 }
