package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/wire"
)

// This file is the stripe:K+M data path (decision 0003). A coordinator
// keeps its stripe keys' objects in chunks (stripe.Data) instead of its
// primary store; each change to a chunk goes to the M parity holders of the
// chunk's list as numbered updates (msgStripe), which they fold into
// parity (stripe.Parity). List g is the first K+M positions of shard g's
// placement.

// stripeSchemes is this node's part of every stripe scheme: as the
// coordinator of keys (data chunks) and as a parity holder.
type stripeSchemes struct {
	any atomic.Bool // set once a stripe scheme is used: reads skip all of this before
	mu  sync.Mutex  // serialises creating and clearing
	// list holds every scheme, sorted by id, replaced whole on a change:
	// reads and commits walk it without a lock or an allocation.
	list atomic.Pointer[[]*stripeScheme]
}

// stripeScheme is one stripe scheme on this node.
type stripeScheme struct {
	id     uint16
	spec   scheme.Spec
	mu     sync.Mutex
	groups stripeGroups
	data   *stripe.Data
	parity *stripe.Parity
	epoch  uint64 // of the map data's slots were computed from
	// adoptedAt is the epoch of a map all of whose data positions for this
	// node were adopted (adoptSlots), or 0.
	adoptedAt uint64
}

// scheme returns this node's state for stripe scheme entry, creating it.
func (ss *stripeSchemes) scheme(entry cluster.SchemeEntry) (*stripeScheme, error) {
	if s := ss.byID(entry.ID); s != nil {
		return s, nil
	}
	data, err := stripe.NewData(entry.Spec.ChunkSize())
	if err != nil {
		return nil, err
	}
	parity, err := stripe.NewParity(entry.Spec.K, entry.Spec.M, entry.Spec.ChunkSize())
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.byID(entry.ID); s != nil {
		return s, nil
	}
	s := &stripeScheme{id: entry.ID, spec: entry.Spec, data: data, parity: parity}
	list := append(slices.Clone(ss.all()), s)
	slices.SortFunc(list, func(a, b *stripeScheme) int { return int(a.id) - int(b.id) })
	ss.list.Store(&list)
	ss.any.Store(true)
	return s, nil
}

// byID returns the scheme with id, or nil.
func (ss *stripeSchemes) byID(id uint16) *stripeScheme {
	for _, s := range ss.all() {
		if s.id == id {
			return s
		}
	}
	return nil
}

// all returns every stripe scheme this node has state for, sorted by id.
// The caller must not modify the slice.
func (ss *stripeSchemes) all() []*stripeScheme {
	if l := ss.list.Load(); l != nil {
		return *l
	}
	return nil
}

// clear drops every stripe scheme's state (FLUSHALL, a wipe).
func (ss *stripeSchemes) clear() {
	ss.mu.Lock()
	ss.list.Store(nil)
	ss.mu.Unlock()
}

// refreshSlots points the scheme's appends at the data positions this
// node holds as the placement's own node in m (decision 0003) that it has
// adopted (adoptSlots). The caller holds s.mu.
func (s *stripeScheme) refreshSlots(m *cluster.Map, self cluster.NodeID) {
	if s.epoch == m.Epoch {
		return
	}
	var slots []stripe.Slot
	for _, slot := range ownSlots(m, s.spec, self) {
		if s.data.Adopted(slot) {
			slots = append(slots, slot)
		}
	}
	s.data.SetSlots(slots)
	s.epoch = m.Epoch
}

// ownSlots lists the data positions self may append at in m: those it
// holds as the placement's own node.
func ownSlots(m *cluster.Map, spec scheme.Spec, self cluster.NodeID) []stripe.Slot {
	var slots []stripe.Slot
	for g := range m.Shards {
		sh := &m.Shards[g]
		for p := 0; p < spec.K && p < len(sh.Placement); p++ {
			if sh.Placement[p] == self && !m.StoodIn(sh, p) {
				slots = append(slots, stripe.Slot{List: uint16(g), Position: uint8(p)})
			}
		}
	}
	return slots
}

