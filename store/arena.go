package store

import "math"

// The slabs of one shard form a log-structured arena, as in RAMCloud's
// log-structured memory (Rumble et al., FAST 2014): records are appended to
// the head segment; deleting or overwriting a record only counts its bytes
// as garbage; when garbage passes a set fraction of the live bytes, the
// cleaner (clean.go) copies the live records out of the segment with the
// most garbage and releases it. There are no size classes, so there is no
// rounding waste and no fragmentation that outlives one cleaning pass, and
// memory stays within (1+ratio)×live plus a few segments under any churn.
//
// An offset is segment id << segBits | position. Segment 0 is never used, so
// no offset is 0 and an index entry is never 0.
const (
	segBits     = 18
	maxSegSize  = 1 << segBits // 256 KiB: bounds one cleaning step's copy
	maxSegments = 1<<(offsetBits-segBits) - 1

	// defaultMinSegment is the smallest segment; segments grow with the
	// shard (see target).
	defaultMinSegment = 4 << 10
)

type segment struct {
	buf  []byte
	used int32 // bytes appended
	live int32 // bytes of records still referenced by the index
}

type arena struct {
	segs    []segment // segs[0] is a permanent empty placeholder
	freeIDs []uint32  // released segment ids, reused first
	head    uint32    // segment receiving appends; 0 = none yet
	spare   []byte    // the last released buffer, kept to become the next head
	minSeg  int
	ratio   float64 // garbage allowed per live byte before cleaning

	live     int64 // Σ live
	records  int64 // live records
	garbage  int64 // Σ used−live
	reserved int64 // Σ len(buf), spare included
	copied   int64 // bytes the cleaner has copied
}

func newArena(minSeg int, ratio float64) arena {
	return arena{segs: make([]segment, 1), minSeg: minSeg, ratio: ratio}
}

// at returns the slab bytes from offset off to the end of its segment.
func (a *arena) at(off uint64) []byte {
	return a.segs[off>>segBits].buf[off&(maxSegSize-1):]
}

// alloc reserves n bytes at the head and counts them live.
func (a *arena) alloc(n int) (uint64, []byte, error) {
	h := &a.segs[a.head]
	if int(h.used)+n > len(h.buf) {
		if err := a.newHead(n); err != nil {
			return 0, nil, err
		}
		h = &a.segs[a.head]
	}
	pos := int(h.used)
	h.used += int32(n)
	h.live += int32(n)
	a.live += int64(n)
	a.records++
	return uint64(a.head)<<segBits | uint64(pos), h.buf[pos : pos+n : pos+n], nil
}

// free turns n live bytes at off into garbage. A segment left with no live
// bytes is released at once: that needs no copying.
func (a *arena) free(off uint64, n int) {
	id := uint32(off >> segBits)
	a.segs[id].live -= int32(n)
	a.live -= int64(n)
	a.records--
	a.garbage += int64(n)
	if a.segs[id].live == 0 && id != a.head {
		a.release(id)
	}
}

// moved accounts a live record copied out of segment id by the cleaner.
func (a *arena) moved(id uint32, n int) {
	a.segs[id].live -= int32(n)
	a.live -= int64(n)
	a.records-- // alloc counted the copy
	a.garbage += int64(n)
}

func (a *arena) newHead(n int) error {
	if a.head != 0 && a.segs[a.head].live == 0 {
		a.release(a.head) // everything in it was freed while it was the head
	}
	size := a.target()
	for size < n {
		size *= 2
	}
	var id uint32
	switch {
	case len(a.freeIDs) > 0:
		id = a.freeIDs[len(a.freeIDs)-1]
		a.freeIDs = a.freeIDs[:len(a.freeIDs)-1]
	case len(a.segs) <= maxSegments:
		id = uint32(len(a.segs))
		a.segs = append(a.segs, segment{})
	default:
		return ErrFull
	}
	buf := a.spare
	if len(buf) == size {
		a.spare = nil
	} else {
		buf = make([]byte, size)
		a.reserved += int64(size)
	}
	a.segs[id] = segment{buf: buf}
	a.head = id
	return nil
}

// target is the size of the next head segment. Two wastes pull against
// each other: the unused part of the head, half a segment S on average, and
// the end of every full segment, where the record that did not fit left
// half a record r on average, live/S · r/2 in all. Their sum is least at
// S = √(live·r), the power of two nearest to which is chosen; the waste is
// then about 1.5·√(live·r) per shard (live 1 MiB of 150-byte records: 18 KiB,
// 1.7%).
func (a *arena) target() int {
	best := float64(a.minSeg)
	if a.records > 0 {
		best = float64(a.live) / math.Sqrt(float64(a.records)) // √(live · live/records)
	}
	size := a.minSeg
	for size < maxSegSize && float64(size)*math.Sqrt2 < best {
		size *= 2
	}
	return size
}

// release drops a segment whose live records are gone, keeping its buffer
// as the spare.
func (a *arena) release(id uint32) {
	s := a.segs[id]
	a.garbage -= int64(s.used - s.live)
	a.live -= int64(s.live)
	if a.spare != nil {
		a.reserved -= int64(len(a.spare))
	}
	a.spare = s.buf
	a.segs[id] = segment{}
	a.freeIDs = append(a.freeIDs, id)
	if id == a.head {
		a.head = 0
	}
}

// overGarbage reports whether garbage exceeds ratio × live plus two
// minimum segments (so that tiny shards are not cleaned over and over).
func (a *arena) overGarbage() bool {
	return float64(a.garbage) > float64(a.live)*a.ratio+float64(2*a.minSeg)
}

// victim is the segment with the most garbage, or 0 if none has any.
func (a *arena) victim() uint32 {
	best, most := uint32(0), int32(0)
	for id, s := range a.segs {
		if g := s.used - s.live; s.buf != nil && g > most {
			best, most = uint32(id), g
		}
	}
	return best
}

func (a *arena) segments() int { return len(a.segs) - 1 - len(a.freeIDs) }
