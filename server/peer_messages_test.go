package server

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/memgest/memgest/wire"
)

func TestPeerPayloadRoundTrips(t *testing.T) {
	p := piece{Key: []byte("k"), Scheme: 7, Version: 1 << 60, ExpireAt: -5, Index: 3, Versioned: true, CRC: 0xdeadbeef, Data: []byte("shard")}
	if got, err := decodePiece(p.encode(nil)); err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("piece: %+v, %v", got, err)
	}
	r := pieceRef{Key: []byte(""), Scheme: 1, Version: 9}
	if got, err := decodePieceRef(r.encode(nil)); err != nil || !bytes.Equal(got.Key, r.Key) || got.Version != 9 || got.Versioned {
		t.Fatalf("ref: %+v, %v", got, err)
	}
	f := forwardReq{Proto: 3, Args: [][]byte{[]byte("SET"), []byte("k"), {}}}
	if got, err := decodeForward(f.encode(nil)); err != nil || got.Proto != 3 || len(got.Args) != 3 || string(got.Args[0]) != "SET" {
		t.Fatalf("forward: %+v, %v", got, err)
	}
	s := scanResp{Next: 42, Keys: [][]byte{[]byte("a"), []byte("b")}}
	if got, err := decodeScanResp(s.encode(nil)); err != nil || got.Next != 42 || len(got.Keys) != 2 {
		t.Fatalf("scan: %+v, %v", got, err)
	}
	for _, h := range []heartbeatReq{{ID: "n1", Incarnation: 7, Fresh: true}, {ID: "n2", Incarnation: 1 << 62, Restarted: true}} {
		if got, err := decodeHeartbeat(h.encode(nil)); err != nil || got != h {
			t.Fatalf("heartbeat: %+v, %v; want %+v", got, err, h)
		}
	}
}

