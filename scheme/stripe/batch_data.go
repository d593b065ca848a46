package stripe

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
)

// BatchData is a coordinator's batch stripes of one packed scheme
// (decision 0009): the stripes its batches wrote, which of their data
// chunks it keeps here (chunk 0 under stripe@batch, every one under
// hybrid@batch), the heads of the objects in the chunks it does not keep
// (so that lookups confirm keys and answer metadata without a peer read),
// the index of its batch keys and every stripe's live and garbage bytes.
// Stripes are immutable: an update or a deletion leaves the old object
// as garbage, which the GC reclaims by moving a stripe's live objects and
// freeing it. Like Data, it is pure (no I/O, no locks).
type BatchData struct {
	k       int
	keepAll bool
	index   *Index
	stripes []*batchStripe    // by slot; nil is a free slot
	free    []uint32          // free slots, any order
	serials map[uint16]uint64 // the last serial used, by shard
	keys    int               // key bytes of indexed objects
	values  int               // value bytes of indexed objects
	data    int               // bytes of every stripe's data chunks
	live    int               // bytes of indexed objects
	marks   markQueue         // dead marks owed to the holders (batch_marks.go)
}

// BatchLoc is a batch object's place: its stripe's slot, data chunk and
// offset.
type BatchLoc struct {
	Slot   uint32
	Chunk  int
	Offset int
}

// batchStripe is one batch stripe: its shard and serial (its id with the
// scheme, never reused), its data chunks' lengths, the chunks kept here
// and the object heads of the others.
type batchStripe struct {
	shard   uint16
	serial  uint64
	lens    []int
	kept    [][]byte      // by chunk; nil where not kept here
	heads   []*chunkHeads // by chunk; nil where kept here
	objects int           // objects packed
	live    int           // of them, still indexed
	liveB   int           // bytes of the live ones
	// unsettled counts the writes of the stripe's round not yet
	// committed or aborted: the stripe is not freed before they are.
	unsettled int
	// c is the coordinator's list position the stripe was laid out for
	// (batchPosition).
	c int
}

// chunkHeads are the heads (an object's encoding without its value) of
// the objects of one data chunk kept elsewhere, by offset.
type chunkHeads struct {
	offsets []uint32 // ascending
	ends    []uint32 // end of each head in buf
	sizes   []uint32 // each object's encoded length
	buf     []byte
}

// ErrNoBatchObject is returned for a batch location with no object.
var ErrNoBatchObject = errors.New("stripe: no batch object there")

// NewBatchData returns an empty BatchData for stripes of k data chunks;
// keepAll keeps every data chunk here (hybrid), else only chunk 0.
func NewBatchData(k int, keepAll bool) *BatchData {
	b := &BatchData{k: k, keepAll: keepAll, serials: map[uint16]uint64{}, marks: newMarkQueue()}
	b.index = NewIndex(b.keyAt)
	return b
}

// NextSerial returns the serial of shard's next stripe.
func (b *BatchData) NextSerial(shard uint16) uint64 {
	b.serials[shard]++
	return b.serials[shard]
}

// SeenSerial raises shard's serial counter to at least s (a new
// coordinator learning the stripes of its shard).
func (b *BatchData) SeenSerial(shard uint16, s uint64) { b.serials[shard] = max(b.serials[shard], s) }

// kept says whether data chunk q of a stripe stays here.
func (b *BatchData) keeps(q int) bool { return b.keepAll || q == 0 }

