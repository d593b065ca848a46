package stripe

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/wire"
)

// This file is the stripe:K+M data path (decision 0003). A coordinator
// keeps its stripe keys' objects in chunks (Data) instead of its
// primary store; each change to a chunk goes to the M parity holders of the
// chunk's list as numbered updates (msgStripe), which they fold into
// parity (Parity). List g is the first K+M positions of shard g's
// placement.

// Engine is this node's part of every stripe scheme: as the coordinator
// of keys (their data chunks) and as a parity holder, with the chunks
// whose decode recovery deferred (pending.go). The node owns one and
// reaches it through the bound schemes (New) and its peer handlers.
type Engine struct {
	host Host
	cfg  Config
	log  *slog.Logger

	any atomic.Bool // set once a stripe scheme is used: reads skip all of this before
	mu  sync.Mutex  // serialises creating and clearing
	// list holds every scheme, sorted by id, replaced whole on a change:
	// reads and commits walk it without a lock or an allocation.
	list atomic.Pointer[[]*schemeState]

	pending pendingChunks
	pieces  batchPieces // other coordinators' batch stripes held here
	stats   Stats
}

// Config is what an Engine needs of the node's configuration.
type Config struct {
	// PeerTimeout bounds the requests the engine sends on its own (a
	// background group of updates, a resync).
	PeerTimeout time.Duration
}

// Stats are an Engine's counters (INFO).
type Stats struct {
	// ChunksRestored counts lost chunks decoded after their shard was
	// served (pending.go).
	ChunksRestored atomic.Int64
	// PositionsLost counts lost data positions whose chunks recovery or
	// the rebuild gave up, beyond their scheme's tolerance.
	PositionsLost atomic.Int64
	// ChunksCopied counts lost sealed chunks read whole from a hybrid
	// list's replica holder; ChunksDecoded those decoded from their
	// stripes (recovery, restores and the rebuild alike).
	ChunksCopied, ChunksDecoded atomic.Int64
	// BatchRounds counts the batch rounds written, BatchObjects the
	// objects they stored and BatchDeduplicated the writes whose object a
	// newer write of the key in the same round replaced (decision 0009).
	BatchRounds, BatchObjects, BatchDeduplicated atomic.Int64
	// RebuiltBytes counts the bytes this node sent to re-protect chunks
	// after a failure: lost chunks taken out of parity, updates resent to
	// a parity holder being resynced, batch pieces put again.
	RebuiltBytes atomic.Int64
	// Corruption (repair.go): CorruptChunks counts this node's data
	// chunks found with an object failing its checksum, CorruptBatch the
	// batch objects found so (kept here or read from a holder); Repaired
	// counts those restored from their stripes, Unrepaired those no copy
	// restored (their reads answer -CORRUPT).
	// The scrub also counts the holders' copies (CorruptCopies) and
	// parity chunks (CorruptParity) it found differing from their sound
	// chunks.
	CorruptChunks, CorruptBatch, CorruptCopies, CorruptParity atomic.Int64
	Repaired, Unrepaired                                      atomic.Int64
}

// NewEngine returns an engine serving host's stripe schemes.
func NewEngine(host Host, cfg Config, log *slog.Logger) *Engine {
	return &Engine{host: host, cfg: cfg, log: log}
}

// Stats returns the engine's counters.
func (eng *Engine) Stats() *Stats { return &eng.stats }

// InUse says whether a stripe scheme has been used on this node: before
// that, reads and scans skip the engine.
func (eng *Engine) InUse() bool { return eng.any.Load() }

