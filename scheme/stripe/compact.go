package stripe

import (
	"bytes"

	"github.com/memgest/memgest/cluster"
	"math/rand/v2"
	"slices"
)

// Compaction (BCStore §III-B's move-based garbage collection). Deleted
// and relocated objects leave garbage in sealed chunks, which also costs
// its share of parity. The coordinator reclaims it by rewriting the
// current objects of the chunks with the most garbage elsewhere (each byte
// moved there frees the most), after which such a chunk holds nothing and
// is freed. The rewriting goes through the caller's write path, so that it
// is ordered with clients' writes of the same keys; Data only picks the
// chunks and lists what is left in them.

// ChunkGarbage is a sealed chunk's use of its bytes.
type ChunkGarbage struct {
	ID      ChunkID
	Live    int // bytes of objects still in it
	Garbage int // bytes of objects gone from it
}

// Victims returns up to n sealed chunks holding garbage, the most garbage
// first.
func (d *Data) Victims(n int) []ChunkGarbage {
	var top []ChunkGarbage // sorted, most garbage first
	for _, c := range d.chunks {
		if c == nil || !c.chunk.Sealed() || c.chunk.Garbage() == 0 {
			continue
		}
		g := ChunkGarbage{ID: c.id, Live: c.chunk.Live(), Garbage: c.chunk.Garbage()}
		if len(top) == n && g.Garbage <= top[n-1].Garbage {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, g.Garbage, func(x ChunkGarbage, garbage int) int { return garbage - x.Garbage })
		top = slices.Insert(top, i, g)
		if len(top) > n {
			top = top[:n]
		}
	}
	return top
}

// Misplaced returns up to n sealed chunks, the highest-numbered first,
// whose stripe numbers are above as many free numbers of their list. A
// stripe's parity is kept while any of its positions holds a chunk, so a
// list whose chunks are spread over more stripe numbers than it has chunks
// (data shrank, leaving free numbers below used ones) costs parity for
// every number in use at any position. Relocating a misplaced chunk's
// objects moves them into a chunk at a free low number, so the positions'
// numbers become dense again and their stripes coincide. A list with no
// more than misplacedSlack of its chunks misplaced is left alone.
func (d *Data) Misplaced(n int) []ChunkGarbage {
	inUse := map[uint16]uint32{}
	for id := range d.byID {
		inUse[id.List]++
	}
	misplaced := map[uint16]int{}
	var all []ChunkGarbage
	for _, c := range d.chunks {
		if c != nil && c.chunk.Sealed() && c.id.Stripe >= inUse[c.id.List] {
			misplaced[c.id.List]++
			all = append(all, ChunkGarbage{ID: c.id, Live: c.chunk.Live(), Garbage: c.chunk.Garbage()})
		}
	}
	all = slices.DeleteFunc(all, func(g ChunkGarbage) bool {
		return float64(misplaced[g.ID.List]) <= misplacedSlack*float64(inUse[g.ID.List])
	})
	slices.SortFunc(all, func(a, b ChunkGarbage) int { return int(b.ID.Stripe) - int(a.ID.Stripe) })
	return all[:min(n, len(all))]
}

// Evacuees returns up to n chunks of lists, open or sealed, that still
// hold objects: the lists of retired shards, whose placement is no longer
// kept whole, so their objects move to live lists.
func (d *Data) Evacuees(lists []uint16, n int) []ChunkGarbage {
	var out []ChunkGarbage
	for _, c := range d.chunks {
		if len(out) == n {
			break
		}
		if c != nil && c.chunk.Live() > 0 && slices.Contains(lists, c.id.List) {
			out = append(out, ChunkGarbage{ID: c.id, Live: c.chunk.Live(), Garbage: c.chunk.Garbage()})
		}
	}
	return out
}

// misplacedSlack is the share of a list's chunks that may sit above its
// free stripe numbers before Misplaced reports them.
const misplacedSlack = 0.05

// Residents returns copies of the current objects with bytes in chunk id:
// those the index places there, and those with a fragment there, whole
// (relocating one moves every fragment). An object gone from the index
// (expired ones are not) is garbage already.
func (d *Data) Residents(id ChunkID) []Object {
	num, ok := d.byID[id]
	if !ok {
		return nil
	}
	var out []Object
	_ = d.chunks[num].chunk.Objects(func(off int, o Object) bool {
		here := Loc{Chunk: num, Offset: uint32(off)}
		loc, ok := d.index.Get(o.Key)
		if !ok || loc != here && !(o.Fragment && d.isFragmentOf(o.Key, here)) {
			return true
		}
		if slices.ContainsFunc(out, func(r Object) bool { return bytes.Equal(r.Key, o.Key) }) {
			return true // another fragment of an object listed already
		}
		whole, err := d.object(o.Key, loc)
		if err == nil {
			whole.Key, whole.Value = slices.Clone(whole.Key), slices.Clone(whole.Value)
			out = append(out, whole)
		}
		return true
	})
	return out
}

