package peer

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/memgest/memgest/wire"
)

// joined is a frame's payload and tail in one slice, as the receiver
// reads it.
func joined(payload []byte, tail [][]byte) []byte {
	out := append([]byte(nil), payload...)
	for _, seg := range tail {
		out = append(out, seg...)
	}
	return out
}

func TestPieceAndRefRoundTrip(t *testing.T) {
	p := Piece{Key: []byte("k"), Shard: 513, Scheme: 7, Version: 1 << 60, ExpireAt: -5, Index: 3, Versioned: true, CRC: 0xdeadbeef, Data: []byte("shard")}
	if got, err := DecodePiece(p.Encode(nil)); err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("piece: %+v, %v", got, err)
	}
	r := PieceRef{Key: []byte(""), Shard: 2, Scheme: 1, Version: 9}
	if got, err := DecodePieceRef(r.Encode(nil)); err != nil || !bytes.Equal(got.Key, r.Key) || got.Shard != 2 || got.Version != 9 || got.Versioned {
		t.Fatalf("ref: %+v, %v", got, err)
	}
}

func TestPeerPayloadRefusesTruncationAndTrailingBytes(t *testing.T) {
	full := Piece{Key: []byte("key"), Data: []byte("data")}.Encode(nil)
	for i := 0; i < len(full); i++ {
		if _, err := DecodePiece(full[:i]); err == nil {
			t.Fatalf("truncated piece of %d bytes decoded", i)
		}
	}
	if _, err := DecodePiece(append(full, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

func TestPutPiecesRoundTripsAndRefusesDamage(t *testing.T) {
	pieces := []Piece{
		{Key: []byte("a"), Scheme: 2, Version: 10, Index: 1, CRC: 5, Data: []byte("value")},
		{Key: []byte("b"), Scheme: 3, Version: 11, Index: 4, Versioned: true, Data: nil},
	}
	b := EncodePutPieces(pieces)
	got, err := DecodePutPieces(b)
	if err != nil || len(got) != 2 || string(got[0].Data) != "value" || !got[1].Versioned || got[1].Index != 4 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := 0; i < len(b); i++ {
		if _, err := DecodePutPieces(b[:i]); err == nil {
			t.Fatalf("truncated batch of %d bytes decoded", i)
		}
	}
	if _, err := DecodePutPieces(append(b, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	huge := append(wire.Enc(nil).U32(1<<31), b[4:]...)
	if _, err := DecodePutPieces(huge); err == nil {
		t.Fatal("a count beyond the payload was accepted")
	}
	resp := EncodePutPiecesResp([]string{"", "full"})
	if rs, err := DecodePutPiecesResp(resp, 2); err != nil || rs[0] != "" || rs[1] != "full" {
		t.Fatalf("reply: %q, %v", rs, err)
	}
	if _, err := DecodePutPiecesResp(resp, 3); err == nil {
		t.Fatal("a reply with too few refusals was accepted")
	}
	if _, err := DecodePutPiecesResp(resp, 1); err == nil {
		t.Fatal("a reply with too many refusals was accepted")
	}
}

func TestGetPiecesCodec(t *testing.T) {
	refs := []PieceRef{
		{Key: []byte("a"), Scheme: 2, Version: 9, Versioned: true, HasIndex: true, Index: 3},
		{Key: []byte("bb"), Scheme: 4, Version: 1},
	}
	b := EncodeGetPieces(refs)
	got, err := DecodeGetPieces(b)
	if err != nil || !reflect.DeepEqual(got, refs) {
		t.Fatalf("GetPieces request round trip: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := DecodeGetPieces(b[:i]); err == nil {
			t.Fatalf("a GetPieces request cut at byte %d decoded", i)
		}
	}
	large := bytes.Repeat([]byte("L"), wire.SpoolMin+3) // sent from where it is, not copied
	slots := []PieceSlot{{Status: PieceFound, Data: []byte("shard")}, {Status: PieceFound, Data: large},
		{Status: PieceMissing, Data: []byte{}}, {Status: PieceCorrupt, Data: []byte{}}}
	payload, tail := EncodeGetPiecesResp(slots)
	if len(tail) != 2 || &tail[0][0] != &large[0] {
		t.Fatal("the large slot was copied into the reply")
	}
	rb := joined(payload, tail)
	back, err := DecodeGetPiecesResp(rb, 4)
	if err != nil || !reflect.DeepEqual(back, slots) {
		t.Fatalf("GetPieces reply round trip: %+v, %v", back, err)
	}
	if _, err := DecodeGetPiecesResp(rb, 3); err == nil {
		t.Fatal("a reply with too many slots was accepted")
	}
	bad, _ := EncodeGetPiecesResp([]PieceSlot{{Status: 7}})
	if _, err := DecodeGetPiecesResp(bad, 1); err == nil {
		t.Fatal("a slot of unknown status was accepted")
	}
}

// TestPieceEncodedLen: the redundancy bytes /metrics counts are the bytes
// encode writes, for keys and values whose length prefixes take one, two
// and three bytes.
func TestPieceEncodedLen(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 70000} {
		p := Piece{Key: make([]byte, n%200), Scheme: 7, Version: 9, ExpireAt: -1, Index: 2, Versioned: true, CRC: 5, Data: make([]byte, n)}
		if got, want := p.EncodedLen(), len(p.Encode(nil)); got != want {
			t.Fatalf("encodedLen %d, encode wrote %d (data %d bytes)", got, want, n)
		}
	}
}

// A spool refers to large byte strings instead of copying them, also when
// one spool's payload is added to another's (a commit group merging a
// pipeline's batch), and its segments are the payload enc would make.
func TestSpoolRefersToLargeStrings(t *testing.T) {
	large := bytes.Repeat([]byte("L"), wire.SpoolMin)
	pieces := []Piece{{Key: []byte("a"), Data: []byte("small")}, {Key: []byte("b"), Data: large}, {Key: []byte("c"), Data: []byte("x")}}
	var s, o wire.Spool
	s.Cur = wire.Enc(nil).U32(3)
	o.Cur = wire.Enc(nil).U32(0)
	pieces[0].SpoolTo(&s)
	for _, p := range pieces[1:] {
		p.SpoolTo(&o)
	}
	s.Add(&o, PutPiecesHeader)
	payload, tail := s.Frame()
	refs := 0
	for _, seg := range tail {
		if len(seg) > 0 && &seg[0] == &large[0] {
			refs++
		}
	}
	got := joined(payload, tail)
	if want := EncodePutPieces(pieces); !bytes.Equal(got, want) || refs != 1 || s.Size() != len(want) {
		t.Fatalf("spool payload differs from wire.Enc's (%d vs %d bytes, size %d), %d references to the large string", len(got), len(want), s.Size(), refs)
	}
}

// FuzzPieceMessages: no piece decoder panics on arbitrary bytes, and
// whatever decodes re-encodes to the same bytes.
func FuzzPieceMessages(f *testing.F) {
	f.Add([]byte(Piece{Key: []byte("k"), Data: []byte("v")}.Encode(nil)))
	f.Add([]byte(EncodePutPieces([]Piece{{Key: []byte("a"), Data: []byte("1")}, {Key: []byte("b"), Versioned: true}})))
	f.Add([]byte(EncodePutPiecesResp([]string{"", "refused"})))
	f.Add(EncodeGetPieces([]PieceRef{{Key: []byte("a"), Scheme: 2, Version: 9, Versioned: true, HasIndex: true, Index: 3}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := DecodePiece(b); err == nil && !bytes.Equal(p.Encode(nil), b) {
			t.Fatal("piece does not re-encode")
		}
		if r, err := DecodePieceRef(b); err == nil && !bytes.Equal(r.Encode(nil), b) {
			t.Fatal("ref does not re-encode")
		}
		if ps, err := DecodePutPieces(b); err == nil && !bytes.Equal(EncodePutPieces(ps), b) {
			t.Fatal("PutPieces does not re-encode")
		}
		if rs, err := DecodePutPiecesResp(b, 2); err == nil && !bytes.Equal(EncodePutPiecesResp(rs), b) {
			t.Fatal("PutPieces reply does not re-encode")
		}
		if r, err := DecodeGetPieces(b); err == nil && !bytes.Equal(EncodeGetPieces(r), b) {
			t.Fatal("GetPieces does not re-encode")
		}
		if slots, err := DecodeGetPiecesResp(b, 2); err == nil {
			payload, tail := EncodeGetPiecesResp(slots)
			if !bytes.Equal(joined(payload, tail), b) {
				t.Fatal("GetPieces reply does not re-encode")
			}
		}
	})
}
