package server

import (
	"github.com/memgest/memgest/scheme/stripe"
)

// stripeUpdate is one chunk update for one parity holder: the update and
// the holder's parity position in the chunk's list.
type stripeUpdate struct {
	J int
	U stripe.Update
}

func (s stripeUpdate) encode(e enc) enc {
	u := s.U
	return e.u8(uint8(s.J)).u16(u.Chunk.List).u8(u.Chunk.Position).u32(u.Chunk.Stripe).
		u32(u.Seq).u32(u.Base).u8(uint8(u.Kind)).u32(uint32(u.Offset)).bytes(u.Bytes).u32(u.CRC).u8(boolByte(u.Sealed))
}

func readStripeUpdate(d *dec) stripeUpdate {
	s := stripeUpdate{J: int(d.u8())}
	s.U.Chunk = stripe.ChunkID{List: d.u16(), Position: d.u8(), Stripe: d.u32()}
	s.U.Seq, s.U.Base, s.U.Kind = d.u32(), d.u32(), stripe.UpdateKind(d.u8())
	s.U.Offset, s.U.Bytes, s.U.CRC, s.U.Sealed = int(d.u32()), d.bytes(), d.u32(), d.flag()
	return s
}

// encodedLen is len(s.encode(nil)).
func (s stripeUpdate) encodedLen() int {
	const fixed = 1 + 2 + 1 + 4 + 4 + 4 + 1 + 4 + 4 + 1
	return fixed + uvarintLen(uint64(len(s.U.Bytes))) + len(s.U.Bytes)
}

// encodeStripeUpdates is a msgStripe payload: the scheme id, then the
// updates as a list, encoded into a buffer of the right size at once.
func encodeStripeUpdates(schemeID uint16, ups []stripeUpdate) enc {
	size := 2 + 4
	for _, u := range ups {
		size += u.encodedLen()
	}
	e := make(enc, 0, size).u16(schemeID).u32(uint32(len(ups)))
	for _, u := range ups {
		e = u.encode(e)
	}
	return e
}

// stripeFrameMax bounds the updates one msgStripe frame carries: a huge
// object makes a chunk update per chunk it fills (131,072 of them for
// 512 MiB in 4 KiB chunks), and a holder applies a frame's updates on its
// connection's read loop, so a frame of them all held that connection, and
// whatever frames were behind it, for seconds (issue 23).
const stripeFrameMax = 1 << 20

// stripeFrames cuts ups into runs whose frames stay within max bytes (a
// run has one update at least).
func stripeFrames(ups []stripeUpdate, max int) [][]stripeUpdate {
	var out [][]stripeUpdate
	for len(ups) > 0 {
		n, size := 1, ups[0].encodedLen()
		for n < len(ups) && size+ups[n].encodedLen() <= max {
			size += ups[n].encodedLen()
			n++
		}
		out, ups = append(out, ups[:n:n]), ups[n:]
	}
	return out
}

func decodeStripeUpdates(b []byte) (uint16, []stripeUpdate, error) {
	d := dec{b: b}
	id := d.u16()
	if d.err != nil {
		return 0, nil, d.err
	}
	ups, err := decodeList(d.b, readStripeUpdate)
	return id, ups, err
}

// stripeAck is a holder's answer to one update: its outcome and the seq
// through which the chunk's updates are all applied there, or why it was
// refused.
type stripeAck struct {
	Outcome stripe.Outcome
	Through uint32
	Refusal string
}

func (a stripeAck) encode(e enc) enc {
	return e.u8(uint8(a.Outcome)).u32(a.Through).str(a.Refusal)
}

func readStripeAck(d *dec) stripeAck {
	return stripeAck{Outcome: stripe.Outcome(d.u8()), Through: d.u32(), Refusal: d.str()}
}

func decodeStripeAcks(b []byte, count int) ([]stripeAck, error) {
	acks, err := decodeList(b, readStripeAck)
	if err == nil && len(acks) != count {
		return nil, errMalformed
	}
	return acks, err
}