// Lists returns the lists this node holds data chunks of, in any scheme,
// in ascending order: a retired shard's list in it still has objects here
// to move out (Evacuation).
func (eng *Engine) Lists() []uint16 {
	var out []uint16
	for _, s := range eng.all() {
		s.mu.Lock()
		out = append(out, s.data.Lists()...)
		s.mu.Unlock()
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// schemeState is one stripe scheme on this node.
type schemeState struct {
	id     uint16
	spec   scheme.Spec
	mu     sync.Mutex
	groups sendGroups
	data   *Data
	parity *Parity
	batch  *batchMode // nil for a scheme that writes in place only
	epoch  uint64     // of the map data's slots were computed from
	// adoptedAt is the epoch of a map all of whose data positions for this
	// node were adopted (adoptSlots), or 0.
	adoptedAt uint64
	// finishing is set while finishDetached runs in the background.
	finishing atomic.Bool
}

// scheme returns this node's state for stripe scheme entry, creating it.
func (eng *Engine) scheme(entry cluster.SchemeEntry) (*schemeState, error) {
	if s := eng.byID(entry.ID); s != nil {
		return s, nil
	}
	data, err := NewData(entry.Spec.ChunkSize())
	if err != nil {
		return nil, err
	}
	parity, err := holderParity(entry.Spec)
	if err != nil {
		return nil, err
	}
	batch, err := newBatchMode(entry.Spec)
	if err != nil {
		return nil, err
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	if s := eng.byID(entry.ID); s != nil {
		return s, nil
	}
	s := &schemeState{id: entry.ID, spec: entry.Spec, data: data, parity: parity, batch: batch}
	list := append(slices.Clone(eng.all()), s)
	slices.SortFunc(list, func(a, b *schemeState) int { return int(a.id) - int(b.id) })
	eng.list.Store(&list)
	eng.any.Store(true)
	return s, nil
}

// byID returns the scheme with id, or nil.
func (eng *Engine) byID(id uint16) *schemeState {
	for _, s := range eng.all() {
		if s.id == id {
			return s
		}
	}
	return nil
}

// all returns every stripe scheme this node has state for, sorted by id.
// The caller must not modify the slice.
func (eng *Engine) all() []*schemeState {
	if l := eng.list.Load(); l != nil {
		return *l
	}
	return nil
}

// ClearPending forgets every pending chunk once the restore in flight,
// if any, is done, and calls then (FLUSHALL, a wipe: the node's own
// clearing, which may take the locks a restore takes after this one)
// while no other restore can start.
func (eng *Engine) ClearPending(then func()) {
	eng.pending.work.Lock()
	defer eng.pending.work.Unlock()
	eng.pending.clearLocked()
	then()
}

// DropSchemes drops every stripe scheme's state (FLUSHALL, a wipe).
func (eng *Engine) DropSchemes() {
	eng.mu.Lock()
	eng.list.Store(nil)
	eng.pieces.clear()
	eng.mu.Unlock()
}

// refreshSlots points the scheme's appends at the data positions this
// node holds as the placement's own node in m (decision 0003) that it has
// adopted (adoptSlots), and returns the Seal and Free updates of the open
// chunks it closes elsewhere (Data.SetSlots). The caller holds s.mu.
func (s *schemeState) refreshSlots(m *cluster.Map, self cluster.NodeID) []Update {
	if s.epoch == m.Epoch {
		return nil
	}
	var slots []Slot
	for _, slot := range ownSlots(m, s.spec, self) {
		if s.data.Adopted(slot) {
			slots = append(slots, slot)
		}
	}
	s.epoch = m.Epoch
	return s.data.SetSlots(slots)
}

// ownSlots lists the data positions self may append at in m: those it
// holds as the placement's own node, in shards that are not retired. A
// retired shard's placement is neither rebuilt nor kept when a node
// leaves (cluster.RemoveNode), so its lists take no new objects, and
// compaction moves their objects out (retiredVictims).
func ownSlots(m *cluster.Map, spec scheme.Spec, self cluster.NodeID) []Slot {
	var slots []Slot
	for g := range m.Shards {
		sh := &m.Shards[g]
		if sh.Retired {
			continue
		}
		for p := 0; p < spec.K && p < len(sh.Placement); p++ {
			if sh.Placement[p] == self && !m.StoodIn(sh, p) {
				slots = append(slots, Slot{List: uint16(g), Position: uint8(p)})
			}
		}
	}
	return slots
}

// parityHolders returns the nodes holding parity positions 0..M−1 of
// list g in m.
func parityHolders(m *cluster.Map, spec scheme.Spec, g uint16) ([]cluster.Node, error) {
	holders, err := listHolders(m, spec, g)
	if err != nil {
		return nil, err
	}
	return holders[spec.K:], nil
}

// stage stages w's object in scheme entry: in place of the key's
// current object there if both encode to the same length (the parity
// holders get the delta; the chunk changes at commit), else appended to an
// open chunk (the old object is removed at commit). It sets w.Place to the
// object's place and the updates its parity holders must acknowledge
// before the write commits. A relocation (compaction) always appends.
func (eng *Engine) stage(ctx context.Context, entry cluster.SchemeEntry, w *kind.Staged) error {
	s, err := eng.scheme(entry)
	if err != nil {
		return err
	}
	if err := eng.adoptSlots(ctx, s); err != nil {
		return err
	}
	// The write's deltas are computed from the object it replaces: a
	// corrupt one is restored first, else its damage would go into
	// parity with them. (Unrepaired, the write goes on: it replaces the
	// damaged object, which repairKey has logged.)
	_ = eng.repairKey(ctx, s, w.Key)
	obj := Object{Key: w.Key, Value: w.Value, Version: w.Version, ExpireAt: w.ExpireAt}
	if s.batches(w, &obj) {
		return eng.stageBatch(s, w, &obj)
	}
	s.mu.Lock()
	closed := s.refreshSlots(eng.host.Map(), eng.host.Self())
	loc, ups, inPlace := Loc{}, []Update(nil), false
	if !w.Relocate && s.batch == nil { // @auto's writes of a key may overlap: they append
		loc, ups, inPlace = s.data.Update(w.Key, &obj)
	}
	if !inPlace {
		loc, ups, err = s.data.Append(&obj)
	}
	ups = append(closed, ups...)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("stripe: scheme %s: %w", entry.Name(), err)
	}
	w.Place = &place{s: s, loc: loc, ups: ups}
	return nil
}

// OnUpdates applies a batch of chunk updates as a parity holder. A batch
// that does not decode changes nothing; an update the holder refuses is
// reported in its slot and fails only its own write.
func (eng *Engine) OnUpdates(b []byte) ([]byte, error) {
	id, ups, err := decodeUpdates(b)
	if err != nil {
		return nil, err
	}
	entry, ok := eng.host.Map().SchemeByID(id)
	if !ok || !packedKind(entry.Spec.Kind) {
		return nil, fmt.Errorf("stripe: scheme id %d is not a packed scheme", id)
	}
	s, err := eng.scheme(entry)
	if err != nil {
		return nil, err
	}
	acks := make([]holderAck, len(ups))
	m := eng.host.Map()
	s.mu.Lock()
	for i, u := range ups {
		eng.takeParityPosition(m, s, u)
		out, through, err := s.parity.Apply(u.J, u.U)
		acks[i] = holderAck{Outcome: out, Through: through}
		if err != nil {
			acks[i].Refusal = err.Error()
		}
	}
	s.mu.Unlock()
	return encodeList(acks), nil
}

// takeParityPosition makes this node parity position u.J of u's list if
// it keeps the update's stripe as another position and m says the list's
// holder u.J is this node: a stand-in moved (Parity.Reassign). A
// sender with another map than this node's is refused as before, by
// Apply. The caller holds s.mu.
func (eng *Engine) takeParityPosition(m *cluster.Map, s *schemeState, u holderUpdate) {
	held, ok := s.parity.HeldAs(u.U.Chunk.List, u.U.Chunk.Stripe)
	if !ok || held == u.J {
		return
	}
	holders, err := parityHolders(m, s.spec, u.U.Chunk.List)
	if err != nil || u.J < 0 || u.J >= len(holders) || holders[u.J].ID != eng.host.Self() {
		return
	}
	dropped := s.parity.Reassign(u.U.Chunk.List, u.J)
	eng.log.Info("this node moved to another parity position of a stripe list; its old parity there is dropped",
		"scheme", s.spec, "list", u.U.Chunk.List, "from", held, "to", u.J, "stripes", dropped)
}

// usage reports the scheme's memory on this node, its key count and its
// keys' logical bytes; pieces holds other coordinators' batch pieces.
func (s *schemeState) usage(pieces *batchPieces) (Usage, int64, int64) {
	s.mu.Lock()
	d, p := s.data.Stats(), s.parity.Stats()
	var b BatchStats
	if s.batch != nil {
		b = s.batch.data.Stats()
	}
	s.mu.Unlock()
	u := Usage{Chunks: int64(d.ChunkBytes), Parity: int64(p.ParityBytes), Buffered: int64(p.ImageBytes), Copies: int64(p.CopyBytes), Backups: int64(p.BackupBytes),
		Manifests: int64(p.ManifestBytes), Index: int64(d.IndexBytes), Objects: int64(d.LiveBytes), Garbage: int64(d.GarbageBytes)}
	u.addBatch(s.spec, b, pieces.held(s.id))
	if s.batch != nil && (s.batch.auto == nil || s.batch.auto.batchingNow()) {
		u.BatchingNodes = 1
	}
	return u, int64(d.Keys + b.Keys), int64(d.LogicalBytes + b.KeyBytes + b.ValueBytes)
}

// Keys counts the keys this node coordinates in stripe schemes.
func (eng *Engine) Keys() int {
	total := 0
	for _, s := range eng.all() {
		s.mu.Lock()
		total += s.data.Len()
		if s.batch != nil {
			total += s.batch.data.Len()
		}
		s.mu.Unlock()
	}
	return total
}

// OnRead serves a data chunk this node coordinates, or a parity chunk
// or open chunk's copy it holds as a parity holder.
func (eng *Engine) OnRead(b []byte) ([]byte, error) {
	r, err := decodeReadReq(b)
	if err != nil {
		return nil, err
	}
	entry, ok := eng.host.Map().SchemeByID(r.Scheme)
	if !ok || !packedKind(entry.Spec.Kind) {
		return nil, fmt.Errorf("stripe: scheme id %d is not a packed scheme", r.Scheme)
	}
	s, err := eng.scheme(entry)
	if err != nil {
		return nil, err
	}
	switch r.What {
	case readPositions:
		s.mu.Lock()
		ps := s.parity.Positions(r.Chunk.List, r.Chunk.Position)
		s.mu.Unlock()
		return encodePositions(ps), nil
	case readBackups:
		s.mu.Lock()
		var ups []holderUpdate
		for _, u := range s.parity.PositionBackups(r.Chunk.List, r.Chunk.Position) {
			ups = append(ups, holderUpdate{U: u})
		}
		b := encodeList(ups)
		s.mu.Unlock()
		return b, nil
	case readDataRange, readParityRange, readCopyRange:
		return encodeList(s.chunkRange(r)), nil
	}
	var c chunkReply
	s.mu.Lock()
	switch r.What {
	case readDataChunk:
		c.Bytes, c.Sealed, c.Seq, c.Found = s.data.Read(r.Chunk)
	case readParityChunk:
		p, j := s.parity.ParityChunk(r.Chunk.List, r.Chunk.Stripe)
		c.Found, c.J, c.Bytes = p != nil, uint8(j), slices.Clone(p)
		c.Through, c.SealedAt = s.parity.StripeState(r.Chunk.List, r.Chunk.Stripe)
	case readImage:
		img := s.parity.Image(r.Chunk)
		c.Found, c.Bytes, c.Seq = img != nil, slices.Clone(img), s.parity.Applied(r.Chunk)
	}
	s.mu.Unlock()
	return c.encode(nil), nil
}

// chunkRange answers a range read: a page of this node's data chunks at
// a position, of its parity chunks of a list, or of its copies of a
// position's sealed chunks, from a stripe number on.
func (s *schemeState) chunkRange(r readReq) []rangedChunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rangedChunk
	if r.What == readCopyRange {
		for _, st := range s.parity.CopiesFrom(r.Chunk.List, r.Chunk.Position, r.Chunk.Stripe, rangePage) {
			id := ChunkID{List: r.Chunk.List, Position: r.Chunk.Position, Stripe: st}
			c := chunkReply{Found: true, Sealed: true, Bytes: slices.Clone(s.parity.Image(id)), Seq: s.parity.Applied(id)}
			out = append(out, rangedChunk{Stripe: st, Chunk: c})
		}
		return out
	}
	if r.What == readDataRange {
		for _, id := range s.data.ChunksFrom(r.Chunk.List, r.Chunk.Position, r.Chunk.Stripe, rangePage) {
			var c chunkReply
			c.Bytes, c.Sealed, c.Seq, c.Found = s.data.Read(id)
			out = append(out, rangedChunk{Stripe: id.Stripe, Chunk: c})
		}
		return out
	}
	for _, st := range s.parity.StripesFrom(r.Chunk.List, r.Chunk.Stripe, rangePage) {
		p, j := s.parity.ParityChunk(r.Chunk.List, st)
		c := chunkReply{Found: true, J: uint8(j), Bytes: slices.Clone(p)}
		c.Through, c.SealedAt = s.parity.StripeState(r.Chunk.List, st)
		out = append(out, rangedChunk{Stripe: st, Chunk: c})
	}
	return out
}

// readChunkRange reads the chunks of a range from node, a page at a
// time: what is readDataRange or readParityRange, at chunk's list and
// position, from stripe number from on, until a page reaches stripe to or
// the range ends. It returns them by stripe number.
func (eng *Engine) readChunkRange(ctx context.Context, node cluster.Node, scheme uint16, what uint8, list uint16, pos uint8, from, to uint32) (map[uint32]chunkReply, error) {
	out := map[uint32]chunkReply{}
	for {
		b, err := eng.readRaw(ctx, node, readReq{Scheme: scheme, What: what, Chunk: ChunkID{List: list, Position: pos, Stripe: from}})
		if err != nil {
			return nil, err
		}
		page, err := wire.DecodeList(b, readRangedChunk)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			out[r.Stripe] = r.Chunk
			from = r.Stripe + 1
		}
		if len(page) < rangePage || from > to {
			return out, nil
		}
	}
}

