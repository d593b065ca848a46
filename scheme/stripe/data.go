package stripe

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Data errors.
var (
	// ErrNoList says the node holds no data position in any list of the
	// scheme, so it has nowhere to append.
	ErrNoList = errors.New("stripe: this node holds no data position of the scheme")
	// ErrTooLarge says an object does not fit in one chunk.
	ErrTooLarge = errors.New("stripe: the object is larger than a chunk")
	// ErrNoObject says a location holds no object written through Append.
	ErrNoObject = errors.New("stripe: no such object")
)

// Slot is a data position this node holds in one stripe list.
type Slot struct {
	List     uint16
	Position uint8
}

// Data is what a coordinator holds of one stripe scheme (decision 0003):
// the data chunks it appends its keys' objects to, in the lists where it
// holds a data position, and the index from key to object. Each change to
// a chunk comes back as Updates for the list's parity holders, numbered
// per chunk; each stays in the chunk's log until the caller reports that
// every holder applied it (Acked), so that one a holder missed can be sent
// again (Since). A Data is not safe for concurrent use.
type Data struct {
	size   int
	slots  []Slot
	next   int          // the slot that opens the next chunk
	chunks []*dataChunk // by chunk number; nil for a free number
	spare  []uint32     // free chunk numbers
	open   map[uint16]*dataChunk
	lists  map[uint16]*stripeNumbers
	byID   map[ChunkID]uint32
	index  *Index
	keys   int // logical bytes: keys and values of indexed objects
	values int
	// marks are the Stable marks to send: per chunk, the seq through which
	// every holder has acknowledged its updates, since last sent.
	marks map[ChunkID]uint32
	// inPlace are the in-place updates staged (Update) and not yet
	// committed or aborted, by the object's place.
	inPlace map[Loc]staged
	// gen counts the calls to Resendable; each logged update notes it.
	gen uint64
	// frags are the places of every fragment of each current object
	// stored as fragments, by key (fragment.go); staging those of objects
	// appended and not yet committed or aborted, by the first's place.
	frags   map[string][]Loc
	staging map[Loc][]Loc
	// detached are the objects removed while they failed their checks,
	// by chunk number: no index names them, and their bytes stay until
	// their chunk is restored (RemoveDetached).
	detached map[uint32][]Loc
}

// staged is an in-place update: the new object and the delta sent for it.
type staged struct {
	obj   Object
	delta []byte
}

// dataChunk is one data chunk and its protocol state.
type dataChunk struct {
	id       ChunkID
	chunk    *Chunk
	seq      uint32   // the last update's
	base     uint32   // the last Seal's or Free's seq
	inflight int      // appended objects neither committed nor aborted
	closing  bool     // takes no more appends; seals when quiet
	log      []logged // updates some holder may still need
}

type logged struct {
	u     Update
	acked bool
	// sending counts the rounds in flight that carry u (Sending).
	sending int32
	// gen is Data.gen when u was logged (Resendable).
	gen uint64
}

// stripeNumbers hands out stripe numbers at one data position, lowest free
// first, so that stripes stay dense. A freed number keeps its chunk's last
// seq, which the next chunk there continues, and the updates of its log
// not yet acknowledged.
type stripeNumbers struct {
	next uint32
	free []freeNumber // sorted by stripe
}

type freeNumber struct {
	stripe uint32
	seq    uint32 // the Free's
	log    []logged
}

// NewData returns an empty data store for chunkSize-byte chunks.
func NewData(chunkSize int) (*Data, error) {
	if err := ValidateChunkSize(chunkSize); err != nil {
		return nil, err
	}
	d := &Data{size: chunkSize, open: map[uint16]*dataChunk{}, lists: map[uint16]*stripeNumbers{}, byID: map[ChunkID]uint32{}}
	d.index = NewIndex(d.keyAt)
	return d, nil
}

// SetSlots sets the data positions new chunks may open at, and closes the
// open chunks of lists none of them is in (a retired shard's, say: its
// placement may lose a node that is never replaced there), so that no
// object is appended there again and the chunks can be freed once their
// objects move on. It returns the closed chunks' Seal (and Free) updates,
// for the parity holders.
func (d *Data) SetSlots(slots []Slot) []Update {
	d.slots = slices.Clone(slots)
	d.next = 0
	var ups []Update
	for list, c := range d.open {
		if !slices.ContainsFunc(slots, func(s Slot) bool { return s.List == list }) {
			ups = append(ups, d.close(c)...)
		}
	}
	return ups
}