// parityHolders returns the nodes holding parity positions 0..M−1 of
// list g in m.
func parityHolders(m *cluster.Map, spec scheme.Spec, g uint16) ([]cluster.Node, error) {
	if int(g) >= len(m.Shards) {
		return nil, fmt.Errorf("server: stripe list %d of %d shards", g, len(m.Shards))
	}
	holders := m.HoldersOf(m.Shards[g].First, spec.K+spec.M)
	if len(holders) < spec.K+spec.M {
		return nil, fmt.Errorf("server: scheme %s needs %d nodes, list %d has %d", spec, spec.K+spec.M, g, len(holders))
	}
	return holders[spec.K:], nil
}

// stageStripe stages w's object in scheme entry: in place of the key's
// current object there if both encode to the same length (the parity
// holders get the delta; the chunk changes at commit), else appended to an
// open chunk (the old object is removed at commit). It sets w.Place to the
// object's place and the updates its parity holders must acknowledge
// before the write commits. A relocation (compaction) always appends.
func (n *Node) stageStripe(ctx context.Context, entry cluster.SchemeEntry, w *kind.Staged) error {
	s, err := n.stripes.scheme(entry)
	if err != nil {
		return err
	}
	if err := n.adoptSlots(ctx, s); err != nil {
		return err
	}
	obj := stripe.Object{Key: w.Key, Value: w.Value, Version: w.Version, ExpireAt: w.ExpireAt}
	s.mu.Lock()
	s.refreshSlots(n.ctl.Map(), n.id)
	loc, ups, inPlace := stripe.Loc{}, []stripe.Update(nil), false
	if !w.Relocate {
		loc, ups, inPlace = s.data.Update(w.Key, &obj)
	}
	if !inPlace {
		loc, ups, err = s.data.Append(&obj)
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("server: scheme %s: %w", entry.Name(), err)
	}
	w.Place = &stripePlace{s: s, loc: loc, ups: ups}
	return nil
}

// onStripe applies a batch of chunk updates as a parity holder. A batch
// that does not decode changes nothing; an update the holder refuses is
// reported in its slot and fails only its own write.
func (n *Node) onStripe(b []byte) ([]byte, error) {
	id, ups, err := decodeStripeUpdates(b)
	if err != nil {
		return nil, err
	}
	entry, ok := n.ctl.Map().SchemeByID(id)
	if !ok || !n.schemes(n.ctl.Map()).isStripe(entry.ID) {
		return nil, fmt.Errorf("server: scheme id %d is not a stripe scheme", id)
	}
	s, err := n.stripes.scheme(entry)
	if err != nil {
		return nil, err
	}
	acks := make([]stripeAck, len(ups))
	m := n.ctl.Map()
	s.mu.Lock()
	for i, u := range ups {
		n.takeParityPosition(m, s, u)
		out, through, err := s.parity.Apply(u.J, u.U)
		acks[i] = stripeAck{Outcome: out, Through: through}
		if err != nil {
			acks[i].Refusal = err.Error()
		}
	}
	s.mu.Unlock()
	return encodeList(acks), nil
}

// takeParityPosition makes this node parity position u.J of u's list if
// it keeps the update's stripe as another position and m says the list's
// holder u.J is this node: a stand-in moved (stripe.Parity.Reassign). A
// sender with another map than this node's is refused as before, by
// Apply. The caller holds s.mu.
func (n *Node) takeParityPosition(m *cluster.Map, s *stripeScheme, u stripeUpdate) {
	held, ok := s.parity.HeldAs(u.U.Chunk.List, u.U.Chunk.Stripe)
	if !ok || held == u.J {
		return
	}
	holders, err := parityHolders(m, s.spec, u.U.Chunk.List)
	if err != nil || u.J < 0 || u.J >= len(holders) || holders[u.J].ID != n.id {
		return
	}
	dropped := s.parity.Reassign(u.U.Chunk.List, u.J)
	n.log.Info("this node moved to another parity position of a stripe list; its old parity there is dropped",
		"scheme", s.spec, "list", u.U.Chunk.List, "from", held, "to", u.J, "stripes", dropped)
}