// Add registers ps, durable on its holders as shard's stripe serial, and
// returns its slot. Its objects are garbage until Commit indexes them.
func (b *BatchData) Add(shard uint16, serial uint64, ps *packedStripe, c int) (uint32, error) {
	if len(ps.data) != b.k {
		return 0, fmt.Errorf("stripe: a batch stripe of %d data chunks, want %d", len(ps.data), b.k)
	}
	st := &batchStripe{shard: shard, serial: serial, c: c, lens: make([]int, b.k), kept: make([][]byte, b.k), heads: make([]*chunkHeads, b.k)}
	for q, d := range ps.data {
		st.lens[q] = len(d)
		b.data += len(d)
		if b.keeps(q) {
			if d == nil {
				d = []byte{} // kept here, if empty
			}
			st.kept[q] = d
			continue
		}
		h, err := headsOf(d)
		if err != nil {
			return 0, err
		}
		st.heads[q] = h
	}
	st.objects = len(ps.places)
	slot := b.takeSlot()
	if int(slot)*b.k+b.k-1 > int(^uint32(0)) {
		return 0, errors.New("stripe: too many batch stripes for the index")
	}
	b.stripes[slot] = st
	return slot, nil
}

func (b *BatchData) takeSlot() uint32 {
	if n := len(b.free); n > 0 {
		s := b.free[n-1]
		b.free = b.free[:n-1]
		return s
	}
	b.stripes = append(b.stripes, nil)
	return uint32(len(b.stripes) - 1)
}

// headsOf reads the heads of the objects in data chunk d.
func headsOf(d []byte) (*chunkHeads, error) {
	h := &chunkHeads{}
	err := Scan(d, func(off int, o Object) bool {
		size := o.EncodedLen()
		h.offsets = append(h.offsets, uint32(off))
		h.sizes = append(h.sizes, uint32(size))
		h.buf = append(h.buf, d[off:off+size-len(o.Value)]...)
		h.ends = append(h.ends, uint32(len(h.buf)))
		return true
	})
	return h, err
}

// head returns the object at offset with its key and metadata, its value
// left out, and its value's and encoding's lengths.
func (h *chunkHeads) head(offset int) (o Object, valueLen, size int, ok bool) {
	i := sort.Search(len(h.offsets), func(i int) bool { return h.offsets[i] >= uint32(offset) })
	if i == len(h.offsets) || h.offsets[i] != uint32(offset) {
		return Object{}, 0, 0, false
	}
	start := uint32(0)
	if i > 0 {
		start = h.ends[i-1]
	}
	o, valueLen, ok = parseHead(h.buf[start:h.ends[i]])
	return o, valueLen, int(h.sizes[i]), ok
}

// batchEntry is a batch object as BatchData knows it: whole when its
// chunk is kept here (local), else its head (Value nil); and its value's
// and encoding's lengths.
type batchEntry struct {
	o        Object
	valueLen int
	size     int
	local    bool
}

// entry returns the batch object at loc.
func (b *BatchData) entry(loc BatchLoc) (batchEntry, error) {
	if int(loc.Slot) >= len(b.stripes) || b.stripes[loc.Slot] == nil || loc.Chunk < 0 || loc.Chunk >= b.k {
		return batchEntry{}, fmt.Errorf("%w: slot %d chunk %d", ErrNoBatchObject, loc.Slot, loc.Chunk)
	}
	st := b.stripes[loc.Slot]
	if d := st.kept[loc.Chunk]; d != nil {
		if loc.Offset >= len(d) {
			return batchEntry{}, fmt.Errorf("%w: offset %d of %d", ErrNoBatchObject, loc.Offset, len(d))
		}
		o, n, err := Parse(d[loc.Offset:])
		if err != nil {
			return batchEntry{}, fmt.Errorf("%w: offset %d: %v", ErrNoBatchObject, loc.Offset, err)
		}
		return batchEntry{o: o, valueLen: len(o.Value), size: n, local: true}, nil
	}
	o, valueLen, n, ok := st.heads[loc.Chunk].head(loc.Offset)
	if !ok {
		return batchEntry{}, fmt.Errorf("%w: no object at offset %d", ErrNoBatchObject, loc.Offset)
	}
	return batchEntry{o: o, valueLen: valueLen, size: n}, nil
}

// keyAt reads a key back for the index.
func (b *BatchData) keyAt(l Loc) []byte {
	e, err := b.entry(b.unpack(l))
	if err != nil {
		return nil
	}
	return e.o.Key
}

