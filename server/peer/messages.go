// Package peer is the node's peer protocol: the frame types of the
// messages nodes send each other, and the codecs of the payloads the
// coordinator core and the repair path share (pieces, their references,
// PutPieces and GetPieces). A payload is built with package wire; the
// messages of one concern only (a scheme engine's, the directory's, the
// sweep's) keep their codecs with that concern.
package peer

import (
	"encoding/binary"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/wire"
)

// Peer message types (transport.Frame.Type). Payload layouts are the
// encode/decode pairs below; docs/transport.md lists them under "Peer
// messages".
const (
	MsgPutPieces    uint8 = iota + 1 // store redundancy pieces (one or many writes')
	MsgGetPiece                      // read one piece (split gathers)
	MsgDelPiece                      // release pieces of a key up to a version
	MsgForward                       // run a client command on its coordinator
	MsgJoin                          // ask the leader to add a node
	MsgPropose                       // ask the leader to apply a map command
	MsgStats                         // per-scheme counts and bytes of a node
	MsgScan                          // one SCAN step over a node's coordinated keys
	MsgFlush                         // drop every key and piece of a node
	MsgHeartbeat                     // a node reports to the Raft leader (server/failure.go)
	MsgListPieces                    // one page of the pieces held for a slot range (server/repair/recover.go)
	MsgDirectory                     // key directory entries for a node to keep (server/core/directory.go)
	MsgRepair                        // a holder found a corrupt piece of a key: store its pieces again (server/repair/scrub.go)
	MsgGetPieces                     // read many pieces at once (bulk split rebuild, server/repair/rebuild.go)
	MsgAudit                         // which of these pieces are garbage? (the sweep, server/repair/sweep.go)
	MsgStripe                        // chunk updates for a stripe scheme's parity holder (stripe.Engine.OnUpdates)
	MsgStripeRead                    // read a data chunk, a parity chunk or an open chunk's copy (stripe.Engine.OnRead)
	MsgStripeResync                  // send a list's chunks whole to one parity holder (stripe.Engine.OnResync)
	MsgStripeBatch                   // put, read, list or free batch stripes' pieces (stripe.Engine.OnBatch)
	MsgPublish                       // PUBLISH messages for a node's subscribers, in order (server/commands/pubsub_bus.go)
	MsgTx                            // WATCH's versions, or a whole transaction run at EXEC, on its slot's coordinator (server/commands/tx_remote.go)
	MsgMigrate                       // a key moving to the shard importing its slot (server/commands/migrate.go)
	MsgHolds                         // which of these keys does the node coordinate? (a migration's recovery, server/repair/reconcile.go)
	MsgStripeRepair                  // sound bytes for a holder's copy or parity chunk the scrub found differing (stripe.Engine.OnRepair)
)

// Piece is one unit of redundancy stored on a node: a replica of a value or
// one shard of a split object. Versioned pieces (split) are stored under
// their version so that the committed version stays readable while a newer
// one is being written (Ring §5.2 keeps old versions until the new commits).
//
// It is a kind.Piece with its wire encoding.
type Piece kind.Piece

// EncodedLen is len(p.Encode(nil)), without encoding: the fixed fields
// (shard, scheme, version, expiry, index, flag, CRC) and the two length-prefixed
// byte strings.
func (p Piece) EncodedLen() int {
	const fixed = 2 + 2 + 8 + 8 + 1 + 1 + 4
	return wire.UvarintLen(uint64(len(p.Key))) + len(p.Key) + fixed + wire.UvarintLen(uint64(len(p.Data))) + len(p.Data)
}

// Encode appends p's encoding to e.
func (p Piece) Encode(e wire.Enc) wire.Enc { return p.encodeHead(e).Bytes(p.Data) }

// SpoolTo appends p to a spool, which refers to a large Data rather than
// copying it.
func (p Piece) SpoolTo(s *wire.Spool) {
	s.Cur = p.encodeHead(s.Cur)
	s.Bytes(p.Data)
}

// encodeHead appends p's fields but its data.
func (p Piece) encodeHead(e wire.Enc) wire.Enc {
	return e.Bytes(p.Key).U16(p.Shard).U16(p.Scheme).U64(p.Version).I64(p.ExpireAt).U8(p.Index).Flag(p.Versioned).U32(p.CRC)
}

// InlineLen is what p adds to a spool's own bytes: its encoded length,
// less its data when the spool refers to it.
func (p Piece) InlineLen() int {
	if len(p.Data) >= wire.SpoolMin {
		return p.EncodedLen() - len(p.Data)
	}
	return p.EncodedLen()
}

// DecodePiece reads one piece that is the whole of b.
func DecodePiece(b []byte) (Piece, error) {
	d := wire.NewDec(b)
	p := readPiece(&d)
	return p, d.Done()
}

