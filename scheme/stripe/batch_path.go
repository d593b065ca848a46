package stripe

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/ec"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
)

// This file is the coordinator's batch path (decision 0009, BCStore
// §III-A): a write of a batching scheme joins its shard's open round; the
// round is cut when its bound has passed or it holds enough to fill its
// stripes, its objects are deduplicated by key, ordered by heat, packed
// into new batch stripes and encoded, every piece is put on its holder,
// and only then do the round's writes commit. A round whose puts fail
// fails every write in it, which the core then aborts: none was
// acknowledged.

// batchMode is a batching scheme's state on a coordinator.
type batchMode struct {
	data  *BatchData  // guarded by schemeState.mu
	heat  *heatSketch // guarded by schemeState.mu
	codec *ec.Codec   // RS(K, parities)
	bound time.Duration

	mu   sync.Mutex
	open map[uint16]*batchRound // the round each shard's writes join now
	auto *autoSwitch            // @auto's choice; nil under @batch
}

// newBatchMode returns the batch state of spec, or nil for a scheme that
// writes in place.
func newBatchMode(spec scheme.Spec) (*batchMode, error) {
	if spec.Mode == scheme.InPlace {
		return nil, nil
	}
	codec, err := ec.New(spec.K, batchParities(spec))
	if err != nil {
		return nil, err
	}
	b := &batchMode{data: NewBatchData(spec.K, spec.Kind == scheme.Hybrid), heat: newHeatSketch(), codec: codec,
		bound: spec.LatencyBound(), open: map[uint16]*batchRound{}}
	if spec.Mode == scheme.Auto {
		b.auto = newAutoSwitch(spec.K, b.bound)
	}
	return b, nil
}

// batchParities is how many parity chunks a batch stripe of spec has:
// M, or M−1 beside hybrid's copies.
func batchParities(spec scheme.Spec) int {
	if spec.Kind == scheme.Hybrid {
		return spec.M - 1
	}
	return spec.M
}

// batchPosition is the list position holding role r of a batch stripe
// of spec written by a coordinator at list position c (decision 0009):
// with c = 0, data chunk q on position q and parity j on K+j, except that
// under hybrid data chunk 0 is on the last position (the coordinator
// keeps copies of every data chunk). A coordinator standing in at another
// position c (its shard's own node failed without a spare) swaps
// positions 0 and c, so that it never holds a piece beside what it keeps.
func batchPosition(spec scheme.Spec, role, c int) int {
	p := role
	if spec.Kind == scheme.Hybrid && role == 0 {
		p = spec.K + spec.M - 1
	}
	switch p {
	case c:
		return 0
	case 0:
		return c
	}
	return p
}

// coordPosition is self's position in holders, or 0 if it is not in them.
func coordPosition(holders []cluster.Node, self cluster.NodeID) int {
	if i := slices.IndexFunc(holders, func(n cluster.Node) bool { return n.ID == self }); i > 0 {
		return i
	}
	return 0
}

// batchRound is one round of a shard's batch writes.
type batchRound struct {
	shard  uint16
	objs   []batchObject
	places []*batchPlace // by object
	bytes  int
	cut    bool
	timer  *time.Timer
	done   chan struct{} // closed once the round is durable or failed
	err    error
}

// batchPlace is where a staged batch write is (kind.Staged.Place): its
// round and, once the round is durable, the place of the key's newest
// object in it (its own, or a later write's that replaced it in the
// round) and that object's version.
type batchPlace struct {
	s       *schemeState
	round   *batchRound
	loc     BatchLoc
	version uint64
	added   bool // the round is durable: loc is set and counts as unsettled
}

// batches says whether a write of w to s goes through the batch path:
// under @batch every write whose object fits a chunk (larger ones are
// fragmented in place), under @auto those while the write rate fills
// stripes within the bound. A relocation (compaction, the GC) follows
// the current choice without counting toward the rate.
func (s *schemeState) batches(w *kind.Staged, obj *Object) bool {
	if s.batch == nil || obj.EncodedLen() > s.spec.ChunkSize() {
		return false
	}
	switch {
	case s.batch.auto == nil:
		return true
	case w.Relocate:
		return s.batch.auto.batchingNow()
	}
	return s.batch.auto.write(time.Now())
}

