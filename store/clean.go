package store

// cleanPerWrite bounds the cleaning one write may do: each step copies at
// most one segment (256 KiB), so a write's worst-case latency stays bounded
// while cleaning still outpaces the garbage writes make.
const cleanPerWrite = 2

// maybeClean runs after every write that may have made garbage.
func (sh *shard) maybeClean() {
	for n := 0; n < cleanPerWrite && sh.mem.overGarbage(); n++ {
		if !sh.cleanOne() {
			return
		}
	}
}

// cleanOne copies the live records of the segment with the most garbage to
// the head and releases the segment. A record is live iff the index holds an
// entry with its key's prefix and its offset; the key is rehashed to find
// that entry, which is then pointed at the copy.
func (sh *shard) cleanOne() bool {
	a := &sh.mem
	id := a.victim()
	if id == 0 {
		return false
	}
	if id == a.head {
		a.head = 0 // copies must not land in the segment being emptied
	}
	buf, used := a.segs[id].buf, int(a.segs[id].used)
	for pos := 0; pos < used; {
		r := parseRec(buf[pos:])
		size := r.size()
		e := prefixOf(sh.seed, r.key())<<offsetBits | uint64(id)<<segBits | uint64(pos)
		if i := sh.slotOf(e); i >= 0 {
			off, b, err := a.alloc(size)
			if err != nil {
				return false // out of segment ids: leave the rest where it is
			}
			copy(b, buf[pos:pos+size])
			sh.tab.slots[i] = e&^offsetMask | off
			a.moved(id, size)
			a.copied += int64(size)
		}
		pos += size
	}
	a.release(id)
	return true
}