// Lists returns the lists this store holds a chunk of, open or sealed,
// in ascending order.
func (d *Data) Lists() []uint16 {
	var out []uint16
	for id := range d.byID {
		if !slices.Contains(out, id.List) {
			out = append(out, id.List)
		}
	}
	slices.Sort(out)
	return out
}

// Adopted says whether slot's stripe numbers are known: the store has
// numbered chunks there, or Adopt told it what the holders have.
func (d *Data) Adopted(slot Slot) bool {
	_, ok := d.lists[slot.List]
	return ok
}

// Adopt takes over a data position that another node (or this one, before
// a wipe) held: the parity holders still number its stripes' updates, so
// each stripe number they know becomes free at the seq they hold, and new
// numbers start after them. A stripe number whose old chunk is still in
// parity (sealed or open there: a rebuild drops it) is not reused.
func (d *Data) Adopt(slot Slot, known []PositionState) {
	nums := &stripeNumbers{}
	for _, p := range known {
		nums.next = max(nums.next, p.Stripe+1)
		if p.Sealed || p.Open {
			continue
		}
		i, found := nums.find(p.Stripe)
		switch {
		case !found:
			nums.free = slices.Insert(nums.free, i, freeNumber{stripe: p.Stripe, seq: p.Through})
		case p.Through > nums.free[i].seq:
			nums.free[i].seq = p.Through
		}
	}
	for _, p := range known { // a stripe number some holder still has a chunk at is not free
		if i, found := nums.find(p.Stripe); found && (p.Sealed || p.Open) {
			nums.free = slices.Delete(nums.free, i, i+1)
		}
	}
	d.lists[slot.List] = nums
}

// Append writes o into an open chunk, or as fragments into several if it
// is larger than a chunk, and returns where (the first fragment's place).
// The object is in flight: Get does not see it until Commit, and Abort
// removes it.
func (d *Data) Append(o *Object) (Loc, []Update, error) {
	if o.EncodedLen() > d.size {
		return d.appendFragments(o)
	}
	return d.appendOne(o)
}

// appendOne writes o, which fits a chunk, into an open chunk.
func (d *Data) appendOne(o *Object) (Loc, []Update, error) {
	need := o.EncodedLen()
	if need > d.size {
		return Loc{}, nil, fmt.Errorf("%w: %d bytes, chunks of %d", ErrTooLarge, need, d.size)
	}
	c, ups, err := d.chunkFor(need)
	if err != nil {
		return Loc{}, nil, err
	}
	off, err := c.chunk.Append(o)
	if err != nil {
		return Loc{}, nil, err // cannot happen: chunkFor found the room
	}
	c.inflight++
	bytes := append([]byte(nil), c.chunk.Bytes()[off:off+need]...)
	ups = append(ups, d.record(c, Update{Kind: Delta, Offset: off, Bytes: bytes}))
	return Loc{Chunk: d.byID[c.id], Offset: uint32(off)}, ups, nil
}

// chunkFor returns the open chunk with the least free space that fits need
// bytes (MemEC §4.3), or opens one, closing the fullest open chunk of the
// slot it opens at.
func (d *Data) chunkFor(need int) (*dataChunk, []Update, error) {
	var best *dataChunk
	for _, c := range d.open {
		if free := c.chunk.Free(); free >= need && (best == nil || free < best.chunk.Free()) {
			best = c
		}
	}
	if best != nil {
		return best, nil, nil
	}
	if len(d.slots) == 0 {
		return nil, nil, ErrNoList
	}
	slot := d.slots[d.next%len(d.slots)]
	d.next++
	var ups []Update
	if old, ok := d.open[slot.List]; ok {
		ups = d.close(old)
	}
	return d.openChunk(slot), ups, nil
}