// readChunk asks node for a chunk.
func (eng *Engine) readChunk(ctx context.Context, node cluster.Node, r readReq) (chunkReply, error) {
	if node.ID == eng.host.Self() {
		b, err := eng.OnRead(r.encode(nil))
		if err != nil {
			return chunkReply{}, err
		}
		return decodeChunkReply(b)
	}
	b, err := eng.host.Call(ctx, node, MsgRead, r.encode(nil))
	if err != nil {
		return chunkReply{}, err
	}
	return decodeChunkReply(b)
}

// Scan visits about count keys of the stripe schemes' chunks from cursor
// on (0 to start), expired ones included, and returns the cursor to go on
// from, below 1<<52, or done. A cursor is a scheme's index (bits 32..50),
// whether its batch stripes are being scanned (bit 51), and the chunk
// number or batch slot to go on from. visit must not call back into the
// engine.
func (eng *Engine) Scan(cursor uint64, count int, visit func(key []byte, expireAt int64)) (next uint64, done bool) {
	schemes := eng.all()
	for i := int(cursor>>32) & 0x7FFFF; i < len(schemes); i++ {
		s := schemes[i]
		fn := func(o Object) { visit(o.Key, o.ExpireAt) }
		if cursor&scanBatchPhase == 0 {
			s.mu.Lock()
			at, finished := s.data.Scan(uint32(cursor), count, fn)
			s.mu.Unlock()
			if !finished {
				return uint64(i)<<32 | uint64(at), false
			}
			cursor = 0
		}
		if s.batch != nil {
			s.mu.Lock()
			at, finished := s.batch.data.Scan(uint32(cursor), count, fn)
			s.mu.Unlock()
			if !finished {
				return scanBatchPhase | uint64(i)<<32 | uint64(at), false
			}
		}
		cursor = 0
	}
	return 0, true
}