// readPiece reads one piece; pieces are self-delimiting, so a PutPieces
// payload is a count and the pieces back to back.
func readPiece(d *wire.Dec) Piece {
	p := Piece{Key: d.Bytes(), Shard: d.U16(), Scheme: d.U16(), Version: d.U64(), ExpireAt: d.I64(), Index: d.U8()}
	p.Versioned = d.Flag()
	p.CRC, p.Data = d.U32(), d.Bytes()
	return p
}

// PutPiecesHeader is the size of a PutPieces payload's count.
const PutPiecesHeader = 4

// EncodePutPieces is a PutPieces payload (tests and fuzz seeds; the write
// path appends pieces to a pieceDest directly).
func EncodePutPieces(pieces []Piece) wire.Enc {
	return wire.EncodeList(pieces, func(e wire.Enc, p Piece) wire.Enc { return p.Encode(e) })
}

// DecodePutPieces reads a PutPieces payload.
func DecodePutPieces(b []byte) ([]Piece, error) { return wire.DecodeList(b, readPiece) }

// A PutPieces reply has one refusal per piece, in order: empty when the
// piece was stored, else why not.
func EncodePutPiecesResp(refusals []string) wire.Enc {
	var e wire.Enc
	for _, r := range refusals {
		e = e.Str(r)
	}
	return e
}

// DecodePutPiecesResp reads a PutPieces reply that must have count
// refusals.
func DecodePutPiecesResp(b []byte, count int) ([]string, error) {
	d := wire.NewDec(b)
	out := make([]string, count)
	for i := range out {
		out[i] = d.Str()
	}
	return out, d.Done()
}

// PieceRef names a piece. To a release (MsgDelPiece) an unversioned ref
// means every replica of the key in that scheme up to Version, or with Exact
// only the replica of that very version. A read with HasIndex wants the
// shard of that index only: a node that stands in for another position
// (cluster.Map.Holders) may still hold the shard of its former one, which
// must read as missing, not as this one.
//
// It is a kind.PieceRef with its wire encoding and store key.
type PieceRef kind.PieceRef

// Encode appends r's encoding to e.
func (r PieceRef) Encode(e wire.Enc) wire.Enc {
	return e.Bytes(r.Key).U16(r.Shard).U16(r.Scheme).U64(r.Version).Flag(r.Versioned).Flag(r.Exact).
		Flag(r.HasIndex).U8(r.Index)
}

// DecodePieceRef reads one ref that is the whole of b.
func DecodePieceRef(b []byte) (PieceRef, error) {
	d := wire.NewDec(b)
	r := readPieceRef(&d)
	return r, d.Done()
}

// readPieceRef reads one ref; refs are self-delimiting, so a GetPieces
// request is a count and the refs back to back.
func readPieceRef(d *wire.Dec) PieceRef {
	r := PieceRef{Key: d.Bytes(), Shard: d.U16(), Scheme: d.U16(), Version: d.U64()}
	r.Versioned, r.Exact = d.Flag(), d.Flag()
	r.HasIndex, r.Index = d.Flag(), d.U8()
	return r
}

// EncodeGetPieces is a GetPieces request: a count and the refs.
func EncodeGetPieces(refs []PieceRef) []byte {
	return wire.EncodeList(refs, func(e wire.Enc, r PieceRef) wire.Enc { return r.Encode(e) })
}

// DecodeGetPieces reads a GetPieces request.
func DecodeGetPieces(b []byte) ([]PieceRef, error) { return wire.DecodeList(b, readPieceRef) }

// A GetPieces reply has one slot per ref: a status, then the piece's bytes
// (empty unless found).
const (
	PieceFound   uint8 = 0
	PieceMissing uint8 = 1 // gone, another version or another index
	PieceCorrupt uint8 = 2 // fails its checksum
)

// PieceSlot is one slot of a GetPieces reply.
type PieceSlot struct {
	Status uint8
	Data   []byte
}

// EncodeGetPiecesResp is a GetPieces reply, as a frame's payload and
// tail: large pieces are sent from where they are (spool).
func EncodeGetPiecesResp(slots []PieceSlot) (payload []byte, tail [][]byte) {
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

// DecodeGetPiecesResp reads a reply that must have want slots.
func DecodeGetPiecesResp(b []byte, want int) ([]PieceSlot, error) {
	d := wire.NewDec(b)
	if count := int(d.U32()); count != want || count > len(b) {
		return nil, wire.ErrMalformed
	}
	out := make([]PieceSlot, want)
	for i := range out {
		out[i] = PieceSlot{Status: d.U8(), Data: d.Bytes()}
		if out[i].Status > PieceCorrupt {
			return nil, wire.ErrMalformed
		}
	}
	return out, d.Done()
}