func (b *BatchData) pack(loc BatchLoc) Loc {
	return Loc{Chunk: loc.Slot*uint32(b.k) + uint32(loc.Chunk), Offset: uint32(loc.Offset)}
}

func (b *BatchData) unpack(l Loc) BatchLoc {
	return BatchLoc{Slot: l.Chunk / uint32(b.k), Chunk: int(l.Chunk % uint32(b.k)), Offset: int(l.Offset)}
}

// Commit makes the object at loc key's current batch object unless the
// batch index holds a version as new, and turns the object it replaces
// into garbage. It returns whether the object became current and the
// replaced object's version (0 if none).
func (b *BatchData) Commit(key []byte, loc BatchLoc) (bool, uint64, error) {
	e, err := b.entry(loc)
	if err != nil {
		return false, 0, err
	}
	prevLoc, had := b.Locate(key)
	if had && prevLoc == loc {
		return true, 0, nil // committed already: a batch's older write of the key committed it
	}
	var prev batchEntry
	if had {
		if prev, err = b.entry(prevLoc); err != nil {
			return false, 0, err
		}
		if prev.o.Version >= e.o.Version {
			b.garbage(loc) // e never becomes current
			return false, prev.o.Version, nil
		}
	}
	if err := b.index.Put(key, b.pack(loc)); err != nil {
		return false, 0, err
	}
	b.count(loc, e, 1)
	if had {
		b.count(prevLoc, prev, -1)
		b.garbage(prevLoc)
	}
	return true, prev.o.Version, nil
}

// garbage queues the dead mark of the object at loc, which no index
// entry will name again.
func (b *BatchData) garbage(loc BatchLoc) {
	if st := b.stripes[loc.Slot]; st != nil {
		b.marks.add(deadMark{shard: st.shard, serial: st.serial, chunk: loc.Chunk, offset: loc.Offset, c: st.c})
	}
}

// settle counts one write of the stripe in slot's round as committed or
// aborted (unsettled); abort says it was aborted, which makes its object
// at loc garbage unless an index entry names it (a write of the same
// round that committed it).
func (b *BatchData) settle(loc BatchLoc, abort bool) {
	st := b.stripes[loc.Slot]
	if st == nil {
		return
	}
	st.unsettled--
	if abort && !b.indexedAt(loc) {
		b.garbage(loc)
	}
}

// indexedAt says whether an index entry names the object at loc.
func (b *BatchData) indexedAt(loc BatchLoc) bool {
	e, err := b.entry(loc)
	if err != nil {
		return false
	}
	cur, ok := b.Locate(e.o.Key)
	return ok && cur == loc
}

// count adds (sign 1) or takes away (-1) the indexed object e at loc in
// the live figures.
func (b *BatchData) count(loc BatchLoc, e batchEntry, sign int) {
	st := b.stripes[loc.Slot]
	st.live += sign
	st.liveB += sign * e.size
	b.live += sign * e.size
	b.keys += sign * len(e.o.Key)
	b.values += sign * e.valueLen
}

// Delete turns key's batch object into garbage if its version is at most
// version, and reports whether it did and where the object is.
func (b *BatchData) Delete(key []byte, version uint64) (BatchLoc, bool, error) {
	loc, ok := b.Locate(key)
	if !ok {
		return BatchLoc{}, false, nil
	}
	e, err := b.entry(loc)
	if err != nil || e.o.Version > version {
		return BatchLoc{}, false, err
	}
	b.count(loc, e, -1)
	b.index.Delete(key)
	b.garbage(loc)
	return loc, true, nil
}

// Locate returns where key's batch object is.
func (b *BatchData) Locate(key []byte) (BatchLoc, bool) {
	l, ok := b.index.Get(key)
	if !ok {
		return BatchLoc{}, false
	}
	return b.unpack(l), true
}