// openChunk starts a chunk at slot's lowest free stripe number.
func (d *Data) openChunk(slot Slot) *dataChunk {
	nums := d.lists[slot.List]
	if nums == nil {
		nums = &stripeNumbers{}
		d.lists[slot.List] = nums
	}
	id := ChunkID{List: slot.List, Position: slot.Position}
	chunk, _ := NewChunk(d.size) // the size was validated by NewData
	c := &dataChunk{id: id, chunk: chunk}
	if len(nums.free) > 0 {
		f := nums.free[0]
		id.Stripe, c.seq, c.base, c.log = f.stripe, f.seq, f.seq, f.log
		c.id = id
		nums.free = nums.free[1:]
	} else {
		c.id.Stripe = nums.next
		nums.next++
	}
	id = c.id
	num := d.number()
	d.chunks[num] = c
	d.byID[id] = num
	d.open[slot.List] = c
	return c
}

// number returns a free chunk number.
func (d *Data) number() uint32 {
	if n := len(d.spare); n > 0 {
		num := d.spare[n-1]
		d.spare = d.spare[:n-1]
		return num
	}
	d.chunks = append(d.chunks, nil)
	return uint32(len(d.chunks) - 1)
}

// close stops appends to c and seals it if no write into it is in flight.
func (d *Data) close(c *dataChunk) []Update {
	c.closing = true
	if d.open[c.id.List] == c {
		delete(d.open, c.id.List)
	}
	return d.settle(c)
}

// settle seals a closing chunk that has gone quiet, and frees a sealed
// chunk whose objects are all gone.
func (d *Data) settle(c *dataChunk) []Update {
	if c.inflight > 0 || !c.closing {
		return nil
	}
	var ups []Update
	if !c.chunk.Sealed() {
		c.chunk.Seal()
		ups = append(ups, d.record(c, Update{Kind: Seal, CRC: crc32.Checksum(c.chunk.Bytes(), castagnoli)}))
	}
	if c.chunk.Live() == 0 {
		ups = append(ups, d.record(c, Update{Kind: Free}))
		d.release(c)
	}
	return ups
}

// release forgets a freed chunk. Its stripe number is free again, with its
// last seq and the rest of its log, which Acked and Since still reach.
func (d *Data) release(c *dataChunk) {
	nums := d.lists[c.id.List]
	i, _ := nums.find(c.id.Stripe)
	nums.free = slices.Insert(nums.free, i, freeNumber{stripe: c.id.Stripe, seq: c.seq, log: c.log})
	num := d.byID[c.id]
	delete(d.byID, c.id)
	if d.open[c.id.List] == c {
		delete(d.open, c.id.List)
	}
	d.chunks[num] = nil
	d.spare = append(d.spare, num)
}

// record numbers u as c's next update and logs it.
func (d *Data) record(c *dataChunk, u Update) Update {
	c.seq++
	u.Chunk, u.Seq, u.Base = c.id, c.seq, c.base
	if u.Kind != Delta {
		c.base = c.seq
	}
	c.log = append(c.log, logged{u: u, gen: d.gen})
	return u
}

// Update stages an in-place update of key's current object to o, which
// must encode to the same length (MemEC §4.3: an update of the same size
// sends parity the delta, old ⊕ new). The delta goes to the parity holders
// now, but the chunk changes only at Commit, so reads see the old object
// until the write commits; Abort sends the delta again, which undoes it
// at the holders. ok is false, and nothing changes, when key has no
// current object or o's encoding has another length: the caller appends
// (and relocates) instead.
func (d *Data) Update(key []byte, o *Object) (loc Loc, ups []Update, ok bool) {
	loc, found := d.index.Get(key)
	if _, fragmented := d.frags[string(key)]; !found || fragmented {
		return Loc{}, nil, false
	}
	c, old, err := d.at(loc)
	switch {
	case err != nil, old.EncodedLen() != o.EncodedLen(), o.EncodedLen() > d.size:
		return Loc{}, nil, false
	case old.Version >= o.Version:
		return Loc{}, nil, false // Append's Commit lets the newer one win
	case c.closing && !c.chunk.Sealed():
		return Loc{}, nil, false // a chunk waiting to seal takes no more changes
	}
	if _, busy := d.inPlace[loc]; busy {
		return Loc{}, nil, false // cannot happen: a key's writes do not overlap
	}
	off := int(loc.Offset)
	delta := o.AppendTo(make([]byte, 0, o.EncodedLen()))
	xorInto(delta, c.chunk.Bytes()[off:off+len(delta)])
	if d.inPlace == nil {
		d.inPlace = map[Loc]staged{}
	}
	d.inPlace[loc] = staged{obj: Object{Key: slices.Clone(o.Key), Value: slices.Clone(o.Value), Version: o.Version, ExpireAt: o.ExpireAt}, delta: delta}
	c.inflight++
	return loc, d.recordDelta(c, off, delta, false), true
}

