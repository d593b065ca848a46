package server

import (
	"encoding/binary"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/wire"
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
	msgStripe                        // chunk updates for a stripe scheme's parity holder (stripe.Engine.OnUpdates)
	msgStripeRead                    // read a data chunk, a parity chunk or an open chunk's copy (stripe.Engine.OnRead)
	msgStripeResync                  // send a list's chunks whole to one parity holder (stripe.Engine.OnResync)
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
	return wire.UvarintLen(uint64(len(p.Key))) + len(p.Key) + fixed + wire.UvarintLen(uint64(len(p.Data))) + len(p.Data)
}

func (p piece) encode(e wire.Enc) wire.Enc { return p.encodeHead(e).Bytes(p.Data) }

// spoolTo appends p to a spool, which refers to a large Data rather than
// copying it.
func (p piece) spoolTo(s *wire.Spool) {
	s.Cur = p.encodeHead(s.Cur)
	s.Bytes(p.Data)
}

// encodeHead appends p's fields but its data.
func (p piece) encodeHead(e wire.Enc) wire.Enc {
	return e.Bytes(p.Key).U16(p.Scheme).U64(p.Version).I64(p.ExpireAt).U8(p.Index).U8(boolByte(p.Versioned)).U32(p.CRC)
}

// inlineLen is what p adds to a spool's own bytes: its encoded length,
// less its data when the spool refers to it.
func (p piece) inlineLen() int {
	if len(p.Data) >= wire.SpoolMin {
		return p.encodedLen() - len(p.Data)
	}
	return p.encodedLen()
}

func decodePiece(b []byte) (piece, error) {
	d := wire.NewDec(b)
	p := readPiece(&d)
	return p, d.Done()
}

// readPiece reads one piece; pieces are self-delimiting, so a PutPieces
// payload is a count and the pieces back to back.
func readPiece(d *wire.Dec) piece {
	p := piece{Key: d.Bytes(), Scheme: d.U16(), Version: d.U64(), ExpireAt: d.I64(), Index: d.U8()}
	p.Versioned = d.Flag()
	p.CRC, p.Data = d.U32(), d.Bytes()
	return p
}

// putPiecesHeader is the size of a PutPieces payload's count.
const putPiecesHeader = 4

// encodePutPieces is a PutPieces payload (tests and fuzz seeds; the write
// path appends pieces to a pieceDest directly).
func encodePutPieces(pieces []piece) wire.Enc { return encodeList(pieces) }

func decodePutPieces(b []byte) ([]piece, error) { return wire.DecodeList(b, readPiece) }

// A PutPieces reply has one refusal per piece, in order: empty when the
// piece was stored, else why not.
func encodePutPiecesResp(refusals []string) wire.Enc {
	var e wire.Enc
	for _, r := range refusals {
		e = e.Str(r)
	}
	return e
}

func decodePutPiecesResp(b []byte, count int) ([]string, error) {
	d := wire.NewDec(b)
	out := make([]string, count)
	for i := range out {
		out[i] = d.Str()
	}
	return out, d.Done()
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

func (r pieceRef) encode(e wire.Enc) wire.Enc {
	return e.Bytes(r.Key).U16(r.Scheme).U64(r.Version).U8(boolByte(r.Versioned)).U8(boolByte(r.Exact)).
		U8(boolByte(r.HasIndex)).U8(r.Index)
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func decodePieceRef(b []byte) (pieceRef, error) {
	d := wire.NewDec(b)
	r := readPieceRef(&d)
	return r, d.Done()
}

// readPieceRef reads one ref; refs are self-delimiting, so a GetPieces
// request is a count and the refs back to back.
func readPieceRef(d *wire.Dec) pieceRef {
	r := pieceRef{Key: d.Bytes(), Scheme: d.U16(), Version: d.U64()}
	r.Versioned, r.Exact = d.Flag(), d.Flag()
	r.HasIndex, r.Index = d.Flag(), d.U8()
	return r
}

// encodeGetPieces is a GetPieces request: a count and the refs.
func encodeGetPieces(refs []pieceRef) []byte { return encodeList(refs) }

func decodeGetPieces(b []byte) ([]pieceRef, error) { return wire.DecodeList(b, readPieceRef) }

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
		if len(s.Data) < wire.SpoolMin {
			size += len(s.Data)
		}
	}
	sp := wire.Spool{Cur: make(wire.Enc, 0, size).U32(uint32(len(slots)))}
	for _, s := range slots {
		sp.Cur = sp.Cur.U8(s.Status)
		sp.Bytes(s.Data)
	}
	return sp.Frame()
}