// Get returns key's current batch object: whole, with local true, when
// its chunk is kept here; else its head (Value nil), to be read from the
// chunk's holder at loc.
func (b *BatchData) Get(key []byte) (o Object, loc BatchLoc, local bool, ok bool) {
	loc, ok = b.Locate(key)
	if !ok {
		return Object{}, BatchLoc{}, false, false
	}
	e, err := b.entry(loc)
	return e.o, loc, e.local, err == nil
}

// CheckKept checks key's batch object against its checksum where its
// chunk is kept here: nil for a sound object, or one kept elsewhere
// (fetchBatch checks what it reads).
func (b *BatchData) CheckKept(loc BatchLoc) error {
	if int(loc.Slot) >= len(b.stripes) || b.stripes[loc.Slot] == nil || loc.Chunk < 0 || loc.Chunk >= b.k {
		return nil
	}
	d := b.stripes[loc.Slot].kept[loc.Chunk]
	if d == nil || loc.Offset >= len(d) {
		return nil
	}
	_, _, err := ParseChecked(d[loc.Offset:])
	return err
}

// restoreKept writes obj, an object's bytes decoded from its stripe, over
// the kept copy at loc of the stripe serial, if the stripe is still there.
func (b *BatchData) restoreKept(loc BatchLoc, serial uint64, obj []byte) bool {
	d := b.keptChunk(loc.Slot, serial, loc.Chunk)
	if d == nil || loc.Offset+len(obj) > len(d) {
		return false
	}
	copy(d[loc.Offset:], obj)
	return true
}

// Serial returns the shard and serial of the stripe in slot.
func (b *BatchData) Serial(slot uint32) (shard uint16, serial uint64, ok bool) {
	if int(slot) >= len(b.stripes) || b.stripes[slot] == nil {
		return 0, 0, false
	}
	return b.stripes[slot].shard, b.stripes[slot].serial, true
}

// keptChunk returns data chunk q of the stripe in slot if it is still
// stripe serial and keeps the chunk here, else nil.
func (b *BatchData) keptChunk(slot uint32, serial uint64, q int) []byte {
	if int(slot) >= len(b.stripes) || b.stripes[slot] == nil || b.stripes[slot].serial != serial {
		return nil
	}
	return b.stripes[slot].kept[q]
}

// Lens returns the data chunks' lengths of the stripe in slot.
func (b *BatchData) Lens(slot uint32) []int {
	if int(slot) >= len(b.stripes) || b.stripes[slot] == nil {
		return nil
	}
	return b.stripes[slot].lens
}

// Free drops the stripe in slot, which must have no live object left,
// and returns its serial.
func (b *BatchData) Free(slot uint32) (uint64, error) {
	if int(slot) >= len(b.stripes) || b.stripes[slot] == nil {
		return 0, fmt.Errorf("%w: slot %d", ErrNoBatchObject, slot)
	}
	st := b.stripes[slot]
	if st.live > 0 || st.unsettled > 0 {
		return 0, fmt.Errorf("stripe: batch stripe %d still has %d live objects and %d writes unsettled", st.serial, st.live, st.unsettled)
	}
	for _, n := range st.lens {
		b.data -= n
	}
	b.stripes[slot] = nil
	b.free = append(b.free, slot)
	return st.serial, nil
}

// Victims returns up to n slots of stripes holding garbage, those with
// the fewest live objects first (BCStore §III-B: the fewest moves for a
// stripe freed), ties broken by most garbage.
func (b *BatchData) Victims(n int) []uint32 {
	var slots []uint32
	for s, st := range b.stripes {
		if st != nil && st.live < st.objects {
			slots = append(slots, uint32(s))
		}
	}
	slices.SortFunc(slots, func(x, y uint32) int {
		a, c := b.stripes[x], b.stripes[y]
		if a.live != c.live {
			return a.live - c.live
		}
		return (c.size() - c.liveB) - (a.size() - a.liveB)
	})
	return slots[:min(n, len(slots))]
}