// recordDelta records the delta of an object at off in c as the updates
// that carry its changing runs (deltaRuns); clone copies their bytes.
func (d *Data) recordDelta(c *dataChunk, off int, delta []byte, clone bool) []Update {
	runs := deltaRuns(delta)
	ups := make([]Update, 0, len(runs))
	for _, r := range runs {
		b := delta[r[0]:r[1]]
		if clone {
			b = slices.Clone(b)
		}
		ups = append(ups, d.record(c, Update{Kind: Delta, Offset: off + r[0], Bytes: b}))
	}
	return ups
}

// deltaGap is the run of unchanged bytes worth a second update: an
// update's own fields cost about as much.
const deltaGap = 32

// deltaRuns cuts a delta (old ⊕ new) into the runs that change bytes:
// XOR with zero changes nothing, so an update of a hash field sends the
// header's version and the field's bytes, not the whole object. Runs
// fewer than deltaGap bytes apart are merged; a delta without a change
// is one byte, so an update is always sent.
func deltaRuns(delta []byte) [][2]int {
	var runs [][2]int
	for i := 0; i < len(delta); {
		if delta[i] == 0 {
			i++
			continue
		}
		end := i + 1
		for j := end; j < len(delta) && j < end+deltaGap; j++ {
			if delta[j] != 0 {
				end = j + 1
			}
		}
		runs = append(runs, [2]int{i, end})
		i = end
	}
	if len(runs) == 0 && len(delta) > 0 {
		runs = [][2]int{{0, 1}}
	}
	return runs
}

// Commit makes the object appended at loc key's current one unless the
// index holds a newer version, and removes the object it replaces; or
// applies the in-place update staged at loc (Update). It returns whether
// the object became current, the replaced object's version (0 if none),
// and the updates to send.
func (d *Data) Commit(key []byte, loc Loc) (bool, uint64, []Update, error) {
	if st, ok := d.inPlace[loc]; ok {
		return d.commitInPlace(loc, st)
	}
	if locs, ok := d.staging[loc]; ok {
		return d.commitFragments(key, locs)
	}
	c, obj, err := d.at(loc)
	if err != nil {
		return false, 0, nil, err
	}
	c.inflight--
	prevLoc, had := d.index.Get(key)
	var prev Object
	if had {
		prev, _ = d.object(key, prevLoc)
		if prev.Version >= obj.Version {
			ups, err := d.remove(c, loc)
			return false, prev.Version, ups, err
		}
	}
	if err := d.index.Put(key, loc); err != nil {
		c.inflight++ // as before: the caller may Abort
		return false, 0, nil, err
	}
	d.keys += len(obj.Key)
	d.values += len(obj.Value)
	var ups []Update
	if had {
		d.keys -= len(prev.Key)
		d.values -= len(prev.Value)
		if ups, err = d.removeCurrent(key, prevLoc); err != nil {
			return true, prev.Version, nil, err
		}
	}
	return true, prev.Version, append(ups, d.settle(c)...), nil
}

// commitInPlace writes the staged object st over the one at loc.
func (d *Data) commitInPlace(loc Loc, st staged) (bool, uint64, []Update, error) {
	delete(d.inPlace, loc)
	c, prev, err := d.at(loc)
	if err != nil {
		return false, 0, nil, err
	}
	c.inflight--
	d.values += len(st.obj.Value) - len(prev.Value)
	if _, err := c.chunk.Replace(int(loc.Offset), &st.obj); err != nil {
		return false, 0, nil, err // cannot happen: Update checked the size
	}
	return true, prev.Version, d.settle(c), nil
}

// Abort removes an appended object that will not be committed, or undoes
// an in-place update at the parity holders (the same delta again).
func (d *Data) Abort(loc Loc) ([]Update, error) {
	if locs, ok := d.staging[loc]; ok {
		return d.abortFragments(locs)
	}
	c, _, err := d.at(loc)
	if err != nil {
		return nil, err
	}
	c.inflight--
	if st, ok := d.inPlace[loc]; ok {
		delete(d.inPlace, loc)
		ups := d.recordDelta(c, int(loc.Offset), st.delta, true)
		return append(ups, d.settle(c)...), nil
	}
	return d.remove(c, loc)
}