// What a msgStripeRead asks for.
const (
	readDataChunk   uint8 = iota + 1 // a data chunk, by id, from its coordinator
	readParityChunk                  // a stripe's parity chunk, from a parity holder
	readImage                        // a parity holder's copy of an open chunk
	readPositions                    // which stripes a data position has state in, at a parity holder
	readBackups                      // a parity holder's backups of a data position's updates, every stripe (a stripeUpdate list)
	readDataRange                    // a page of a coordinator's data chunks at a position, from a stripe number on (a rangedChunk list)
	readParityRange                  // a page of a parity holder's parity chunks of a list, from a stripe number on (a rangedChunk list)
)

// stripeRangePage is how many chunks one range read returns at most;
// fewer says the range is done.
const stripeRangePage = 256

// rangedChunk is one chunk of a range read: its stripe number and the
// chunk as readDataChunk or readParityChunk would give it.
type rangedChunk struct {
	Stripe uint32
	Chunk  stripeChunk
}

func (r rangedChunk) encode(e enc) enc { return r.Chunk.encode(e.u32(r.Stripe)) }

func readRangedChunk(d *dec) rangedChunk {
	r := rangedChunk{Stripe: d.u32()}
	r.Chunk = readStripeChunkFrom(d)
	return r
}

// stripeRead is a msgStripeRead request.
type stripeRead struct {
	Scheme uint16
	What   uint8
	Chunk  stripe.ChunkID // for parity, the position is ignored
}

func (r stripeRead) encode(e enc) enc {
	return e.u16(r.Scheme).u8(r.What).u16(r.Chunk.List).u8(r.Chunk.Position).u32(r.Chunk.Stripe)
}

func decodeStripeRead(b []byte) (stripeRead, error) {
	d := dec{b: b}
	r := stripeRead{Scheme: d.u16(), What: d.u8()}
	r.Chunk = stripe.ChunkID{List: d.u16(), Position: d.u8(), Stripe: d.u32()}
	if d.err == nil && (r.What < readDataChunk || r.What > readParityRange) {
		d.err = errMalformed
	}
	return r, d.done()
}

// stripeChunk is a msgStripeRead reply: the bytes if the node holds them;
// for a data chunk whether it is sealed and its last seq, for a copy its
// seq; for a parity chunk the holder's parity position and, per data
// position, the seq its updates are applied through and whether it is
// sealed into the parity.
type stripeChunk struct {
	Found, Sealed bool
	J             uint8
	Seq           uint32
	Bytes         []byte
	Through       []uint32
	SealedAt      []bool
}

func (c stripeChunk) encode(e enc) enc {
	e = e.u8(boolByte(c.Found)).u8(boolByte(c.Sealed)).u8(c.J).u32(c.Seq).bytes(c.Bytes).u8(uint8(len(c.Through)))
	for i, t := range c.Through {
		e = e.u32(t).u8(boolByte(c.SealedAt[i]))
	}
	return e
}

func decodeStripeChunk(b []byte) (stripeChunk, error) {
	d := dec{b: b}
	c := readStripeChunkFrom(&d)
	return c, d.done()
}

func readStripeChunkFrom(d *dec) stripeChunk {
	c := stripeChunk{Found: d.flag(), Sealed: d.flag(), J: d.u8(), Seq: d.u32(), Bytes: d.bytes()}
	for range int(d.u8()) {
		c.Through, c.SealedAt = append(c.Through, d.u32()), append(c.SealedAt, d.flag())
	}
	return c
}

// encodePositions is a readPositions reply: each stripe's state of the
// position and, from the list's first parity holder, its manifest.
func encodePositions(ps []stripe.PositionState) enc {
	e := enc(nil).u32(uint32(len(ps)))
	for _, p := range ps {
		e = e.u32(p.Stripe).u32(p.Through).u8(boolByte(p.Sealed)).u8(boolByte(p.Open)).u8(boolByte(p.HasManifest)).bytes(p.Manifest)
	}
	return e
}

func decodePositions(b []byte) ([]stripe.PositionState, error) {
	return decodeList(b, func(d *dec) stripe.PositionState {
		p := stripe.PositionState{Stripe: d.u32(), Through: d.u32(), Sealed: d.flag(), Open: d.flag(), HasManifest: d.flag(), Manifest: d.bytes()}
		if len(p.Manifest) == 0 {
			p.Manifest = nil
		}
		return p
	})
}