func (st *batchStripe) size() int {
	n := 0
	for _, l := range st.lens {
		n += l
	}
	return n
}

// LiveIn calls fn for each live object of the stripe in slot with its
// location (whole where kept here, else its head).
func (b *BatchData) LiveIn(slot uint32, fn func(loc BatchLoc, o Object, local bool)) {
	if int(slot) >= len(b.stripes) || b.stripes[slot] == nil {
		return
	}
	st := b.stripes[slot]
	for q := range b.k {
		visit := func(off int, o Object, local bool) {
			loc := BatchLoc{Slot: slot, Chunk: q, Offset: off}
			if cur, ok := b.Locate(o.Key); ok && cur == loc {
				fn(loc, o, local)
			}
		}
		if d := st.kept[q]; d != nil {
			_ = Scan(d, func(off int, o Object) bool { visit(off, o, true); return true })
			continue
		}
		h := st.heads[q]
		for _, off := range h.offsets {
			if o, _, _, ok := h.head(int(off)); ok {
				visit(int(off), o, false)
			}
		}
	}
}

// BatchStats are a BatchData's figures.
type BatchStats struct {
	Keys           int // indexed keys
	KeyBytes       int
	ValueBytes     int
	Stripes        int
	DataBytes      int // of every stripe's data chunks, garbage included
	LiveBytes      int // of indexed objects
	KeptBytes      int // of data chunks kept here
	HeadBytes      int // of the heads of chunks kept elsewhere
	IndexBytes     int
	GarbageObjects int
}

// Stats returns b's figures.
func (b *BatchData) Stats() BatchStats {
	s := BatchStats{Keys: b.index.Len(), KeyBytes: b.keys, ValueBytes: b.values, DataBytes: b.data, LiveBytes: b.live, IndexBytes: b.index.Bytes()}
	for _, st := range b.stripes {
		if st == nil {
			continue
		}
		s.Stripes++
		s.GarbageObjects += st.objects - st.live
		for q, d := range st.kept {
			if d != nil {
				s.KeptBytes += len(d)
			} else if h := st.heads[q]; h != nil {
				s.HeadBytes += len(h.buf) + 12*len(h.offsets)
			}
		}
	}
	return s
}

// GarbageRatio is the share of the batch stripes' data bytes that no
// indexed object uses.
func (s BatchStats) GarbageRatio() float64 {
	if s.DataBytes == 0 {
		return 0
	}
	return float64(s.DataBytes-s.LiveBytes) / float64(s.DataBytes)
}

// Scan calls fn for each live object of the stripes in slots from on,
// whole stripes at a time until about count objects were visited, and
// returns the slot to resume from, or done. Objects are whole where kept
// here, else heads.
func (b *BatchData) Scan(from uint32, count int, fn func(o Object)) (next uint32, done bool) {
	seen := 0
	for slot := from; int(slot) < len(b.stripes); slot++ {
		if seen >= count {
			return slot, false
		}
		b.LiveIn(slot, func(_ BatchLoc, o Object, _ bool) { seen++; fn(o) })
	}
	return 0, true
}

// SampleExpired calls fn with a copy of each expired key of up to
// stripes stripes picked at random, and returns how many live objects
// with a TTL it saw (Data.SampleExpired's batch half).
func (b *BatchData) SampleExpired(now int64, stripes int, fn func(key []byte)) (withTTL int) {
	if len(b.stripes) == 0 {
		return 0
	}
	for range stripes {
		b.LiveIn(uint32(rand.IntN(len(b.stripes))), func(_ BatchLoc, o Object, _ bool) {
			if o.ExpireAt == 0 {
				return
			}
			withTTL++
			if o.ExpireAt <= now {
				fn(slices.Clone(o.Key))
			}
		})
	}
	return withTTL
}

// Len is how many keys b indexes.
func (b *BatchData) Len() int { return b.index.Len() }