// Delete removes key's object if its version is at most version, and
// reports whether it did.
func (d *Data) Delete(key []byte, version uint64) (bool, []Update, error) {
	loc, ok := d.index.Get(key)
	if !ok {
		return false, nil, nil
	}
	obj, err := d.object(key, loc)
	if err != nil || obj.Version > version {
		return false, nil, err
	}
	d.keys -= len(obj.Key)
	d.values -= len(obj.Value)
	d.index.Delete(key)
	ups, err := d.removeCurrent(key, loc)
	return err == nil, ups, err
}

// remove zeroes the object at loc in c. An object failing its check is
// detached instead (corrupt.go): its delta would carry its damage into
// parity.
func (d *Data) remove(c *dataChunk, loc Loc) ([]Update, error) {
	if _, _, err := c.chunk.AtChecked(int(loc.Offset)); err != nil {
		d.detach(loc)
		return nil, nil
	}
	ch, err := c.chunk.Delete(int(loc.Offset))
	if err != nil {
		return nil, err
	}
	ups := []Update{d.record(c, Update{Kind: Delta, Offset: ch.Offset, Bytes: ch.Delta})}
	return append(ups, d.settle(c)...), nil
}

// at returns the chunk and object at loc.
func (d *Data) at(loc Loc) (*dataChunk, Object, error) {
	if int(loc.Chunk) >= len(d.chunks) || d.chunks[loc.Chunk] == nil {
		return nil, Object{}, fmt.Errorf("%w: chunk number %d", ErrNoObject, loc.Chunk)
	}
	c := d.chunks[loc.Chunk]
	o, _, err := c.chunk.At(int(loc.Offset))
	if err != nil {
		return nil, Object{}, fmt.Errorf("%w: %s offset %d: %v", ErrNoObject, c.id, loc.Offset, err)
	}
	return c, o, nil
}

// keyAt reads the key back for the index.
func (d *Data) keyAt(loc Loc) []byte {
	_, o, err := d.at(loc)
	if err != nil {
		return nil
	}
	return o.Key
}

// Scan calls fn for each current object in the chunks numbered from on,
// whole chunks at a time until about count objects were visited, and
// returns the chunk number to resume from, or done. Objects do not move
// between chunks except when rewritten, so a scan sees every key that is
// neither written nor deleted while it runs.
func (d *Data) Scan(from uint32, count int, fn func(o Object)) (next uint32, done bool) {
	seen := 0
	for num := from; int(num) < len(d.chunks); num++ {
		if seen >= count {
			return num, false
		}
		c := d.chunks[num]
		if c == nil {
			continue
		}
		_ = c.chunk.Objects(func(off int, o Object) bool {
			if loc, ok := d.index.Get(o.Key); ok && loc == (Loc{Chunk: num, Offset: uint32(off)}) {
				fn(o)
				seen++
			}
			return true
		})
	}
	return 0, true
}

// Len is how many keys the store indexes.
func (d *Data) Len() int { return d.index.Len() }

// Get returns key's current object. Its Key and Value alias the chunk and
// are valid until the next call that changes the store (a fragmented
// object's Value is a new buffer, assembled from its fragments).
func (d *Data) Get(key []byte) (Object, bool) {
	loc, ok := d.index.Get(key)
	if !ok {
		return Object{}, false
	}
	o, err := d.object(key, loc)
	return o, err == nil
}

// find returns where stripe is, or would be, in the free list.
func (nums *stripeNumbers) find(stripe uint32) (int, bool) {
	return slices.BinarySearchFunc(nums.free, stripe, func(f freeNumber, s uint32) int { return int(f.stripe) - int(s) })
}

// logOf returns the log of chunk id, whether in use or freed, and the
// chunk's last seq.
func (d *Data) logOf(id ChunkID) (*[]logged, uint32) {
	if num, ok := d.byID[id]; ok {
		return &d.chunks[num].log, d.chunks[num].seq
	}
	if nums := d.lists[id.List]; nums != nil {
		if i, ok := nums.find(id.Stripe); ok {
			return &nums.free[i].log, nums.free[i].seq
		}
	}
	return nil, 0
}