// decodeGetPiecesResp reads a reply that must have want slots.
func decodeGetPiecesResp(b []byte, want int) ([]pieceSlot, error) {
	d := wire.NewDec(b)
	if count := int(d.U32()); count != want || count > len(b) {
		return nil, wire.ErrMalformed
	}
	out := make([]pieceSlot, want)
	for i := range out {
		out[i] = pieceSlot{Status: d.U8(), Data: d.Bytes()}
		if out[i].Status > pieceCorrupt {
			return nil, wire.ErrMalformed
		}
	}
	return out, d.Done()
}

// forwardReq carries a client command to the key's coordinator; the reply
// is the RESP encoding in the client's protocol version.
type forwardReq struct {
	Proto int
	Args  [][]byte
}

func (f forwardReq) encode(e wire.Enc) wire.Enc {
	payload, tail := f.spool()
	return append(e, peerReq{payload: payload, tail: tail}.whole()...)
}

// spool is f's encoding as a frame's payload and tail: a large argument
// (a huge SET's value) is sent from the client's request, not copied.
func (f forwardReq) spool() (payload []byte, tail [][]byte) {
	s := wire.Spool{Cur: wire.Enc(nil).U8(uint8(f.Proto)).U32(uint32(len(f.Args)))}
	for _, a := range f.Args {
		s.Bytes(a)
	}
	return s.Frame()
}

func decodeForward(b []byte) (forwardReq, error) {
	d := wire.NewDec(b)
	f := forwardReq{Proto: int(d.U8())}
	n := int(d.U32())
	if n > len(b) { // every argument takes at least one byte
		return f, wire.ErrMalformed
	}
	f.Args = make([][]byte, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		f.Args = append(f.Args, d.Bytes())
	}
	return f, d.Done()
}

// scanReq is one step of a cluster-wide SCAN on one node.
type scanReq struct {
	Cursor uint64
	Count  int
	Match  []byte
	Type   string
}

func (s scanReq) encode(e wire.Enc) wire.Enc {
	return e.U64(s.Cursor).U32(uint32(s.Count)).Bytes(s.Match).Str(s.Type)
}

func decodeScan(b []byte) (scanReq, error) {
	d := wire.NewDec(b)
	s := scanReq{Cursor: d.U64(), Count: int(d.U32()), Match: d.Bytes(), Type: d.Str()}
	return s, d.Done()
}

type scanResp struct {
	Next uint64
	Keys [][]byte
}

func (s scanResp) encode(e wire.Enc) wire.Enc {
	e = e.U64(s.Next).U32(uint32(len(s.Keys)))
	for _, k := range s.Keys {
		e = e.Bytes(k)
	}
	return e
}

func decodeScanResp(b []byte) (scanResp, error) {
	d := wire.NewDec(b)
	s := scanResp{Next: d.U64()}
	n := int(d.U32())
	if n > len(b) {
		return s, wire.ErrMalformed
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		s.Keys = append(s.Keys, d.Bytes())
	}
	return s, d.Done()
}

// encodeList is wire.EncodeList for items that encode themselves.
func encodeList[T interface{ encode(wire.Enc) wire.Enc }](items []T) wire.Enc {
	return wire.EncodeList(items, func(e wire.Enc, x T) wire.Enc { return x.encode(e) })
}
