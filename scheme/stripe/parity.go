package stripe

import (
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/memgest/memgest/ec"
	"github.com/memgest/memgest/scheme"
)

// Parity errors.
var (
	// ErrUpdate is matched by every refusal of a malformed update.
	ErrUpdate = errors.New("stripe: bad update")
	// ErrCopyDiffers says a parity holder's copy of an open chunk did not
	// match the coordinator's checksum at seal: it must be sent again.
	ErrCopyDiffers = errors.New("stripe: the parity holder's copy of the chunk differs")
)

// Outcome is what a parity holder did with an update.
type Outcome uint8

// The outcomes of Parity.Apply.
const (
	// Applied: the update changed the holder's copy or parity.
	Applied Outcome = iota + 1
	// Duplicate: it had been applied before; nothing changed.
	Duplicate
	// Missing: the update came before an earlier one it must follow (its
	// Base, or for a Seal or Free every earlier update); nothing changed. The coordinator resends the updates after
	// the seq Apply returned, then this one.
	Missing
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Missing:
		return "missing"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// Parity is what one node holds as a holder of one packed scheme
// (decision 0003): for each stripe (list, stripe number) of a list where it
// holds holder position j, the parity chunk, and for each data position the
// updates applied so far and, while that position's chunk is open, a copy
// of it (MemEC §4.3's buffered replicas). A hybrid scheme's replica holder
// (decision 0008) keeps no parity and keeps the copy after the seal too.
// A Parity is not safe for concurrent use.
type Parity struct {
	codec   *ec.Codec
	holders int // holder positions of a list: the codec's parities, and the replica if any
	replica int // the holder position keeping whole copies, or −1
	size    int
	stripes map[stripeKey]*parityStripe
	parity  int // bytes of parity chunks held
	images  int // bytes of open-chunk copies held
	copies  int // bytes of sealed chunks' copies held as replica
	backups int // bytes of updates held as backups
	tags    int // bytes of manifests held
}

type stripeKey struct {
	list   uint16
	stripe uint32
}

// parityStripe is one stripe at one parity holder.
type parityStripe struct {
	j      int    // the holder's parity position in the list
	parity []byte // nil while no position is sealed
	pos    []position
}

// position is one data position of a stripe, as a parity holder knows it.
type position struct {
	applied seqSet
	image   []byte // the open chunk's copy; nil if sealed, freed or untouched
	sealed  bool
	// backups are the updates applied here that some other holder may
	// lack: those after stable, through which every holder has applied
	// them (MemEC §5.3's delta backups; PositionBackups).
	backups []Update
	stable  uint32
	// manifest is the sealed chunk's key tags (manifest.go), kept by
	// the list's first parity holder only; hasManifest tells an empty
	// chunk's from none.
	manifest    []byte
	hasManifest bool
}

// NewParity returns an empty parity holder for RS(k, m) stripes of
// chunkSize-byte chunks (stripe:k+m).
func NewParity(k, m, chunkSize int) (*Parity, error) {
	return newParity(k, m, false, chunkSize)
}

// NewHybridParity returns an empty holder for hybrid:k+m stripes of
// chunkSize-byte chunks: holder positions 0..m−2 keep RS(k, m−1) parity,
// position m−1 keeps whole copies.
func NewHybridParity(k, m, chunkSize int) (*Parity, error) {
	if m < 2 {
		return nil, fmt.Errorf("stripe: hybrid needs M ≥ 2, got %d", m)
	}
	return newParity(k, m-1, true, chunkSize)
}

// holderParity returns the holder state for spec's scheme.
func holderParity(spec scheme.Spec) (*Parity, error) {
	if spec.Kind == scheme.Hybrid {
		return NewHybridParity(spec.K, spec.M, spec.ChunkSize())
	}
	return NewParity(spec.K, spec.M, spec.ChunkSize())
}

func newParity(k, parities int, replica bool, chunkSize int) (*Parity, error) {
	if err := ValidateChunkSize(chunkSize); err != nil {
		return nil, err
	}
	codec, err := ec.New(k, parities)
	if err != nil {
		return nil, err
	}
	p := &Parity{codec: codec, holders: parities, replica: -1, size: chunkSize, stripes: map[stripeKey]*parityStripe{}}
	if replica {
		p.replica, p.holders = parities, parities+1
	}
	return p, nil
}

// Apply applies update u, sent to this holder as parity position j of its
// list, and keeps it as a backup until a Stable mark covers it: the
// caller must not modify u.Bytes afterwards. It returns Missing with the seq through which the chunk's updates
// are all applied when u is a Seal or Free that must wait for earlier ones.
func (p *Parity) Apply(j int, u Update) (Outcome, uint32, error) {
	switch u.Kind {
	case Resync:
		out, err := p.Resync(j, u.Chunk, u.Seq, u.Bytes, u.Sealed)
		return out, p.Applied(u.Chunk), err
	case Stable:
		return p.markStable(j, u)
	}
	if err := p.check(j, u); err != nil {
		return 0, 0, err
	}
	st, err := p.stripe(u.Chunk, j)
	if err != nil {
		return 0, 0, err
	}
	pos := &st.pos[u.Chunk.Position]
	if pos.applied.has(u.Seq) {
		return Duplicate, pos.applied.through, nil
	}
	if pos.applied.through < u.Base || u.Kind != Delta && pos.applied.through < u.Seq-1 {
		return Missing, pos.applied.through, nil
	}
	switch u.Kind {
	case Delta:
		p.applyDelta(st, pos, u)
	case Seal:
		if err := p.seal(st, pos, u); err != nil {
			return 0, 0, err
		}
	case Free:
		if err := p.free(st, pos, u); err != nil {
			return 0, 0, err
		}
	}
	pos.applied.add(u.Seq)
	if u.Seq > pos.stable {
		pos.backups = append(pos.backups, u)
		p.backups += len(u.Bytes)
	}
	return Applied, pos.applied.through, nil
}

// markStable applies a Stable mark: the backups through its seq go.
func (p *Parity) markStable(j int, u Update) (Outcome, uint32, error) {
	if j < 0 || j >= p.holders || int(u.Chunk.Position) >= p.codec.K() {
		return 0, 0, fmt.Errorf("%w: %s: a stable mark for holder position %d", ErrUpdate, u.Chunk, j)
	}
	st, ok := p.stripes[stripeKey{u.Chunk.List, u.Chunk.Stripe}]
	if !ok {
		return Duplicate, 0, nil // nothing held, nothing to drop
	}
	pos := &st.pos[u.Chunk.Position]
	if u.Seq <= pos.stable {
		return Duplicate, pos.applied.through, nil
	}
	pos.stable = u.Seq
	p.dropBackups(pos, u.Seq)
	return Applied, pos.applied.through, nil
}

// dropBackups drops pos's backups of updates through seq.
func (p *Parity) dropBackups(pos *position, seq uint32) {
	kept := pos.backups[:0]
	for _, b := range pos.backups {
		if b.Seq > seq {
			kept = append(kept, b)
		} else {
			p.backups -= len(b.Bytes)
		}
	}
	clear(pos.backups[len(kept):])
	pos.backups = kept
	if len(kept) == 0 {
		pos.backups = nil
	}
}

// PositionBackups returns the updates applied here to the chunks of data
// position pos of list that another holder may lack (those after each
// chunk's Stable mark), by stripe, each chunk's in the order applied.
// After a coordinator failed while sending updates, each holder is given
// the others' (they commute as the updates themselves do), so that every
// holder has applied the same ones and a decode may use any of them: a
// recovery equalizes a lost position's holders in one exchange. The
// caller must not modify them.
func (p *Parity) PositionBackups(list uint16, pos uint8) []Update {
	var out []Update
	for key, st := range p.stripes {
		if key.list == list && int(pos) < len(st.pos) {
			out = append(out, st.pos[pos].backups...)
		}
	}
	return out
}

// check validates u's fields against the scheme.
func (p *Parity) check(j int, u Update) error {
	k, m := p.codec.K(), p.holders
	switch {
	case j < 0 || j >= m:
		return fmt.Errorf("%w: holder position %d of %d", ErrUpdate, j, m)
	case int(u.Chunk.Position) >= k:
		return fmt.Errorf("%w: %s: data position of %d", ErrUpdate, u.Chunk, k)
	case u.Seq == 0 || u.Base >= u.Seq:
		return fmt.Errorf("%w: %s: seq %d after base %d", ErrUpdate, u.Chunk, u.Seq, u.Base)
	case u.Kind == Delta && (u.Offset < 0 || len(u.Bytes) == 0 || len(u.Bytes) > p.size-u.Offset):
		return fmt.Errorf("%w: %s: delta of %d bytes at %d in a %d-byte chunk", ErrUpdate, u.Chunk, len(u.Bytes), u.Offset, p.size)
	case u.Kind != Delta && u.Kind != Seal && u.Kind != Free:
		return fmt.Errorf("%w: %s: %s", ErrUpdate, u.Chunk, u.Kind)
	}
	return nil
}

// stripe returns the stripe u's chunk belongs to, creating it for holder
// position j. A stripe's parity position never changes.
func (p *Parity) stripe(id ChunkID, j int) (*parityStripe, error) {
	key := stripeKey{id.List, id.Stripe}
	st, ok := p.stripes[key]
	if !ok {
		st = &parityStripe{j: j, pos: make([]position, p.codec.K())}
		p.stripes[key] = st
	}
	if st.j != j {
		return nil, fmt.Errorf("%w: %s: parity position %d, held as %d", ErrUpdate, id, j, st.j)
	}
	return st, nil
}

// HeldAs returns the parity position this holder keeps stripe (list,
// stripe) as, if it keeps it at all.
func (p *Parity) HeldAs(list uint16, stripe uint32) (int, bool) {
	st, ok := p.stripes[stripeKey{list, stripe}]
	if !ok {
		return 0, false
	}
	return st.j, true
}

// Reassign makes this holder parity position j of list: it drops every
// stripe of list it keeps as another position, and returns how many it
// dropped. A stand-in moves to another position when a node it did not
// stand in for fails or returns (cluster.Map.Holders); what it kept as the
// old position is no longer the list's parity (its new holder is rebuilt)
// and cannot become the new one's (parity depends on the position), so it
// starts afresh and is resynced.
func (p *Parity) Reassign(list uint16, j int) int {
	dropped := 0
	for key, st := range p.stripes {
		if key.list != list || st.j == j {
			continue
		}
		if st.parity != nil {
			p.parity -= p.size
		}
		for i := range st.pos {
			p.dropImage(&st.pos[i])
			for _, b := range st.pos[i].backups {
				p.backups -= len(b.Bytes)
			}
			p.tags -= len(st.pos[i].manifest)
		}
		delete(p.stripes, key)
		dropped++
	}
	return dropped
}

// applyDelta XORs a delta into the chunk's copy while it is open here (or
// for good at the replica holder), or its coefficient's multiple into
// parity once sealed.
func (p *Parity) applyDelta(st *parityStripe, pos *position, u Update) {
	if pos.sealed && st.j != p.replica {
		end := u.Offset + len(u.Bytes)
		// Cannot fail: check bounded the range, and j and the position
		// were checked against the codec.
		_ = p.codec.UpdateParity(st.j, int(u.Chunk.Position), u.Bytes, st.parity[u.Offset:end])
		return
	}
	if pos.image == nil {
		pos.image = make([]byte, p.size)
		p.images += p.size
	}
	xorInto(pos.image[u.Offset:], u.Bytes)
}

// seal folds the chunk's copy into parity. Every update before the seal
// and none after it is applied (Apply and Base see to it), so the copy
// must match the coordinator's checksum.
func (p *Parity) seal(st *parityStripe, pos *position, u Update) error {
	if pos.sealed {
		return fmt.Errorf("%w: %s sealed twice", ErrUpdate, u.Chunk)
	}
	image := pos.image
	if image == nil {
		image = make([]byte, p.size) // a chunk whose every object went
	}
	if crc32.Checksum(image, castagnoli) != u.CRC {
		return fmt.Errorf("%w: %s at seq %d", ErrCopyDiffers, u.Chunk, u.Seq)
	}
	if st.j == p.replica {
		p.keepCopy(st, pos, image, true)
		return nil
	}
	if st.parity == nil {
		st.parity = make([]byte, p.size)
		p.parity += p.size
	}
	_ = p.codec.UpdateParity(st.j, int(u.Chunk.Position), image, st.parity)
	p.keepManifest(st, pos, image)
	p.dropImage(pos)
	pos.sealed = true
	return nil
}

// keepManifest records sealed chunk's tags at pos if this holder is its
// list's first (the one recovery asks).
func (p *Parity) keepManifest(st *parityStripe, pos *position, chunk []byte) {
	p.dropManifest(pos)
	if st.j != 0 {
		return
	}
	pos.manifest, pos.hasManifest = manifestOf(chunk)
	p.tags += len(pos.manifest)
}

func (p *Parity) dropManifest(pos *position) {
	p.tags -= len(pos.manifest)
	pos.manifest, pos.hasManifest = nil, false
}

// free ends a chunk whose objects are all gone, keeping its seqs (a new
// chunk at the same place continues them). A stripe with no chunk left
// drops its parity, which is then all zeros.
func (p *Parity) free(st *parityStripe, pos *position, u Update) error {
	if pos.image != nil {
		if slices.ContainsFunc(pos.image, func(b byte) bool { return b != 0 }) {
			return fmt.Errorf("%w: %s freed with objects in it", ErrUpdate, u.Chunk)
		}
		p.dropImage(pos)
	}
	pos.sealed = false
	p.dropManifest(pos)
	if st.parity != nil && !slices.ContainsFunc(st.pos, func(q position) bool { return q.sealed }) {
		st.parity = nil
		p.parity -= p.size
	}
	return nil
}

// Resync brings this holder's state of chunk id to the coordinator's, at
// seq, when the updates it lacks are no longer logged: a holder that took
// over a failed one's parity position, or one whose copy of an open chunk
// differs. An open chunk's copy is replaced. A sealed chunk's bytes are
// folded into parity, which is possible only while parity holds nothing
// of this position (a sealed contribution cannot be taken back unseen). A
// Resync at or below the seq already applied changes nothing.
//
// A Resync that finds the position sealed here at an older seq is answered
// Missing: the sender took it from a stale Missing reply (this holder
// lacked an update, then got it from a round that settled first, and the
// log dropped it once every holder had it), so what this holder lacks is
// the logged updates after its seq. Were they gone too, the sender gives
// up after its few rounds, as it would on a refusal.
func (p *Parity) Resync(j int, id ChunkID, seq uint32, chunk []byte, sealed bool) (Outcome, error) {
	if len(chunk) != p.size {
		return 0, fmt.Errorf("%w: %s: a %d-byte copy of a %d-byte chunk", ErrUpdate, id, len(chunk), p.size)
	}
	if err := p.check(j, Update{Chunk: id, Seq: max(seq, 1), Kind: Free}); err != nil {
		return 0, err
	}
	st, err := p.stripe(id, j)
	if err != nil {
		return 0, err
	}
	pos := &st.pos[id.Position]
	switch {
	case pos.applied.through >= seq:
		return Duplicate, nil
	case len(pos.applied.beyond) > 0 && pos.applied.beyond[len(pos.applied.beyond)-1] > seq:
		return 0, fmt.Errorf("%w: %s: updates after seq %d are applied here; resync later", ErrUpdate, id, seq)
	case pos.sealed && st.j != p.replica:
		return Missing, nil
	}
	p.dropImage(pos)
	if st.j == p.replica {
		p.keepCopy(st, pos, slices.Clone(chunk), sealed)
	} else if sealed {
		if st.parity == nil {
			st.parity = make([]byte, p.size)
			p.parity += p.size
		}
		_ = p.codec.UpdateParity(st.j, int(id.Position), chunk, st.parity)
		p.keepManifest(st, pos, chunk)
		pos.sealed = true
	} else {
		pos.image = slices.Clone(chunk)
		p.images += p.size
	}
	pos.applied = seqSet{through: seq}
	pos.stable = max(pos.stable, seq)
	p.dropBackups(pos, seq)
	return Applied, nil
}

// keepCopy makes chunk the replica holder's copy at pos, sealed or open,
// with the sealed chunk's manifest if this holder keeps manifests.
func (p *Parity) keepCopy(st *parityStripe, pos *position, chunk []byte, sealed bool) {
	p.dropImage(pos)
	pos.image, pos.sealed = chunk, sealed
	if sealed {
		p.copies += p.size
		p.keepManifest(st, pos, chunk)
	} else {
		p.images += p.size
	}
}

// dropImage forgets pos's copy, open or (at the replica holder) sealed.
func (p *Parity) dropImage(pos *position) {
	switch {
	case pos.image == nil:
		return
	case pos.sealed:
		p.copies -= p.size
	default:
		p.images -= p.size
	}
	pos.image = nil
}

// PositionState is what a holder knows of one data position of a stripe.
type PositionState struct {
	Stripe  uint32
	Through uint32 // every update through this seq is applied
	Sealed  bool   // folded into parity, or sealed in the replica's copy
	Open    bool   // a copy of the open chunk is held
	// Manifest is the sealed chunk's key tags (manifest.go), if this
	// holder keeps them (HasManifest).
	Manifest    []byte
	HasManifest bool
}

// Positions lists the stripes of list where data position pos has state
// here, in stripe order: what a new coordinator asks when the chunks at
// that position are lost.
func (p *Parity) Positions(list uint16, pos uint8) []PositionState {
	var out []PositionState
	for key, st := range p.stripes {
		if key.list != list || int(pos) >= len(st.pos) {
			continue
		}
		q := st.pos[pos]
		if q.applied.through > 0 || q.sealed || q.image != nil {
			out = append(out, PositionState{Stripe: key.stripe, Through: q.applied.through, Sealed: q.sealed,
				Open:     q.image != nil && !q.sealed,
				Manifest: slices.Clone(q.manifest), HasManifest: q.hasManifest})
		}
	}
	slices.SortFunc(out, func(a, b PositionState) int { return int(a.Stripe) - int(b.Stripe) })
	return out
}

// StripeState returns, for each data position of stripe (list, stripe),
// the seq through which its updates are applied here and whether it is
// sealed into parity: a decode must use data chunks at exactly these seqs.
func (p *Parity) StripeState(list uint16, stripe uint32) (through []uint32, sealed []bool) {
	st, ok := p.stripes[stripeKey{list, stripe}]
	if !ok {
		return nil, nil
	}
	for _, q := range st.pos {
		through, sealed = append(through, q.applied.through), append(sealed, q.sealed)
	}
	return through, sealed
}

// StripesFrom lists up to n stripe numbers of list, from on, whose parity
// this holder keeps, in order: a recovery reads parity a page at a time.
func (p *Parity) StripesFrom(list uint16, from uint32, n int) []uint32 {
	var out []uint32
	for key, st := range p.stripes {
		if key.list == list && key.stripe >= from && st.parity != nil {
			out = append(out, key.stripe)
		}
	}
	slices.Sort(out)
	return out[:min(n, len(out))]
}

// CopiesFrom lists up to n stripe numbers of list, from on, where this
// holder keeps a copy of data position pos's sealed chunk (a replica
// holder), in order: a recovery copies them a page at a time.
func (p *Parity) CopiesFrom(list uint16, pos uint8, from uint32, n int) []uint32 {
	var out []uint32
	for key, st := range p.stripes {
		if key.list == list && key.stripe >= from && int(pos) < len(st.pos) && st.pos[pos].sealed && st.pos[pos].image != nil {
			out = append(out, key.stripe)
		}
	}
	slices.Sort(out)
	return out[:min(n, len(out))]
}

// ParityChunk returns the parity chunk of stripe (list, stripe number) and
// the holder's parity position, or nil if it holds none. The caller must
// not modify it.
func (p *Parity) ParityChunk(list uint16, stripe uint32) ([]byte, int) {
	st, ok := p.stripes[stripeKey{list, stripe}]
	if !ok {
		return nil, 0
	}
	return st.parity, st.j
}

// Image returns the copy of chunk id, open (or, at a replica holder,
// sealed), or nil. The caller must not modify it.
func (p *Parity) Image(id ChunkID) []byte {
	st, ok := p.stripes[stripeKey{id.List, id.Stripe}]
	if !ok || int(id.Position) >= len(st.pos) {
		return nil
	}
	return st.pos[id.Position].image
}

// Applied returns the seq through which every update of chunk id is
// applied here.
func (p *Parity) Applied(id ChunkID) uint32 {
	st, ok := p.stripes[stripeKey{id.List, id.Stripe}]
	if !ok || int(id.Position) >= len(st.pos) {
		return 0
	}
	return st.pos[id.Position].applied.through
}

// ParityStats is a parity holder's memory.
type ParityStats struct {
	ParityBytes int // parity chunks
	ImageBytes  int // copies of open chunks
	CopyBytes   int // a replica holder's copies of sealed chunks
	BackupBytes int // updates kept until every holder has them
	// ManifestBytes is the sealed chunks' key tags kept for recovery.
	ManifestBytes int
	Stripes       int
}

// Stats returns the holder's memory use.
func (p *Parity) Stats() ParityStats {
	return ParityStats{ParityBytes: p.parity, ImageBytes: p.images, CopyBytes: p.copies, BackupBytes: p.backups, ManifestBytes: p.tags, Stripes: len(p.stripes)}
}

// seqSet is the set of a chunk's applied seqs: every seq up to through,
// and the few beyond it that arrived early, sorted.
type seqSet struct {
	through uint32
	beyond  []uint32
}

func (s *seqSet) has(seq uint32) bool {
	if seq <= s.through {
		return true
	}
	_, ok := slices.BinarySearch(s.beyond, seq)
	return ok
}

func (s *seqSet) add(seq uint32) {
	if seq == s.through+1 {
		s.through++
		for len(s.beyond) > 0 && s.beyond[0] == s.through+1 {
			s.through++
			s.beyond = s.beyond[1:]
		}
		if len(s.beyond) == 0 {
			s.beyond = nil
		}
		return
	}
	i, _ := slices.BinarySearch(s.beyond, seq)
	s.beyond = slices.Insert(s.beyond, i, seq)
}

// xorInto XORs src into dst's first len(src) bytes.
func xorInto(dst, src []byte) {
	for i, b := range src {
		dst[i] ^= b
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