// usage reports the scheme's memory on this node, its key count and its
// keys' logical bytes.
func (s *stripeScheme) usage() (stripeUsage, int64, int64) {
	s.mu.Lock()
	d, p := s.data.Stats(), s.parity.Stats()
	s.mu.Unlock()
	u := stripeUsage{Chunks: int64(d.ChunkBytes), Parity: int64(p.ParityBytes), Buffered: int64(p.ImageBytes), Backups: int64(p.BackupBytes),
		Manifests: int64(p.ManifestBytes), Index: int64(d.IndexBytes), Objects: int64(d.LiveBytes), Garbage: int64(d.GarbageBytes)}
	return u, int64(d.Keys), int64(d.LogicalBytes)
}

// stripeKeys counts the keys this node coordinates in stripe schemes.
func (n *Node) stripeKeys() int {
	total := 0
	for _, s := range n.stripes.all() {
		s.mu.Lock()
		total += s.data.Len()
		s.mu.Unlock()
	}
	return total
}

// onStripeRead serves a data chunk this node coordinates, or a parity chunk
// or open chunk's copy it holds as a parity holder.
func (n *Node) onStripeRead(b []byte) ([]byte, error) {
	r, err := decodeStripeRead(b)
	if err != nil {
		return nil, err
	}
	entry, ok := n.ctl.Map().SchemeByID(r.Scheme)
	if !ok || !n.schemes(n.ctl.Map()).isStripe(entry.ID) {
		return nil, fmt.Errorf("server: scheme id %d is not a stripe scheme", r.Scheme)
	}
	s, err := n.stripes.scheme(entry)
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
		var ups []stripeUpdate
		for _, u := range s.parity.PositionBackups(r.Chunk.List, r.Chunk.Position) {
			ups = append(ups, stripeUpdate{U: u})
		}
		b := encodeList(ups)
		s.mu.Unlock()
		return b, nil
	case readDataRange, readParityRange:
		return encodeList(s.chunkRange(r)), nil
	}
	var c stripeChunk
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
// a position, or of its parity chunks of a list, from a stripe number on.
func (s *stripeScheme) chunkRange(r stripeRead) []rangedChunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []rangedChunk
	if r.What == readDataRange {
		for _, id := range s.data.ChunksFrom(r.Chunk.List, r.Chunk.Position, r.Chunk.Stripe, stripeRangePage) {
			var c stripeChunk
			c.Bytes, c.Sealed, c.Seq, c.Found = s.data.Read(id)
			out = append(out, rangedChunk{Stripe: id.Stripe, Chunk: c})
		}
		return out
	}
	for _, st := range s.parity.StripesFrom(r.Chunk.List, r.Chunk.Stripe, stripeRangePage) {
		p, j := s.parity.ParityChunk(r.Chunk.List, st)
		c := stripeChunk{Found: true, J: uint8(j), Bytes: slices.Clone(p)}
		c.Through, c.SealedAt = s.parity.StripeState(r.Chunk.List, st)
		out = append(out, rangedChunk{Stripe: st, Chunk: c})
	}
	return out
}

// readChunkRange reads the chunks of a range from node, a page at a
// time: what is readDataRange or readParityRange, at chunk's list and
// position, from stripe number from on, until a page reaches stripe to or
// the range ends. It returns them by stripe number.
func (n *Node) readChunkRange(ctx context.Context, node cluster.Node, scheme uint16, what uint8, list uint16, pos uint8, from, to uint32) (map[uint32]stripeChunk, error) {
	out := map[uint32]stripeChunk{}
	for {
		b, err := n.stripeReadRaw(ctx, node, stripeRead{Scheme: scheme, What: what, Chunk: stripe.ChunkID{List: list, Position: pos, Stripe: from}})
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
		if len(page) < stripeRangePage || from > to {
			return out, nil
		}
	}
}

// readStripeChunk asks node for a chunk.
func (n *Node) readStripeChunk(ctx context.Context, node cluster.Node, r stripeRead) (stripeChunk, error) {
	if node.ID == n.id {
		b, err := n.onStripeRead(r.encode(nil))
		if err != nil {
			return stripeChunk{}, err
		}
		return decodeStripeChunk(b)
	}
	b, err := n.call(ctx, node, msgStripeRead, r.encode(nil))
	if err != nil {
		return stripeChunk{}, err
	}
	return decodeStripeChunk(b)
}
