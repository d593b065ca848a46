package stripe

import (
	"github.com/memgest/memgest/wire"
)

// holderUpdate is one chunk update for one parity holder: the update and
// the holder's parity position in the chunk's list.
type holderUpdate struct {
	J int
	U Update
}

func (s holderUpdate) encode(e wire.Enc) wire.Enc {
	u := s.U
	return e.U8(uint8(s.J)).U16(u.Chunk.List).U8(u.Chunk.Position).U32(u.Chunk.Stripe).
		U32(u.Seq).U32(u.Base).U8(uint8(u.Kind)).U32(uint32(u.Offset)).Bytes(u.Bytes).U32(u.CRC).Flag(u.Sealed)
}

func readHolderUpdate(d *wire.Dec) holderUpdate {
	s := holderUpdate{J: int(d.U8())}
	s.U.Chunk = ChunkID{List: d.U16(), Position: d.U8(), Stripe: d.U32()}
	s.U.Seq, s.U.Base, s.U.Kind = d.U32(), d.U32(), UpdateKind(d.U8())
	s.U.Offset, s.U.Bytes, s.U.CRC, s.U.Sealed = int(d.U32()), d.Bytes(), d.U32(), d.Flag()
	return s
}

// encodedLen is len(s.encode(nil)).
func (s holderUpdate) encodedLen() int {
	const fixed = 1 + 2 + 1 + 4 + 4 + 4 + 1 + 4 + 4 + 1
	return fixed + wire.UvarintLen(uint64(len(s.U.Bytes))) + len(s.U.Bytes)
}

// encodeUpdates is a msgStripe payload: the scheme id, then the
// updates as a list, encoded into a buffer of the right size at once.
func encodeUpdates(schemeID uint16, ups []holderUpdate) wire.Enc {
	size := 2 + 4
	for _, u := range ups {
		size += u.encodedLen()
	}
	e := make(wire.Enc, 0, size).U16(schemeID).U32(uint32(len(ups)))
	for _, u := range ups {
		e = u.encode(e)
	}
	return e
}

// frameMax bounds the updates one msgStripe frame carries: a huge
// object makes a chunk update per chunk it fills (131,072 of them for
// 512 MiB in 4 KiB chunks), and a holder applies a frame's updates on its
// connection's read loop, so a frame of them all held that connection, and
// whatever frames were behind it, for seconds (issue 23).
const frameMax = 1 << 20