// SampleExpired looks at the current objects of up to chunks chunks
// picked at random and calls fn with the key of each one that expired at
// or before now (Unix milliseconds); the key is a copy. It returns how
// many objects with an expiry it looked at, so that the caller can sample
// again while most of them turn out expired, as Redis's active expiry
// does.
func (d *Data) SampleExpired(now int64, chunks int, fn func(key []byte)) (withTTL int) {
	if len(d.chunks) == 0 {
		return 0
	}
	for range chunks {
		num := uint32(rand.IntN(len(d.chunks)))
		c := d.chunks[num]
		if c == nil {
			continue
		}
		_ = c.chunk.Objects(func(off int, o Object) bool {
			if o.ExpireAt == 0 {
				return true
			}
			if loc, ok := d.index.Get(o.Key); !ok || loc != (Loc{Chunk: num, Offset: uint32(off)}) {
				return true
			}
			withTTL++
			if o.ExpireAt <= now {
				fn(slices.Clone(o.Key))
			}
			return true
		})
	}
	return withTTL
}

// compactGoal is the share of a scheme's data chunk bytes that may be
// garbage before compaction starts on a node: 5% keeps the scheme within
// about 5% of MemEC's formula (parity covers the garbage too).
const compactGoal = 0.05

// Relocation is one stripe scheme's share of a compaction round: the
// current objects of its victim chunks, which the node rewrites into open
// chunks as writes at new versions, and the victims' bytes.
type Relocation struct {
	Scheme  uint16
	Objects []Object
	Bytes   int
}

// Compaction picks the victim chunks of a round of at most budget bytes,
// scheme by scheme: those with the most garbage while a scheme's garbage
// on this node is above compactGoal, else its misplaced ones
// (Data.Misplaced).
func (eng *Engine) Compaction(budget int) []Relocation {
	return eng.pick(budget, (*schemeState).victims)
}

// Evacuation picks the chunks of a round of at most budget bytes that
// hold objects in the lists of retired shards (Data.Evacuees): a retired
// shard's placement is neither rebuilt nor kept when one of its nodes
// leaves (cluster.RemoveNode), so its lists take no new objects
// (ownSlots) and those they hold move to live lists.
func (eng *Engine) Evacuation(budget int) []Relocation {
	retired := retiredLists(eng.host.Map())
	if len(retired) == 0 {
		return nil
	}
	return eng.pick(budget, func(s *schemeState, want int) []ChunkGarbage { return s.data.Evacuees(retired, want) })
}

// pick collects, scheme by scheme, the objects of the chunks choose
// picks, until their chunks come to budget bytes.
func (eng *Engine) pick(budget int, choose func(s *schemeState, want int) []ChunkGarbage) []Relocation {
	var out []Relocation
	for _, s := range eng.all() {
		if budget <= 0 {
			break
		}
		r := s.relocation(budget, choose)
		budget -= r.Bytes
		if r.Bytes > 0 {
			out = append(out, r)
		}
	}
	return out
}

// retiredLists are the lists of m's retired shards.
func retiredLists(m *cluster.Map) []uint16 {
	var out []uint16
	for g := range m.Shards {
		if m.Shards[g].Retired {
			out = append(out, uint16(g))
		}
	}
	return out
}

// victims picks up to want of s's chunks to compact. The caller holds
// s.mu.
func (s *schemeState) victims(want int) []ChunkGarbage {
	st := s.data.Stats()
	if float64(st.GarbageBytes) > compactGoal*float64(st.ChunkBytes) {
		return s.data.Victims(want)
	}
	// Only then: while writes leave garbage, new chunks fill the free
	// numbers below anyway, and moving whole chunks down would be wasted.
	return s.data.Misplaced(want)
}

// relocation lists the objects of the chunks choose picks of s, at most
// budget bytes of chunks.
func (s *schemeState) relocation(budget int, choose func(s *schemeState, want int) []ChunkGarbage) Relocation {
	size := s.spec.ChunkSize()
	s.mu.Lock()
	defer s.mu.Unlock()
	victims := choose(s, max(1, budget/size))
	r := Relocation{Scheme: s.id, Bytes: len(victims) * size}
	for _, v := range victims {
		r.Objects = append(r.Objects, s.data.Residents(v.ID)...)
	}
	return r
}
