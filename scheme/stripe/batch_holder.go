package stripe

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/wire"
)

// This file is a node's side of other coordinators' batch stripes
// (decision 0009): the pieces it holds (a data chunk, a parity chunk)
// and the MsgBatch requests that put, read, list and free them. A piece
// never changes once put: there is no seq and no delta.

// batchPieceKey names one piece: the scheme, the shard whose coordinator
// wrote the stripe, the stripe's serial and the piece's role in it.
type batchPieceKey struct {
	scheme uint16
	shard  uint16
	serial uint64
	role   uint8 // data chunk q < K, parity j as K+j
}

// batchPiece is one held piece: its bytes, the stripe's data chunk
// lengths (a decode pads to the longest), and on the stripe's first
// parity holder the stripe's manifest (a tag per object, manifest.go).
type batchPiece struct {
	lens     []uint32
	bytes    []byte
	manifest []byte
	dead     []uint64 // dead marks, chunk<<32 | offset (batch_marks.go); under batchPieces.mu
}

// batchPieces are the pieces a node holds for batch stripes, by scheme
// and shard, safe for concurrent use.
type batchPieces struct {
	mu      sync.Mutex
	byShard map[shardOf]*shardPieces
	bytes   int
	// perScheme are the bytes held by scheme: data chunks and parity.
	perScheme map[uint16]*heldBytes
}

// heldBytes are a scheme's batch pieces' bytes on a holder.
type heldBytes struct{ data, parity, manifests int }

// count adds the bytes of piece p in role (sign 1) or takes them away
// (-1). The caller holds h.mu.
func (h *batchPieces) count(schemeID uint16, role uint8, p *batchPiece, sign int) {
	h.bytes += sign * p.size()
	if h.perScheme == nil {
		h.perScheme = map[uint16]*heldBytes{}
	}
	hb := h.perScheme[schemeID]
	if hb == nil {
		hb = &heldBytes{}
		h.perScheme[schemeID] = hb
	}
	if int(role) < len(p.lens) {
		hb.data += sign * len(p.bytes)
	} else {
		hb.parity += sign * len(p.bytes)
	}
	hb.manifests += sign * len(p.manifest)
}

// held returns scheme's bytes of batch pieces held here.
func (h *batchPieces) held(schemeID uint16) heldBytes {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hb := h.perScheme[schemeID]; hb != nil {
		return *hb
	}
	return heldBytes{}
}

// shardOf names one scheme's stripes of one shard.
type shardOf struct{ scheme, shard uint16 }

// shardPieces are one shard's pieces: by serial and role, and the
// serials in ascending order for listing (puts arrive nearly in order,
// so keeping it sorted costs little; freed serials leave it lazily).
type shardPieces struct {
	bySerial map[uint64][]heldPiece
	order    []uint64
	dead     int // serials in order no longer in bySerial
}

// heldPiece is a piece and its role.
type heldPiece struct {
	role uint8
	p    *batchPiece
}

func (h *batchPieces) shard(k batchPieceKey, create bool) *shardPieces {
	sk := shardOf{k.scheme, k.shard}
	sp := h.byShard[sk]
	if sp == nil && create {
		if h.byShard == nil {
			h.byShard = map[shardOf]*shardPieces{}
		}
		sp = &shardPieces{bySerial: map[uint64][]heldPiece{}}
		h.byShard[sk] = sp
	}
	return sp
}

func (h *batchPieces) put(k batchPieceKey, p *batchPiece) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sp := h.shard(k, true)
	held, known := sp.bySerial[k.serial]
	for i, x := range held {
		if x.role == k.role {
			h.count(k.scheme, x.role, x.p, -1)
			held = slices.Delete(held, i, i+1)
			break
		}
	}
	sp.bySerial[k.serial] = append(held, heldPiece{role: k.role, p: p})
	h.count(k.scheme, k.role, p, 1)
	if !known {
		sp.insert(k.serial)
	}
}

// insert adds serial to order, kept ascending, unless a freed serial's
// entry is still there (put again: recovery re-putting a lost piece).
func (sp *shardPieces) insert(serial uint64) {
	i := len(sp.order)
	for i > 0 && sp.order[i-1] > serial {
		i--
	}
	if i > 0 && sp.order[i-1] == serial {
		sp.dead--
		return
	}
	sp.order = slices.Insert(sp.order, i, serial)
}

func (p *batchPiece) size() int { return len(p.bytes) + len(p.manifest) + 4*len(p.lens) }

// clear drops every piece.
func (h *batchPieces) clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byShard, h.perScheme, h.bytes = nil, nil, 0
}

func (h *batchPieces) get(k batchPieceKey) (*batchPiece, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sp := h.shard(k, false); sp != nil {
		for _, x := range sp.bySerial[k.serial] {
			if x.role == k.role {
				return x.p, true
			}
		}
	}
	return nil, false
}

