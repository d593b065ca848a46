package server

import (
	"encoding/binary"

	"github.com/memgest/memgest/scheme/kind"
)

// Peer message types (transport.Frame.Type). Payload layouts are the
// encode/decode pairs below; docs/transport.md lists them under "Peer
// messages".
const (
	msgPutPieces    uint8 = iota + 1 // store redundancy pieces (one or many writes')
	msgGetPiece                      // read one piece (split gathers)
	msgDelPiece                      // release pieces of a key up to a version
	msgForward                       // run a client command on its coordinator
	msgJoin                          // ask the leader to add a node
	msgPropose                       // ask the leader to apply a map command
	msgStats                         // per-scheme counts and bytes of a node
	msgScan                          // one SCAN step over a node's coordinated keys
	msgFlush                         // drop every key and piece of a node
	msgHeartbeat                     // a node reports to the Raft leader (failure.go)
	msgListPieces                    // one page of the pieces held for a slot range (repair_recover.go)
	msgDirectory                     // key directory entries for a node to keep (datapath_directory.go)
	msgRepair                        // a holder found a corrupt piece of a key: store its pieces again (repair_scrub.go)
	msgGetPieces                     // read many pieces at once (bulk split rebuild, repair_rebuild.go)
	msgAudit                         // which of these pieces are garbage? (the sweep, repair_sweep.go)
	msgStripe                        // chunk updates for a stripe scheme's parity holder (stripe.go)
	msgStripeRead                    // read a data chunk, a parity chunk or an open chunk's copy (stripe.go)
	msgStripeResync                  // send a list's chunks whole to one parity holder (stripe_rebuild.go)
)

// piece is one unit of redundancy stored on a node: a replica of a value or
// one shard of a split object. Versioned pieces (split) are stored under
// their version so that the committed version stays readable while a newer
// one is being written (Ring §5.2 keeps old versions until the new commits).
//
// It is a kind.Piece with its wire encoding.
type piece kind.Piece

// encodedLen is len(p.encode(nil)), without encoding: the fixed fields
// (scheme, version, expiry, index, flag, CRC) and the two length-prefixed
// byte strings.
func (p piece) encodedLen() int {
	const fixed = 2 + 8 + 8 + 1 + 1 + 4
	return uvarintLen(uint64(len(p.Key))) + len(p.Key) + fixed + uvarintLen(uint64(len(p.Data))) + len(p.Data)
}

func (p piece) encode(e enc) enc { return p.encodeHead(e).bytes(p.Data) }

// spoolTo appends p to a spool, which refers to a large Data rather than
// copying it.
func (p piece) spoolTo(s *spool) {
	s.cur = p.encodeHead(s.cur)
	s.bytes(p.Data)
}

// encodeHead appends p's fields but its data.
func (p piece) encodeHead(e enc) enc {
	return e.bytes(p.Key).u16(p.Scheme).u64(p.Version).i64(p.ExpireAt).u8(p.Index).u8(boolByte(p.Versioned)).u32(p.CRC)
}

// inlineLen is what p adds to a spool's own bytes: its encoded length,
// less its data when the spool refers to it.
func (p piece) inlineLen() int {
	if len(p.Data) >= spoolMin {
		return p.encodedLen() - len(p.Data)
	}
	return p.encodedLen()
}

func decodePiece(b []byte) (piece, error) {
	d := dec{b: b}
	p := readPiece(&d)
	return p, d.done()
}

// readPiece reads one piece; pieces are self-delimiting, so a PutPieces
// payload is a count and the pieces back to back.
func readPiece(d *dec) piece {
	p := piece{Key: d.bytes(), Scheme: d.u16(), Version: d.u64(), ExpireAt: d.i64(), Index: d.u8()}
	p.Versioned = d.flag()
	p.CRC, p.Data = d.u32(), d.bytes()
	return p
}

// putPiecesHeader is the size of a PutPieces payload's count.
const putPiecesHeader = 4

// encodePutPieces is a PutPieces payload (tests and fuzz seeds; the write
// path appends pieces to a pieceDest directly).
func encodePutPieces(pieces []piece) enc { return encodeList(pieces) }

func decodePutPieces(b []byte) ([]piece, error) { return decodeList(b, readPiece) }

// A PutPieces reply has one refusal per piece, in order: empty when the
// piece was stored, else why not.
func encodePutPiecesResp(refusals []string) enc {
	var e enc
	for _, r := range refusals {
		e = e.str(r)
	}
	return e
}

func decodePutPiecesResp(b []byte, count int) ([]string, error) {
	d := dec{b: b}
	out := make([]string, count)
	for i := range out {
		out[i] = d.str()
	}
	return out, d.done()
}

// pieceRef names a piece. To a release (msgDelPiece) an unversioned ref
// means every replica of the key in that scheme up to Version, or with Exact
// only the replica of that very version. A read with HasIndex wants the
// shard of that index only: a node that stands in for another position
// (cluster.Map.Holders) may still hold the shard of its former one, which
// must read as missing, not as this one.
//
// It is a kind.PieceRef with its wire encoding and store key.
type pieceRef kind.PieceRef