// cutFrames cuts ups into runs whose frames stay within max bytes (a
// run has one update at least).
func cutFrames(ups []holderUpdate, max int) [][]holderUpdate {
	var out [][]holderUpdate
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

func decodeUpdates(b []byte) (uint16, []holderUpdate, error) {
	d := wire.NewDec(b)
	id := d.U16()
	if d.Err() != nil {
		return 0, nil, d.Err()
	}
	ups, err := wire.DecodeList(d.Rest(), readHolderUpdate)
	return id, ups, err
}

// holderAck is a holder's answer to one update: its outcome and the seq
// through which the chunk's updates are all applied there, or why it was
// refused.
type holderAck struct {
	Outcome Outcome
	Through uint32
	Refusal string
}

func (a holderAck) encode(e wire.Enc) wire.Enc {
	return e.U8(uint8(a.Outcome)).U32(a.Through).Str(a.Refusal)
}

func readAck(d *wire.Dec) holderAck {
	return holderAck{Outcome: Outcome(d.U8()), Through: d.U32(), Refusal: d.Str()}
}

func decodeAcks(b []byte, count int) ([]holderAck, error) {
	acks, err := wire.DecodeList(b, readAck)
	if err == nil && len(acks) != count {
		return nil, wire.ErrMalformed
	}
	return acks, err
}

// What a msgStripeRead asks for.
const (
	readDataChunk   uint8 = iota + 1 // a data chunk, by id, from its coordinator
	readParityChunk                  // a stripe's parity chunk, from a parity holder
	readImage                        // a parity holder's copy of an open chunk
	readPositions                    // which stripes a data position has state in, at a parity holder
	readBackups                      // a parity holder's backups of a data position's updates, every stripe (a holderUpdate list)
	readDataRange                    // a page of a coordinator's data chunks at a position, from a stripe number on (a rangedChunk list)
	readParityRange                  // a page of a parity holder's parity chunks of a list, from a stripe number on (a rangedChunk list)
	readCopyRange                    // a page of a replica holder's copies of a data position's sealed chunks, from a stripe number on (a rangedChunk list)
)

// rangePage is how many chunks one range read returns at most;
// fewer says the range is done.
const rangePage = 256

// rangedChunk is one chunk of a range read: its stripe number and the
// chunk as readDataChunk or readParityChunk would give it.
type rangedChunk struct {
	Stripe uint32
	Chunk  chunkReply
}

func (r rangedChunk) encode(e wire.Enc) wire.Enc { return r.Chunk.encode(e.U32(r.Stripe)) }

func readRangedChunk(d *wire.Dec) rangedChunk {
	r := rangedChunk{Stripe: d.U32()}
	r.Chunk = readChunkReply(d)
	return r
}

// readReq is a msgStripeRead request.
type readReq struct {
	Scheme uint16
	What   uint8
	Chunk  ChunkID // for parity, the position is ignored
}

func (r readReq) encode(e wire.Enc) wire.Enc {
	return e.U16(r.Scheme).U8(r.What).U16(r.Chunk.List).U8(r.Chunk.Position).U32(r.Chunk.Stripe)
}

func decodeReadReq(b []byte) (readReq, error) {
	d := wire.NewDec(b)
	r := readReq{Scheme: d.U16(), What: d.U8()}
	r.Chunk = ChunkID{List: d.U16(), Position: d.U8(), Stripe: d.U32()}
	if d.Err() == nil && (r.What < readDataChunk || r.What > readCopyRange) {
		d.Fail()
	}
	return r, d.Done()
}

// chunkReply is a msgStripeRead reply: the bytes if the node holds them;
// for a data chunk whether it is sealed and its last seq, for a copy its
// seq; for a parity chunk the holder's parity position and, per data
// position, the seq its updates are applied through and whether it is
// sealed into the parity.
type chunkReply struct {
	Found, Sealed bool
	J             uint8
	Seq           uint32
	Bytes         []byte
	Through       []uint32
	SealedAt      []bool
}

func (c chunkReply) encode(e wire.Enc) wire.Enc {
	e = e.Flag(c.Found).Flag(c.Sealed).U8(c.J).U32(c.Seq).Bytes(c.Bytes).U8(uint8(len(c.Through)))
	for i, t := range c.Through {
		e = e.U32(t).Flag(c.SealedAt[i])
	}
	return e
}

func decodeChunkReply(b []byte) (chunkReply, error) {
	d := wire.NewDec(b)
	c := readChunkReply(&d)
	return c, d.Done()
}

func readChunkReply(d *wire.Dec) chunkReply {
	c := chunkReply{Found: d.Flag(), Sealed: d.Flag(), J: d.U8(), Seq: d.U32(), Bytes: d.Bytes()}
	for range int(d.U8()) {
		c.Through, c.SealedAt = append(c.Through, d.U32()), append(c.SealedAt, d.Flag())
	}
	return c
}

// encodePositions is a readPositions reply: each stripe's state of the
// position and, from the list's first parity holder, its manifest.
func encodePositions(ps []PositionState) wire.Enc {
	e := wire.Enc(nil).U32(uint32(len(ps)))
	for _, p := range ps {
		e = e.U32(p.Stripe).U32(p.Through).Flag(p.Sealed).Flag(p.Open).Flag(p.HasManifest).Bytes(p.Manifest)
	}
	return e
}

func decodePositions(b []byte) ([]PositionState, error) {
	return wire.DecodeList(b, func(d *wire.Dec) PositionState {
		p := PositionState{Stripe: d.U32(), Through: d.U32(), Sealed: d.Flag(), Open: d.Flag(), HasManifest: d.Flag(), Manifest: d.Bytes()}
		if len(p.Manifest) == 0 {
			p.Manifest = nil
		}
		return p
	})
}