// scanBatchPhase marks a Scan cursor in a scheme's batch stripes.
const scanBatchPhase = 1 << 51

// RandomCursor is a Scan cursor at a place drawn at random (RANDOMKEY): a
// scheme's in-place chunks or batch stripes in proportion to their
// objects, and a chunk or batch slot among theirs; 0 when there is none.
func (eng *Engine) RandomCursor() uint64 {
	type place struct {
		cursor        uint64
		objects, span int
	}
	var places []place
	total := 0
	add := func(p place) {
		places = append(places, p)
		total += p.objects
	}
	for i, s := range eng.all() {
		s.mu.Lock()
		add(place{uint64(i) << 32, s.data.Len(), len(s.data.chunks)})
		if s.batch != nil {
			add(place{scanBatchPhase | uint64(i)<<32, s.batch.data.Len(), len(s.batch.data.stripes)})
		}
		s.mu.Unlock()
	}
	if total == 0 {
		return 0
	}
	pick := rand.IntN(total)
	for _, p := range places {
		if pick < p.objects {
			return p.cursor | uint64(rand.IntN(max(p.span, 1)))
		}
		pick -= p.objects
	}
	return 0
}

// expireSampleChunks is how many chunks one sample of a stripe scheme
// looks at.
const expireSampleChunks = 8

// SampleExpired calls expire with the expired keys of each stripe
// scheme's chunks, sampling a few chunks at a time (Data.SampleExpired)
// while more than a quarter of the objects with a TTL it finds have
// expired and deadline has not passed, as Redis's active expiry does.
// now is the time in Unix milliseconds.
func (eng *Engine) SampleExpired(deadline time.Time, now func() int64, expire func(key []byte)) {
	for _, s := range eng.all() {
		for time.Now().Before(deadline) {
			var keys [][]byte
			s.mu.Lock()
			withTTL := s.data.SampleExpired(now(), expireSampleChunks, func(key []byte) { keys = append(keys, key) })
			if s.batch != nil {
				withTTL += s.batch.data.SampleExpired(now(), expireSampleChunks, func(key []byte) { keys = append(keys, key) })
			}
			s.mu.Unlock()
			for _, k := range keys {
				expire(k)
			}
			if len(keys)*4 <= withTTL || len(keys) == 0 {
				break
			}
		}
	}
}