// stageBatch puts w's object in the open round of its shard.
func (eng *Engine) stageBatch(s *schemeState, w *kind.Staged, obj *Object) error {
	m := eng.host.Map()
	sh := m.ShardOf(keyslot.Of(w.Key))
	if sh == nil {
		return fmt.Errorf("stripe: key %q has no shard in map epoch %d", w.Key, m.Epoch)
	}
	bo := newBatchObject(obj)
	s.mu.Lock()
	bo.heat = s.batch.heat.add(bo.key)
	s.mu.Unlock()
	w.Place = eng.join(s, uint16(sh.ID), bo)
	return nil
}

// join adds o to shard's open round, opening one (and its timer) if
// there is none, and cuts the round at once when it holds enough to fill
// the stripes a round may make.
func (eng *Engine) join(s *schemeState, shard uint16, o batchObject) *batchPlace {
	b := s.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.open[shard]
	if r == nil {
		r = &batchRound{shard: shard, done: make(chan struct{})}
		b.open[shard] = r
		r.timer = time.AfterFunc(b.bound, func() { eng.cutRound(s, r) })
	}
	pl := &batchPlace{s: s, round: r}
	r.objs = append(r.objs, o)
	r.places = append(r.places, pl)
	r.bytes += len(o.enc)
	if r.bytes >= roundStripes*s.spec.K*s.spec.ChunkSize() {
		b.closeLocked(r)
		go eng.writeRound(s, r)
	}
	return pl
}

// roundStripes is how many full stripes a round fills before it is cut
// without waiting for its bound: BCStore encodes several stripes in one
// batch within the bound (§III-A); more would only delay the writes.
const roundStripes = 4

// closeLocked takes r out of the open rounds. The caller holds b.mu.
func (b *batchMode) closeLocked(r *batchRound) {
	r.cut = true
	r.timer.Stop()
	if b.open[r.shard] == r {
		delete(b.open, r.shard)
	}
}

// cutRound cuts r when its bound has passed, unless it was cut already.
func (eng *Engine) cutRound(s *schemeState, r *batchRound) {
	s.batch.mu.Lock()
	if r.cut {
		s.batch.mu.Unlock()
		return
	}
	s.batch.closeLocked(r)
	s.batch.mu.Unlock()
	eng.writeRound(s, r)
}

// writeRound packs, encodes and puts r's stripes, then sets every write's
// place, or the round's error, and wakes its writers.
func (eng *Engine) writeRound(s *schemeState, r *batchRound) {
	defer close(r.done)
	winners := newestPerKey(r)
	objs := make([]batchObject, len(winners))
	for i, w := range winners {
		objs[i] = r.objs[w]
	}
	stripes, err := packBatch(objs, orderByHeat(objs), s.spec.K, s.spec.ChunkSize())
	for _, ps := range stripes {
		if err == nil {
			err = encodeBatch(s.batch.codec, ps)
		}
	}
	if err != nil {
		r.err = fmt.Errorf("stripe: scheme %s: a batch: %w", s.spec, err)
		return
	}
	s.mu.Lock()
	serials := make([]uint64, len(stripes))
	for i := range stripes {
		serials[i] = s.batch.data.NextSerial(r.shard)
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), eng.cfg.PeerTimeout)
	defer cancel()
	s.mu.Lock()
	marks, sendID := s.batch.data.marks.take(r.shard)
	s.mu.Unlock()
	c, err := eng.putStripes(ctx, s, r.shard, serials, stripes, marks)
	r.err = err
	s.mu.Lock()
	s.batch.data.marks.done(sendID, marks, r.err == nil)
	s.mu.Unlock()
	if r.err != nil {
		go eng.freeStripes(s, r.shard, serials)
		return
	}
	if r.err = eng.addStripes(s, r, winners, serials, stripes, c); r.err == nil {
		eng.stats.BatchRounds.Add(1)
		eng.stats.BatchObjects.Add(int64(len(winners)))
		eng.stats.BatchDeduplicated.Add(int64(len(r.objs) - len(winners)))
	}
}