func TestPeerPayloadRefusesTruncationAndTrailingBytes(t *testing.T) {
	full := piece{Key: []byte("key"), Data: []byte("data")}.encode(nil)
	for i := 0; i < len(full); i++ {
		if _, err := decodePiece(full[:i]); err == nil {
			t.Fatalf("truncated piece of %d bytes decoded", i)
		}
	}
	if _, err := decodePiece(append(full, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

func TestPutPiecesRoundTripsAndRefusesDamage(t *testing.T) {
	pieces := []piece{
		{Key: []byte("a"), Scheme: 2, Version: 10, Index: 1, CRC: 5, Data: []byte("value")},
		{Key: []byte("b"), Scheme: 3, Version: 11, Index: 4, Versioned: true, Data: nil},
	}
	b := encodePutPieces(pieces)
	got, err := decodePutPieces(b)
	if err != nil || len(got) != 2 || string(got[0].Data) != "value" || !got[1].Versioned || got[1].Index != 4 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := 0; i < len(b); i++ {
		if _, err := decodePutPieces(b[:i]); err == nil {
			t.Fatalf("truncated batch of %d bytes decoded", i)
		}
	}
	if _, err := decodePutPieces(append(b, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	huge := append(wire.Enc(nil).U32(1<<31), b[4:]...)
	if _, err := decodePutPieces(huge); err == nil {
		t.Fatal("a count beyond the payload was accepted")
	}
	resp := encodePutPiecesResp([]string{"", "full"})
	if rs, err := decodePutPiecesResp(resp, 2); err != nil || rs[0] != "" || rs[1] != "full" {
		t.Fatalf("reply: %q, %v", rs, err)
	}
	if _, err := decodePutPiecesResp(resp, 3); err == nil {
		t.Fatal("a reply with too few refusals was accepted")
	}
	if _, err := decodePutPiecesResp(resp, 1); err == nil {
		t.Fatal("a reply with too many refusals was accepted")
	}
}

func TestListPiecesCodecAndPieceKeys(t *testing.T) {
	resp := listResp{Next: 9, Entries: []pieceEntry{
		{Key: []byte("a"), Scheme: 2, Version: 5, Index: 1, ExpireAt: 77},
		{Key: []byte("b"), Scheme: 3, Version: 6, Kind: pieceKindShard, Index: 4},
		{Key: []byte("c"), Scheme: 5, Version: 8, Kind: pieceKindDirectory},
	}}
	got, err := decodeListResp(resp.encode(nil))
	if err != nil || !reflect.DeepEqual(got, resp) {
		t.Fatalf("list reply: %+v, %v", got, err)
	}
	req := listReq{First: 10, Last: 20, Cursor: 3}
	if r, err := decodeListReq(req.encode(nil)); err != nil || r != req {
		t.Fatalf("list request: %+v, %v", r, err)
	}
	for _, ref := range []pieceRef{
		{Key: []byte("k"), Scheme: 7},
		{Key: []byte("key"), Scheme: 9, Versioned: true, Version: 1 << 62},
		{Key: []byte{}, Scheme: 1},
	} {
		back, _, ok := parsePieceKey(ref.storeKey())
		if !ok || !bytes.Equal(back.Key, ref.Key) || back.Scheme != ref.Scheme || back.Versioned != ref.Versioned || back.Version != ref.Version {
			t.Fatalf("piece key of %+v parsed as %+v, %v", ref, back, ok)
		}
	}
	if _, _, ok := parsePieceKey([]byte{0, 1, 1, 0}); ok {
		t.Fatal("a versioned piece key too short for its version parsed")
	}
	if back, kind, ok := parsePieceKey(dirKey(nil, []byte("dk"))); !ok || kind != pieceKindDirectory || string(back.Key) != "dk" {
		t.Fatalf("directory key parsed as %+v kind %d, %v", back, kind, ok)
	}
	if _, _, ok := parsePieceKey([]byte{0, 1, 3, 'k'}); ok {
		t.Fatal("a piece key of unknown kind parsed")
	}
	bad := listResp{Entries: []pieceEntry{{Key: []byte("x"), Kind: 9}}}
	if _, err := decodeListResp(bad.encode(nil)); err == nil {
		t.Fatal("a list entry of unknown kind decoded")
	}
}

func TestDirectoryCodec(t *testing.T) {
	in := []dirEntry{
		{Key: []byte("a"), Scheme: 4, Version: 9, ExpireAt: 123},
		{Key: []byte("b"), Version: 10, Kind: dirTombstone},
		{Key: []byte("c"), Version: 11, Kind: dirPurge},
	}
	b := encodeDirectory(in)
	got, err := decodeDirectory(b)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("directory round trip: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := decodeDirectory(b[:i]); err == nil {
			t.Fatalf("a directory message cut at byte %d decoded", i)
		}
	}
	if _, err := decodeDirectory(append(b, 0)); err == nil {
		t.Fatal("a directory message with a trailing byte decoded")
	}
}

func TestGetPiecesCodec(t *testing.T) {
	refs := []pieceRef{
		{Key: []byte("a"), Scheme: 2, Version: 9, Versioned: true, HasIndex: true, Index: 3},
		{Key: []byte("bb"), Scheme: 4, Version: 1},
	}
	b := encodeGetPieces(refs)
	got, err := decodeGetPieces(b)
	if err != nil || !reflect.DeepEqual(got, refs) {
		t.Fatalf("GetPieces request round trip: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := decodeGetPieces(b[:i]); err == nil {
			t.Fatalf("a GetPieces request cut at byte %d decoded", i)
		}
	}
	large := bytes.Repeat([]byte("L"), wire.SpoolMin+3) // sent from where it is, not copied
	slots := []pieceSlot{{Status: pieceFound, Data: []byte("shard")}, {Status: pieceFound, Data: large},
		{Status: pieceMissing, Data: []byte{}}, {Status: pieceCorrupt, Data: []byte{}}}
	payload, tail := encodeGetPiecesResp(slots)
	if len(tail) != 2 || &tail[0][0] != &large[0] {
		t.Fatal("the large slot was copied into the reply")
	}
	rb := peerReq{payload: payload, tail: tail}.whole()
	back, err := decodeGetPiecesResp(rb, 4)
	if err != nil || !reflect.DeepEqual(back, slots) {
		t.Fatalf("GetPieces reply round trip: %+v, %v", back, err)
	}
	if _, err := decodeGetPiecesResp(rb, 3); err == nil {
		t.Fatal("a reply with too many slots was accepted")
	}
	bad, _ := encodeGetPiecesResp([]pieceSlot{{Status: 7}})
	if _, err := decodeGetPiecesResp(bad, 1); err == nil {
		t.Fatal("a slot of unknown status was accepted")
	}
}

// FuzzPeerPayloads: no decoder panics on arbitrary bytes, and whatever
// decodes re-encodes to the same bytes.
func FuzzPeerPayloads(f *testing.F) {
	f.Add([]byte(piece{Key: []byte("k"), Data: []byte("v")}.encode(nil)))
	f.Add([]byte(encodePutPieces([]piece{{Key: []byte("a"), Data: []byte("1")}, {Key: []byte("b"), Versioned: true}})))
	f.Add([]byte(encodePutPiecesResp([]string{"", "refused"})))
	f.Add(encodeDirectory([]dirEntry{{Key: []byte("d"), Scheme: 2, Version: 3}, {Key: []byte("t"), Version: 4, Kind: dirTombstone}}))
	f.Add(encodeAudit("holder", []auditItem{{Key: []byte("a"), Scheme: 1, Version: 2, Kind: pieceKindShard, Index: 1}}))
	f.Add([]byte(forwardReq{Proto: 2, Args: [][]byte{[]byte("GET"), []byte("k")}}.encode(nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := decodePiece(b); err == nil && !bytes.Equal(p.encode(nil), b) {
			t.Fatal("piece does not re-encode")
		}
		if r, err := decodePieceRef(b); err == nil && !bytes.Equal(r.encode(nil), b) {
			t.Fatal("ref does not re-encode")
		}
		if ps, err := decodePutPieces(b); err == nil && !bytes.Equal(encodePutPieces(ps), b) {
			t.Fatal("PutPieces does not re-encode")
		}
		if rs, err := decodePutPiecesResp(b, 2); err == nil && !bytes.Equal(encodePutPiecesResp(rs), b) {
			t.Fatal("PutPieces reply does not re-encode")
		}
		if r, err := decodeListResp(b); err == nil && !bytes.Equal(r.encode(nil), b) {
			t.Fatal("ListPieces reply does not re-encode")
		}
		if r, err := decodeGetPieces(b); err == nil && !bytes.Equal(encodeGetPieces(r), b) {
			t.Fatal("GetPieces does not re-encode")
		}
		if d, err := decodeDirectory(b); err == nil && !bytes.Equal(encodeDirectory(d), b) {
			t.Fatal("Directory does not re-encode")
		}
		if h, items, err := decodeAudit(b); err == nil && !bytes.Equal(encodeAudit(h, items), b) {
			t.Fatal("Audit does not re-encode")
		}
		_, _ = decodeListReq(b)
		_, _, _ = parsePieceKey(b)
		_, _ = decodeHeartbeat(b)
		_, _ = decodeForward(b)
		_, _ = decodeScan(b)
		_, _ = decodeScanResp(b)
	})
}

// TestPieceEncodedLen: the redundancy bytes /metrics counts are the bytes
// encode writes, for keys and values whose length prefixes take one, two
// and three bytes.
func TestPieceEncodedLen(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 70000} {
		p := piece{Key: make([]byte, n%200), Scheme: 7, Version: 9, ExpireAt: -1, Index: 2, Versioned: true, CRC: 5, Data: make([]byte, n)}
		if got, want := p.encodedLen(), len(p.encode(nil)); got != want {
			t.Fatalf("encodedLen %d, encode wrote %d (data %d bytes)", got, want, n)
		}
	}
}

// A spool refers to large byte strings instead of copying them, also when
// one spool's payload is added to another's (a commit group merging a
// pipeline's batch), and its segments are the payload enc would make.
func TestSpoolRefersToLargeStrings(t *testing.T) {
	large := bytes.Repeat([]byte("L"), wire.SpoolMin)
	pieces := []piece{{Key: []byte("a"), Data: []byte("small")}, {Key: []byte("b"), Data: large}, {Key: []byte("c"), Data: []byte("x")}}
	var s, o wire.Spool
	s.Cur = wire.Enc(nil).U32(3)
	o.Cur = wire.Enc(nil).U32(0)
	pieces[0].spoolTo(&s)
	for _, p := range pieces[1:] {
		p.spoolTo(&o)
	}
	s.Add(&o, putPiecesHeader)
	payload, tail := s.Frame()
	refs := 0
	for _, seg := range tail {
		if len(seg) > 0 && &seg[0] == &large[0] {
			refs++
		}
	}
	got := peerReq{payload: payload, tail: tail}.whole()
	if want := encodePutPieces(pieces); !bytes.Equal(got, want) || refs != 1 || s.Size() != len(want) {
		t.Fatalf("spool payload differs from wire.Enc's (%d vs %d bytes, size %d), %d references to the large string", len(got), len(want), s.Size(), refs)
	}
}