func (r pieceRef) encode(e enc) enc {
	return e.bytes(r.Key).u16(r.Scheme).u64(r.Version).u8(boolByte(r.Versioned)).u8(boolByte(r.Exact)).
		u8(boolByte(r.HasIndex)).u8(r.Index)
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func decodePieceRef(b []byte) (pieceRef, error) {
	d := dec{b: b}
	r := readPieceRef(&d)
	return r, d.done()
}

// readPieceRef reads one ref; refs are self-delimiting, so a GetPieces
// request is a count and the refs back to back.
func readPieceRef(d *dec) pieceRef {
	r := pieceRef{Key: d.bytes(), Scheme: d.u16(), Version: d.u64()}
	r.Versioned, r.Exact = d.flag(), d.flag()
	r.HasIndex, r.Index = d.flag(), d.u8()
	return r
}

// encodeGetPieces is a GetPieces request: a count and the refs.
func encodeGetPieces(refs []pieceRef) []byte { return encodeList(refs) }

func decodeGetPieces(b []byte) ([]pieceRef, error) { return decodeList(b, readPieceRef) }

// A GetPieces reply has one slot per ref: a status, then the piece's bytes
// (empty unless found).
const (
	pieceFound   uint8 = 0
	pieceMissing uint8 = 1 // gone, another version or another index
	pieceCorrupt uint8 = 2 // fails its checksum
)

// pieceSlot is one slot of a GetPieces reply.
type pieceSlot struct {
	Status uint8
	Data   []byte
}

// encodeGetPiecesResp is a GetPieces reply, as a frame's payload and
// tail: large pieces are sent from where they are (spool).
func encodeGetPiecesResp(slots []pieceSlot) (payload []byte, tail [][]byte) {
	size := 4
	for _, s := range slots {
		size += 1 + binary.MaxVarintLen64
		if len(s.Data) < spoolMin {
			size += len(s.Data)
		}
	}
	sp := spool{cur: make(enc, 0, size).u32(uint32(len(slots)))}
	for _, s := range slots {
		sp.cur = sp.cur.u8(s.Status)
		sp.bytes(s.Data)
	}
	return sp.frame()
}

// decodeGetPiecesResp reads a reply that must have want slots.
func decodeGetPiecesResp(b []byte, want int) ([]pieceSlot, error) {
	d := dec{b: b}
	if count := int(d.u32()); count != want || count > len(b) {
		return nil, errMalformed
	}
	out := make([]pieceSlot, want)
	for i := range out {
		out[i] = pieceSlot{Status: d.u8(), Data: d.bytes()}
		if out[i].Status > pieceCorrupt {
			return nil, errMalformed
		}
	}
	return out, d.done()
}

// forwardReq carries a client command to the key's coordinator; the reply
// is the RESP encoding in the client's protocol version.
type forwardReq struct {
	Proto int
	Args  [][]byte
}

func (f forwardReq) encode(e enc) enc {
	payload, tail := f.spool()
	return append(e, peerReq{payload: payload, tail: tail}.whole()...)
}

// spool is f's encoding as a frame's payload and tail: a large argument
// (a huge SET's value) is sent from the client's request, not copied.
func (f forwardReq) spool() (payload []byte, tail [][]byte) {
	s := spool{cur: enc(nil).u8(uint8(f.Proto)).u32(uint32(len(f.Args)))}
	for _, a := range f.Args {
		s.bytes(a)
	}
	return s.frame()
}

func decodeForward(b []byte) (forwardReq, error) {
	d := dec{b: b}
	f := forwardReq{Proto: int(d.u8())}
	n := int(d.u32())
	if n > len(b) { // every argument takes at least one byte
		return f, errMalformed
	}
	f.Args = make([][]byte, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		f.Args = append(f.Args, d.bytes())
	}
	return f, d.done()
}

// scanReq is one step of a cluster-wide SCAN on one node.
type scanReq struct {
	Cursor uint64
	Count  int
	Match  []byte
	Type   string
}

func (s scanReq) encode(e enc) enc {
	return e.u64(s.Cursor).u32(uint32(s.Count)).bytes(s.Match).str(s.Type)
}

func decodeScan(b []byte) (scanReq, error) {
	d := dec{b: b}
	s := scanReq{Cursor: d.u64(), Count: int(d.u32()), Match: d.bytes(), Type: d.str()}
	return s, d.done()
}

type scanResp struct {
	Next uint64
	Keys [][]byte
}

func (s scanResp) encode(e enc) enc {
	e = e.u64(s.Next).u32(uint32(len(s.Keys)))
	for _, k := range s.Keys {
		e = e.bytes(k)
	}
	return e
}

func decodeScanResp(b []byte) (scanResp, error) {
	d := dec{b: b}
	s := scanResp{Next: d.u64()}
	n := int(d.u32())
	if n > len(b) {
		return s, errMalformed
	}
	for i := 0; i < n && d.err == nil; i++ {
		s.Keys = append(s.Keys, d.bytes())
	}
	return s, d.done()
}