// newestPerKey returns the index of the newest-versioned object of each
// key of r, in the round's order (deduplication: a key's older writes in
// the round are stored as its newest, BCStore's last write wins).
func newestPerKey(r *batchRound) []int {
	at := make(map[string]int, len(r.objs)) // a key's index in order
	var order []int
	for i, o := range r.objs {
		k, seen := at[string(o.key)]
		switch {
		case !seen:
			at[string(o.key)] = len(order)
			order = append(order, i)
		case o.version > r.objs[order[k]].version:
			order[k] = i
		}
	}
	return order
}

// addStripes registers r's durable stripes and gives each write the
// place and version of its key's newest object in them.
func (eng *Engine) addStripes(s *schemeState, r *batchRound, winners []int, serials []uint64, stripes []*packedStripe, c int) error {
	byKey := make(map[string]*batchPlace, len(winners))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, ps := range stripes {
		slot, err := s.batch.data.Add(r.shard, serials[i], ps, c)
		if err != nil {
			return err
		}
		for _, p := range ps.places {
			w := winners[p.object]
			pl := r.places[w]
			pl.loc, pl.version = BatchLoc{Slot: slot, Chunk: p.chunk, Offset: p.offset}, r.objs[w].version
			byKey[string(r.objs[w].key)] = pl
		}
	}
	for i, pl := range r.places {
		if won := byKey[string(r.objs[i].key)]; won != pl {
			pl.loc, pl.version = won.loc, won.version
		}
		pl.added = true
		s.batch.data.stripes[pl.loc.Slot].unsettled++
	}
	return nil
}

// putStripes puts every piece of stripes (shard's serials) on its
// holder, one frame per holder, with the dead marks each mark holder
// keeps, and waits for all; it returns the coordinator's position the
// stripes were laid out for. A position whose node is down and has no
// stand-in is skipped: the stripe runs with reduced tolerance until the
// rebuild puts its piece.
func (eng *Engine) putStripes(ctx context.Context, s *schemeState, shard uint16, serials []uint64, stripes []*packedStripe, marks []seqMark) (int, error) {
	m := eng.host.Map()
	holders, err := listHolders(m, s.spec, shard)
	if err != nil {
		return 0, err
	}
	self := eng.host.Self()
	c := coordPosition(holders, self)
	frames := map[cluster.NodeID]*batchFrame{}
	var order []cluster.NodeID
	for i, ps := range stripes {
		lens := ps.lens() // one slice for every piece of the stripe
		for role, piece := range ps.pieces() {
			node := holders[batchPosition(s.spec, role, c)]
			if node.State != cluster.Up || (role == 0 && node.ID == self) {
				continue // down, or chunk 0 on its coordinator, which keeps it
			}
			f := frames[node.ID]
			if f == nil {
				f = &batchFrame{node: node}
				frames[node.ID] = f
				order = append(order, node.ID)
			}
			req := batchPutReq{Key: batchPieceKey{scheme: s.id, shard: shard, serial: serials[i], role: uint8(role)}, Lens: lens, Bytes: piece}
			if role == s.spec.K {
				req.Manifest = ps.manifest()
			}
			f.puts = append(f.puts, req)
		}
	}
	reqs := make([]Request, len(order))
	sent := 0
	for i, id := range order {
		f := frames[id]
		reqs[i] = Request{Node: f.node, Msg: MsgBatch, Payload: encodeBatchPuts(s.id, shard, f.puts, marksFor(s.spec, holders, marks, id))}
		if id != self {
			sent += len(reqs[i].Payload)
		}
	}
	_, errs := eng.callEach(ctx, reqs)
	if e, ok := m.SchemeByID(s.id); ok {
		eng.host.SentParity(e, sent)
	}
	for i, err := range errs {
		if err != nil {
			return 0, fmt.Errorf("stripe: scheme %s: putting a batch on %s: %w", s.spec, order[i], err)
		}
	}
	return c, nil
}