// repair writes obj, a sound object, over the copy at off of piece k
// that fails its check; a copy that passes it is left as it is.
func (h *batchPieces) repair(k batchPieceKey, off int, obj []byte) error {
	if _, n, err := ParseChecked(obj); err != nil || n != len(obj) {
		return fmt.Errorf("stripe: a batch repair's object does not pass its check: %w", ErrChecksum)
	}
	p, ok := h.get(k)
	if !ok {
		return fmt.Errorf("%w: scheme %d shard %d stripe %d role %d", ErrNoBatchPiece, k.scheme, k.shard, k.serial, k.role)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if off < 0 || off+len(obj) > len(p.bytes) {
		return fmt.Errorf("stripe: a batch repair of %d bytes at %d of a %d-byte piece", len(obj), off, len(p.bytes))
	}
	if Verify(p.bytes[off:off+len(obj)]) != nil {
		copy(p.bytes[off:], obj)
	}
	return nil
}

// replace makes b the bytes of piece k, of the same length; a data
// piece's must pass its objects' checks.
func (h *batchPieces) replace(k batchPieceKey, b []byte) error {
	p, ok := h.get(k)
	if !ok {
		return fmt.Errorf("%w: scheme %d shard %d stripe %d role %d", ErrNoBatchPiece, k.scheme, k.shard, k.serial, k.role)
	}
	if int(k.role) < len(p.lens) && CheckObjects(b) != nil {
		return fmt.Errorf("stripe: a batch piece's replacement fails its objects' checks: %w", ErrChecksum)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(b) != len(p.bytes) {
		return fmt.Errorf("stripe: a %d-byte replacement of a %d-byte batch piece", len(b), len(p.bytes))
	}
	copy(p.bytes, b)
	return nil
}

// free drops every piece of the stripes serials of (scheme, shard), in
// whatever role, and returns how many it dropped.
func (h *batchPieces) free(schemeID, shard uint16, serials []uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	sp := h.shard(batchPieceKey{scheme: schemeID, shard: shard}, false)
	if sp == nil {
		return 0
	}
	n := 0
	for _, s := range serials {
		held, ok := sp.bySerial[s]
		if !ok {
			continue
		}
		for _, x := range held {
			h.count(schemeID, x.role, x.p, -1)
			n++
		}
		delete(sp.bySerial, s)
		sp.dead++
	}
	if sp.dead > len(sp.order)/2 {
		sp.order = slices.DeleteFunc(sp.order, func(s uint64) bool { _, ok := sp.bySerial[s]; return !ok })
		sp.dead = 0
	}
	return n
}

// list returns the pieces of (scheme, shard) from serial from on, in
// serial order, for at most max serials, with their bytes if withBytes
// (then stopping once a page holds listBytes of them).
func (h *batchPieces) list(schemeID, shard uint16, from uint64, max int, withBytes bool) []batchListed {
	h.mu.Lock()
	defer h.mu.Unlock()
	sp := h.shard(batchPieceKey{scheme: schemeID, shard: shard}, false)
	if sp == nil {
		return nil
	}
	var out []batchListed
	i, _ := slices.BinarySearch(sp.order, from)
	for n, size := 0, 0; i < len(sp.order) && n < max && size < listBytes; i++ {
		held, ok := sp.bySerial[sp.order[i]]
		if !ok {
			continue
		}
		n++
		for _, x := range held {
			l := batchListed{Serial: sp.order[i], Role: x.role, Lens: x.p.lens, Size: uint32(len(x.p.bytes)), Manifest: x.p.manifest, Dead: slices.Clone(x.p.dead)}
			if withBytes {
				l.Bytes = x.p.bytes
				size += len(l.Bytes)
			}
			out = append(out, l)
		}
	}
	return out
}

// The MsgBatch operations: the first byte of a request.
const (
	batchPut     uint8 = iota + 1 // store a piece
	batchRead                     // read a range of a piece
	batchList                     // list a shard's pieces from a serial on
	batchFree                     // drop stripes' pieces
	batchMark                     // mark an object of a stripe dead (batch_marks.go)
	batchRepair                   // write back an object a piece has corrupt (repair.go)
	batchReplace                  // replace a piece the scrub found differing (batch_scrub.go)
)

// batchListPage is how many stripes one batchList answers at most; fewer
// says the list is done (unless the page was cut at listBytes).
const batchListPage = 1024

// listBytes bounds the piece bytes one batchList with bytes answers: a
// page ends after the stripe that passes it.
const listBytes = 1 << 20

// batchPutReq stores one piece of a batch stripe.
type batchPutReq struct {
	Key      batchPieceKey
	Lens     []uint32
	Bytes    []byte
	Manifest []byte
}

func (r batchPutReq) encode(e wire.Enc) wire.Enc {
	e = r.Key.encode(e).U8(uint8(len(r.Lens)))
	for _, l := range r.Lens {
		e = e.U32(l)
	}
	return e.Bytes(r.Bytes).Bytes(r.Manifest)
}

// encodedLen is len(r.encode(nil)).
func (r batchPutReq) encodedLen() int {
	return batchKeyLen + 1 + 4*len(r.Lens) + wire.UvarintLen(uint64(len(r.Bytes))) + len(r.Bytes) +
		wire.UvarintLen(uint64(len(r.Manifest))) + len(r.Manifest)
}

func readBatchPut(d *wire.Dec) batchPutReq {
	r := batchPutReq{Key: readBatchKey(d)}
	for range int(d.U8()) {
		r.Lens = append(r.Lens, d.U32())
	}
	r.Bytes, r.Manifest = d.Bytes(), d.Bytes()
	return r
}

// piece is what a holder keeps of r: copies, since r aliases the frame.
func (r batchPutReq) piece() *batchPiece {
	p := &batchPiece{lens: r.Lens, bytes: slices.Clone(r.Bytes)}
	if len(r.Manifest) > 0 {
		p.manifest = slices.Clone(r.Manifest)
	}
	return p
}

// encodeBatchPuts is a batchPut request: puts of scheme's stripes of
// shard, and the dead marks that ride along (batch_marks.go).
func encodeBatchPuts(schemeID, shard uint16, puts []batchPutReq, marks []seqMark) []byte {
	size := 4
	for _, r := range puts {
		size += r.encodedLen()
	}
	list := make(wire.Enc, 0, size).U32(uint32(len(puts)))
	for _, r := range puts {
		list = r.encode(list)
	}
	e := make(wire.Enc, 0, 1+4+wire.UvarintLen(uint64(len(list)))+len(list)+4+13*len(marks))
	e = e.U8(batchPut).U16(schemeID).U16(shard).Bytes(list)
	return append(e, encodeMarks(marks)...)
}

const batchKeyLen = 2 + 2 + 8 + 1

func (k batchPieceKey) encode(e wire.Enc) wire.Enc {
	return e.U16(k.scheme).U16(k.shard).U64(k.serial).U8(k.role)
}

func readBatchKey(d *wire.Dec) batchPieceKey {
	return batchPieceKey{scheme: d.U16(), shard: d.U16(), serial: d.U64(), role: d.U8()}
}

// batchReadReq reads length bytes at offset of a piece; bytes past its
// end read as zeros (a shorter data chunk is zero-padded in its stripe).
type batchReadReq struct {
	Key            batchPieceKey
	Offset, Length uint32
}

func (r batchReadReq) encode(e wire.Enc) wire.Enc {
	return r.Key.encode(e.U8(batchRead)).U32(r.Offset).U32(r.Length)
}

// batchListed is one piece a batchList names, with its bytes if asked.
type batchListed struct {
	Serial   uint64
	Role     uint8
	Lens     []uint32
	Size     uint32
	Manifest []byte
	Bytes    []byte
	Dead     []uint64
}

func (l batchListed) encode(e wire.Enc) wire.Enc {
	e = e.U64(l.Serial).U8(l.Role).U8(uint8(len(l.Lens)))
	for _, n := range l.Lens {
		e = e.U32(n)
	}
	e = e.U32(l.Size).Bytes(l.Manifest).Bytes(l.Bytes).U32(uint32(len(l.Dead)))
	for _, d := range l.Dead {
		e = e.U64(d)
	}
	return e
}

func readBatchListed(d *wire.Dec) batchListed {
	l := batchListed{Serial: d.U64(), Role: d.U8()}
	for range int(d.U8()) {
		l.Lens = append(l.Lens, d.U32())
	}
	l.Size, l.Manifest, l.Bytes = d.U32(), d.Bytes(), d.Bytes()
	if n := d.U32(); int(n) <= len(d.Rest())/8 {
		for range n {
			l.Dead = append(l.Dead, d.U64())
		}
	} else {
		d.Fail()
	}
	if len(l.Manifest) == 0 {
		l.Manifest = nil
	}
	if len(l.Bytes) == 0 {
		l.Bytes = nil
	}
	return l
}

// ErrNoBatchPiece answers a read of a piece the node does not hold.
var ErrNoBatchPiece = errors.New("stripe: no such batch piece here")

// maxBatchRead bounds one batchRead: a chunk at most.
const maxBatchRead = 1 << 20

// serveBatch answers one MsgBatch request from h.
func serveBatch(h *batchPieces, b []byte) ([]byte, error) {
	d := wire.NewDec(b)
	switch op := d.U8(); op {
	case batchPut:
		schemeID, shard, list := d.U16(), d.U16(), d.Bytes()
		if d.Err() != nil {
			return nil, d.Err()
		}
		puts, err := wire.DecodeList(list, readBatchPut)
		if err != nil {
			return nil, err
		}
		marks, err := decodeMarks(d.Rest())
		if err != nil {
			return nil, err
		}
		for _, r := range puts {
			if r.Key.scheme != schemeID || r.Key.shard != shard {
				return nil, fmt.Errorf("stripe: a batch put of scheme %d shard %d in a frame of %d/%d: %w", r.Key.scheme, r.Key.shard, schemeID, shard, wire.ErrMalformed)
			}
			if err := checkPiece(r.Key, r.piece()); err != nil {
				return nil, err
			}
		}
		for _, r := range puts {
			h.put(r.Key, r.piece())
		}
		for _, m := range marks {
			h.markDead(schemeID, shard, m.serial, m.chunk, m.offset)
		}
		return nil, nil
	case batchRepair:
		k := readBatchKey(&d)
		off, obj := d.U32(), d.Bytes()
		if err := d.Done(); err != nil {
			return nil, err
		}
		return nil, h.repair(k, int(off), obj)
	case batchReplace:
		k := readBatchKey(&d)
		piece := d.Bytes()
		if err := d.Done(); err != nil {
			return nil, err
		}
		return nil, h.replace(k, piece)
	case batchRead:
		k := readBatchKey(&d)
		off, n := d.U32(), d.U32()
		if err := d.Done(); err != nil {
			return nil, err
		}
		if n > maxBatchRead || off > maxBatchRead {
			return nil, fmt.Errorf("stripe: a batch read of %d bytes at %d", n, off)
		}
		p, ok := h.get(k)
		if !ok {
			return nil, fmt.Errorf("%w: scheme %d shard %d stripe %d role %d", ErrNoBatchPiece, k.scheme, k.shard, k.serial, k.role)
		}
		out := make([]byte, n)
		if int(off) < len(p.bytes) {
			copy(out, p.bytes[off:])
		}
		return out, nil
	case batchList:
		schemeID, shard, from, withBytes := d.U16(), d.U16(), d.U64(), d.Flag()
		if err := d.Done(); err != nil {
			return nil, err
		}
		return encodeList(h.list(schemeID, shard, from, batchListPage, withBytes)), nil
	case batchFree:
		schemeID, shard := d.U16(), d.U16()
		serials, err := wire.DecodeList(d.Rest(), func(d *wire.Dec) uint64 { return d.U64() })
		if err != nil {
			return nil, err
		}
		h.free(schemeID, shard, serials)
		return nil, nil
	case batchMark:
		schemeID, shard := d.U16(), d.U16()
		marks, err := decodeMarks(d.Rest())
		if err != nil {
			return nil, err
		}
		for _, m := range marks {
			h.markDead(schemeID, shard, m.serial, m.chunk, m.offset)
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("stripe: unknown batch operation %d: %w", op, wire.ErrMalformed)
	}
}

// checkPiece refuses a piece whose fields disagree: a stripe of no data
// chunk or over MaxData, a length over MaxChunkSize, a data piece not as
// long as its length, a parity piece not as long as the longest.
func checkPiece(k batchPieceKey, p *batchPiece) error {
	if len(p.lens) == 0 || len(p.lens) > scheme.MaxData {
		return fmt.Errorf("stripe: a batch piece of a stripe of %d data chunks: %w", len(p.lens), wire.ErrMalformed)
	}
	longest := uint32(0)
	for _, l := range p.lens {
		if l > MaxChunkSize {
			return fmt.Errorf("stripe: a batch chunk of %d bytes: %w", l, wire.ErrMalformed)
		}
		longest = max(longest, l)
	}
	want := longest
	if int(k.role) < len(p.lens) {
		want = p.lens[k.role]
	}
	if uint32(len(p.bytes)) != want {
		return fmt.Errorf("stripe: batch piece role %d of %d bytes, want %d: %w", k.role, len(p.bytes), want, wire.ErrMalformed)
	}
	return nil
}

func encodeBatchList(schemeID, shard uint16, from uint64, withBytes bool) []byte {
	return wire.Enc(nil).U8(batchList).U16(schemeID).U16(shard).U64(from).Flag(withBytes)
}

func encodeBatchFree(schemeID, shard uint16, serials []uint64) []byte {
	e := wire.Enc(nil).U8(batchFree).U16(schemeID).U16(shard)
	return append(e, wire.EncodeList(serials, func(e wire.Enc, s uint64) wire.Enc { return e.U64(s) })...)
}
