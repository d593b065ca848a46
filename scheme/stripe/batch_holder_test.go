package stripe

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memgest/memgest/wire"
)

func putReq(serial uint64, role uint8, lens []uint32, b []byte) []byte {
	return encodeBatchPuts(3, 1, []batchPutReq{{Key: batchPieceKey{scheme: 3, shard: 1, serial: serial, role: role}, Lens: lens, Bytes: b}}, nil)
}

// TestBatchPiecesPutReadListFree: a holder stores a piece once put, reads
// ranges of it zero-padded past its end, lists a shard's pieces in serial
// order a page at a time, and drops freed stripes.
func TestBatchPiecesPutReadListFree(t *testing.T) {
	var h batchPieces
	lens := []uint32{5, 3}
	for _, serial := range []uint64{4, 2, 9, 3} {
		if _, err := serveBatch(&h, putReq(serial, 1, lens, []byte("abc"))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := serveBatch(&h, putReq(9, 2, lens, []byte("PQRST"))); err != nil { // parity: as long as the longest
		t.Fatal(err)
	}
	got, err := serveBatch(&h, batchReadReq{Key: batchPieceKey{scheme: 3, shard: 1, serial: 4, role: 1}, Offset: 1, Length: 4}.encode(nil))
	if err != nil || !bytes.Equal(got, []byte("bc\x00\x00")) {
		t.Fatalf("read: %q, %v", got, err)
	}
	if _, err := serveBatch(&h, batchReadReq{Key: batchPieceKey{scheme: 3, shard: 1, serial: 5, role: 1}, Length: 1}.encode(nil)); !errors.Is(err, ErrNoBatchPiece) {
		t.Fatalf("read of an absent piece: %v", err)
	}
	list := func(from uint64) []batchListed {
		b, err := serveBatch(&h, encodeBatchList(3, 1, from, false))
		if err != nil {
			t.Fatal(err)
		}
		ls, err := wire.DecodeList(b, readBatchListed)
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	var serials []uint64
	for _, l := range list(3) {
		serials = append(serials, l.Serial)
	}
	if want := []uint64{3, 4, 9, 9}; !equalU64(serials, want) {
		t.Fatalf("listed %v, want %v", serials, want)
	}
	if _, err := serveBatch(&h, encodeBatchFree(3, 1, []uint64{4, 9, 77})); err != nil {
		t.Fatal(err)
	}
	serials = serials[:0]
	for _, l := range list(0) {
		serials = append(serials, l.Serial)
	}
	if want := []uint64{2, 3}; !equalU64(serials, want) || h.bytes != 2*(3+8) {
		t.Fatalf("after the free: %v (%d bytes), want %v", serials, h.bytes, want)
	}
	if len(list(0)) != 2 || len(h.list(3, 2, 0, 10, false)) != 0 {
		t.Error("another shard's list is not empty")
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBatchPiecesRefuseBadInput: a holder refuses, and stores nothing
// for, a piece whose length disagrees with its stripe's lengths, an
// unknown operation, a truncated request or an oversized read.
func TestBatchPiecesRefuseBadInput(t *testing.T) {
	var h batchPieces
	for name, req := range map[string][]byte{
		"data piece too short": putReq(1, 0, []uint32{5, 3}, []byte("abc")),
		"parity too long":      putReq(1, 2, []uint32{5, 3}, []byte("abcdefg")),
		"no chunk lengths":     putReq(1, 0, nil, nil),
		"chunk over 1 MiB":     putReq(1, 0, []uint32{MaxChunkSize + 1}, nil),
		"truncated":            putReq(1, 0, []uint32{3}, []byte("abc"))[:10],
		"trailing bytes":       append(putReq(1, 0, []uint32{3}, []byte("abc")), 0),
		"unknown operation":    {99, 0, 0},
		"empty":                {},
		"read over 1 MiB":      batchReadReq{Key: batchPieceKey{serial: 1}, Length: maxBatchRead + 1}.encode(nil),
		"free count too large": append(wire.Enc(nil).U8(batchFree).U16(3).U16(1), 0xff, 0xff, 0xff, 0xff),
	} {
		if _, err := serveBatch(&h, req); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if h.bytes != 0 || len(h.list(3, 1, 0, 10, false)) != 0 {
		t.Errorf("bad input stored something: %d bytes", h.bytes)
	}
}

// TestMarksRoundTrip: dead marks encode grouped by stripe and decode to
// the same set; truncated or oversized input is refused.
func TestMarksRoundTrip(t *testing.T) {
	var ms []seqMark
	for i, m := range []deadMark{{serial: 9, chunk: 1, offset: 300}, {serial: 2, chunk: 0, offset: 0}, {serial: 9, chunk: 3, offset: 4000}, {serial: 1 << 40, chunk: 2, offset: 77}} {
		ms = append(ms, seqMark{seq: uint64(i + 1), mark: m})
	}
	b := encodeMarks(ms)
	got, err := decodeMarks(b)
	if err != nil || len(got) != len(ms) {
		t.Fatalf("decoded %v, %v", got, err)
	}
	want := map[markedAt]bool{}
	for _, m := range ms {
		want[markedAt{serial: m.mark.serial, chunk: uint8(m.mark.chunk), offset: uint32(m.mark.offset)}] = true
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("decoded a mark not sent: %+v", g)
		}
	}
	if len(b) >= 13*len(ms) {
		t.Errorf("%d marks take %d bytes: no smaller than unpacked", len(ms), len(b))
	}
	for cut := range len(b) {
		if _, err := decodeMarks(b[:cut]); err == nil && cut > 4 {
			t.Errorf("a truncation to %d bytes decoded", cut)
		}
	}
	if _, err := decodeMarks([]byte{0xff, 0xff, 0xff, 0xff}); err == nil {
		t.Error("a huge group count decoded")
	}
}