// batchFrame is the puts one holder gets for a round.
type batchFrame struct {
	node cluster.Node
	puts []batchPutReq
}

// listHolders returns the K+M positions of list shard in m (list g is
// shard g's placement, decision 0003).
func listHolders(m *cluster.Map, spec scheme.Spec, shard uint16) ([]cluster.Node, error) {
	if int(shard) >= len(m.Shards) {
		return nil, fmt.Errorf("stripe: list %d of %d shards", shard, len(m.Shards))
	}
	holders := m.ShardHolders(int(shard), spec.K+spec.M)
	if len(holders) < spec.K+spec.M {
		return nil, fmt.Errorf("stripe: scheme %s needs %d nodes, list %d has %d", spec, spec.K+spec.M, shard, len(holders))
	}
	return holders, nil
}

// pieces are ps's pieces by role: its data chunks, then its parities.
func (ps *packedStripe) pieces() [][]byte {
	out := make([][]byte, 0, len(ps.data)+len(ps.parity))
	return append(append(out, ps.data...), ps.parity...)
}

// lens are ps's data chunk lengths.
func (ps *packedStripe) lens() []uint32 {
	out := make([]uint32, len(ps.data))
	for q, d := range ps.data {
		out[q] = uint32(len(d))
	}
	return out
}

// manifest is the tags of ps's objects, chunk by chunk (manifest.go),
// which the first parity holder keeps for metadata-first recovery.
func (ps *packedStripe) manifest() []byte {
	var tags []byte
	for _, d := range ps.data {
		m, _ := manifestOf(d)
		tags = append(tags, m...)
	}
	return tags
}

// freeStripes drops stripes (shard's serials) from every holder of the
// list, in the background: a round that failed, or stripes the GC
// emptied. A holder that misses it keeps garbage that no id reuses.
func (eng *Engine) freeStripes(s *schemeState, shard uint16, serials []uint64) {
	m := eng.host.Map()
	holders, err := listHolders(m, s.spec, shard)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), eng.cfg.PeerTimeout)
	defer cancel()
	var reqs []Request
	for _, h := range holders {
		if h.State == cluster.Up {
			reqs = append(reqs, Request{Node: h, Msg: MsgBatch, Payload: encodeBatchFree(s.id, shard, serials)})
		}
	}
	eng.callEach(ctx, reqs)
}

// OnBatch serves a MsgBatch request: this node as the holder of batch
// stripes' pieces.
func (eng *Engine) OnBatch(b []byte) ([]byte, error) { return serveBatch(&eng.pieces, b) }

// flushBatch waits until the rounds of ws's batch writes are durable or
// failed, and gives each its round's error.
func flushBatch(ctx context.Context, ws []*kind.Staged) {
	for _, w := range ws {
		pl, ok := w.Place.(*batchPlace)
		if !ok {
			continue
		}
		select {
		case <-pl.round.done:
			w.Err = pl.round.err
		case <-ctx.Done():
			w.Err = ctx.Err()
		}
	}
}

// commitBatch makes the newest object of w's key in its round (w's, or a
// later write's of the same round) the key's current one, and removes
// the key's older in-place object of the scheme. It reports applied when
// that object is current now, so that the core removes the key's older
// copies elsewhere before w is answered: a read after w's answer sees
// w's round, never what was there before.
func (eng *Engine) commitBatch(pl *batchPlace, key []byte) (bool, error) {
	s := pl.s
	s.mu.Lock()
	applied, _, err := s.batch.data.Commit(key, pl.loc)
	s.batch.data.settle(pl.loc, false)
	var ups []Update
	if err == nil && applied {
		_, ups, err = s.data.Delete(key, pl.version-1)
	}
	s.mu.Unlock()
	eng.sendLater(s, ups)
	eng.finishDetachedLater(s)
	return applied, err
}

// abortBatch settles an aborted batch write: its object, if its round
// stored it and no write of the round committed it, is garbage.
func abortBatch(pl *batchPlace) {
	if !pl.added {
		return
	}
	pl.s.mu.Lock()
	pl.s.batch.data.settle(pl.loc, true)
	pl.s.mu.Unlock()
}