// Acked records that every parity holder applied u (by chunk and seq), so
// the chunk's log need not keep it. Once every update through some seq is
// acknowledged, the holders may drop their backups of them: a Stable mark
// for the chunk is queued (TakeMarks).
func (d *Data) Acked(id ChunkID, seq uint32) {
	log, last := d.logOf(id)
	if log == nil {
		return
	}
	for i := range *log {
		if (*log)[i].u.Seq == seq {
			(*log)[i].acked = true
		}
	}
	trimmed := false
	for len(*log) > 0 && (*log)[0].acked {
		*log, trimmed = (*log)[1:], true
	}
	stable := last
	if len(*log) == 0 {
		*log = nil
	} else {
		stable = (*log)[0].u.Seq - 1
	}
	if trimmed && stable > d.marks[id] {
		if d.marks == nil {
			d.marks = map[ChunkID]uint32{}
		}
		d.marks[id] = stable
	}
}

// TakeMarks returns the queued Stable marks of chunks in lists (every
// list if nil), one per chunk, and forgets them; PutMarks queues again
// those that could not be sent.
func (d *Data) TakeMarks(lists []uint16) []Update {
	var out []Update
	for id, seq := range d.marks {
		if lists == nil || slices.Contains(lists, id.List) {
			out = append(out, Update{Chunk: id, Seq: seq, Kind: Stable})
			delete(d.marks, id)
		}
	}
	return out
}

// PutMarks queues marks again (their send failed).
func (d *Data) PutMarks(marks []Update) {
	for _, u := range marks {
		if d.marks == nil {
			d.marks = map[ChunkID]uint32{}
		}
		d.marks[u.Chunk] = max(d.marks[u.Chunk], u.Seq)
	}
}

// HasMarks says whether Stable marks are waiting to be sent.
func (d *Data) HasMarks() bool { return len(d.marks) > 0 }

// Since returns chunk id's logged updates after seq: what a holder that
// has applied every update through seq may lack. complete is false when
// some of them are no longer logged (every holder then known acknowledged
// them): the holder must be resynced (Parity.Resync) instead.
func (d *Data) Since(id ChunkID, seq uint32) (ups []Update, complete bool) {
	log, last := d.logOf(id)
	if log == nil {
		return nil, false
	}
	defer func() {
		complete = complete && (len(ups) == 0 && seq >= last || len(ups) > 0 && ups[len(ups)-1].Seq == last)
	}()
	next := seq + 1
	for _, l := range *log {
		if l.u.Seq < next {
			continue
		}
		if l.u.Seq != next {
			return nil, false
		}
		ups = append(ups, l.u)
		next++
	}
	return ups, true
}

// CatchUp returns what brings a holder that has applied chunk id's
// updates through seq up to date: the logged updates after seq if the log
// has them all, else the whole chunk (Resync); nil if the store does not
// hold the chunk.
func (d *Data) CatchUp(id ChunkID, seq uint32) []Update {
	if more, complete := d.Since(id, seq); complete {
		return more
	}
	if whole, ok := d.Resync(id); ok {
		return []Update{whole}
	}
	return nil
}

// Resync returns the update that brings a holder lacking unlogged
// updates of chunk id up to date: the whole chunk as of its last seq, as
// the holders have it (asSent).
func (d *Data) Resync(id ChunkID) (Update, bool) {
	num, ok := d.byID[id]
	if !ok {
		return Update{}, false
	}
	c := d.chunks[num]
	return Update{Chunk: id, Seq: c.seq, Base: c.base, Kind: Resync, Bytes: d.asSent(num), Sealed: c.chunk.Sealed()}, true
}

// asSent returns a copy of chunk number num's bytes as a holder has them
// once it applied every update recorded so far: with the deltas of the
// in-place updates staged in it (Update), which the chunk itself takes
// only at commit. The chunk's seq counts those deltas, so a Resync or a
// decode that used the committed bytes at that seq would leave the holder
// one delta short: apart from the chunk for good after the commit, and
// after an abort, whose undoing delta it would then apply to bytes that
// never had it.
func (d *Data) asSent(num uint32) []byte {
	b := slices.Clone(d.chunks[num].chunk.Bytes())
	for loc, st := range d.inPlace {
		if loc.Chunk == num {
			xorInto(b[loc.Offset:], st.delta)
		}
	}
	return b
}

