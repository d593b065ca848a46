package stripe

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzMessages: no stripe message decoder panics on arbitrary bytes, and
// whatever decodes re-encodes to the same bytes.
func FuzzMessages(f *testing.F) {
	f.Add([]byte(encodeUpdates(3, sampleUpdates)))
	f.Add([]byte(sampleChunkReply.encode(nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if id, ups, err := decodeUpdates(b); err == nil && !bytes.Equal(encodeUpdates(id, ups), b) {
			t.Fatal("Stripe does not re-encode")
		}
		if c, err := decodeChunkReply(b); err == nil && !bytes.Equal(c.encode(nil), b) {
			t.Fatal("StripeRead reply does not re-encode")
		}
		if r, err := decodeReadReq(b); err == nil && !bytes.Equal(r.encode(nil), b) {
			t.Fatal("StripeRead does not re-encode")
		}
		if ps, err := decodePositions(b); err == nil && !bytes.Equal(encodePositions(ps), b) {
			t.Fatal("positions do not re-encode")
		}
		if r, err := decodeResyncReq(b); err == nil && !bytes.Equal(r.encode(nil), b) {
			t.Fatal("StripeResync does not re-encode")
		}
	})
}

var sampleUpdates = []holderUpdate{
	{J: 1, U: Update{Chunk: ChunkID{List: 2, Position: 3, Stripe: 9}, Seq: 5, Base: 2, Kind: Delta, Offset: 40, Bytes: []byte("obj")}},
	{J: 0, U: Update{Chunk: ChunkID{List: 2, Position: 3, Stripe: 9}, Seq: 6, Base: 2, Kind: Seal, CRC: 77}},
	{J: 0, U: Update{Chunk: ChunkID{List: 1}, Seq: 7, Kind: Resync, Bytes: make([]byte, 64), Sealed: true}},
}

var sampleChunkReply = chunkReply{Found: true, J: 1, Seq: 4, Bytes: []byte("parity"), Through: []uint32{3, 0}, SealedAt: []bool{true, false}}

// TestMessageCodecs: the stripe messages round-trip and refuse damage.
func TestMessageCodecs(t *testing.T) {
	b := encodeUpdates(3, sampleUpdates)
	id, ups, err := decodeUpdates(b)
	if err != nil || id != 3 || len(ups) != 3 || !bytes.Equal(encodeUpdates(id, ups), b) || ups[2].U.Kind != Resync || !ups[2].U.Sealed {
		t.Fatalf("updates: %d %+v, %v", id, ups, err)
	}
	for i := range b {
		if _, _, err := decodeUpdates(b[:i]); err == nil {
			t.Fatalf("a truncation to %d bytes decoded", i)
		}
	}
	acks := []holderAck{{Outcome: Applied, Through: 4}, {Outcome: Missing, Through: 1}, {Refusal: "bad"}}
	if got, err := decodeAcks(encodeList(acks), 3); err != nil || !reflect.DeepEqual(got, acks) {
		t.Fatalf("acks: %+v, %v", got, err)
	}
	if _, err := decodeAcks(encodeList(acks), 2); err == nil {
		t.Fatal("a reply with another count of acks was accepted")
	}
	c, err := decodeChunkReply(sampleChunkReply.encode(nil))
	if err != nil || !reflect.DeepEqual(c, sampleChunkReply) {
		t.Fatalf("chunk: %+v, %v", c, err)
	}
	r := readReq{Scheme: 4, What: readParityChunk, Chunk: ChunkID{List: 1, Position: 2, Stripe: 3}}
	if got, err := decodeReadReq(r.encode(nil)); err != nil || got != r {
		t.Fatalf("read: %+v, %v", got, err)
	}
	if _, err := decodeReadReq(readReq{What: 9}.encode(nil)); err == nil {
		t.Fatal("an unknown read kind was accepted")
	}
	rs := resyncReq{Scheme: 2, List: 7, J: 1}
	if got, err := decodeResyncReq(rs.encode(nil)); err != nil || got != rs {
		t.Fatalf("resync: %+v, %v", got, err)
	}
	ps := []PositionState{{Stripe: 1, Through: 2, Sealed: true, HasManifest: true, Manifest: []byte{1, 2, 3}},
		{Stripe: 3, Sealed: true, HasManifest: true}, {Stripe: 5, Through: 9, Open: true}}
	if got, err := decodePositions(encodePositions(ps)); err != nil || !reflect.DeepEqual(got, ps) {
		t.Fatalf("positions: %+v, %v", got, err)
	}
}