// Sending counts ups as carried by one more round in flight (delta 1) or
// by one fewer (delta −1). Resendable leaves the updates in flight out:
// the rounds carrying them answer for them, and sending them again
// meanwhile only doubled the traffic of a huge object's 131,072 updates
// (issue 23).
func (d *Data) Sending(ups []Update, delta int32) {
	for _, u := range ups {
		if u.Kind == Stable || u.Kind == Resync {
			continue // never logged as such
		}
		log, _ := d.logOf(u.Chunk)
		if log == nil {
			continue
		}
		for i := range *log {
			if (*log)[i].u.Seq == u.Seq {
				(*log)[i].sending += delta
				break
			}
		}
	}
}

// Unacked returns every logged update not yet acknowledged by every
// holder, in seq order per chunk.
func (d *Data) Unacked() []Update {
	return d.unacked(func(logged) bool { return true })
}

// Resendable returns the unacknowledged updates to send again: those
// logged before the previous call to Resendable, which no round in flight
// carries (Sending). A periodic resend calls it, so that an update whose
// frame was lost goes again, while one that its writer has only just
// logged, or that is on its way, does not go twice.
func (d *Data) Resendable() []Update {
	before := d.gen
	d.gen++
	return d.unacked(func(l logged) bool { return l.gen < before && l.sending <= 0 })
}

// unacked returns the unacknowledged logged updates keep accepts.
func (d *Data) unacked(keep func(logged) bool) []Update {
	var out []Update
	add := func(log []logged) {
		for _, l := range log {
			if !l.acked && keep(l) {
				out = append(out, l.u)
			}
		}
	}
	for _, c := range d.chunks {
		if c != nil {
			add(c.log)
		}
	}
	for _, nums := range d.lists {
		for _, f := range nums.free {
			add(f.log)
		}
	}
	return out
}

// Locate returns the chunk and offset of key's current object.
func (d *Data) Locate(key []byte) (ChunkID, int, bool) {
	loc, ok := d.index.Get(key)
	if !ok || int(loc.Chunk) >= len(d.chunks) || d.chunks[loc.Chunk] == nil {
		return ChunkID{}, 0, false
	}
	return d.chunks[loc.Chunk].id, int(loc.Offset), true
}

// Read returns a copy of chunk id's bytes as its holders have them at the
// seq of its last update (asSent), whether it is sealed, and that seq; ok
// is false if the store does not hold it.
func (d *Data) Read(id ChunkID) (b []byte, sealed bool, seq uint32, ok bool) {
	num, ok := d.byID[id]
	if !ok {
		return nil, false, 0, false
	}
	c := d.chunks[num]
	return d.asSent(num), c.chunk.Sealed(), c.seq, true
}

// Chunks calls fn with each chunk's id and bytes, which fn must not keep
// or modify.
func (d *Data) Chunks(fn func(id ChunkID, b []byte, sealed bool)) {
	for _, c := range d.chunks {
		if c != nil {
			fn(c.id, c.chunk.Bytes(), c.chunk.Sealed())
		}
	}
}

// ChunksFrom lists up to n of the chunks this store holds at data
// position pos of list, stripe numbers from on, in stripe order: a
// recovery reads a lost position's stripe-mates a page at a time.
func (d *Data) ChunksFrom(list uint16, pos uint8, from uint32, n int) []ChunkID {
	var ids []ChunkID
	for id := range d.byID {
		if id.List == list && id.Position == pos && id.Stripe >= from {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b ChunkID) int { return cmp.Compare(a.Stripe, b.Stripe) })
	return ids[:min(n, len(ids))]
}

// DataStats is a data store's memory.
type DataStats struct {
	Keys         int
	LogicalBytes int // keys and values of current objects
	ChunkBytes   int // data chunks, whole
	LiveBytes    int // encoded current and in-flight objects
	GarbageBytes int // appended bytes no object holds any more
	IndexBytes   int
	OpenChunks   int
}

// Stats returns the store's memory use.
func (d *Data) Stats() DataStats {
	s := DataStats{Keys: d.index.Len(), LogicalBytes: d.keys + d.values, IndexBytes: d.index.Bytes(), OpenChunks: len(d.open)}
	for _, c := range d.chunks {
		if c != nil {
			s.ChunkBytes += d.size
			s.LiveBytes += c.chunk.Live()
			s.GarbageBytes += c.chunk.Garbage()
		}
	}
	return s
}
