package server

import (
	"bytes"
	"reflect"
	"testing"
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

// FuzzPeerPayloads: no decoder panics on arbitrary bytes, and whatever
// decodes re-encodes to the same bytes.
func FuzzPeerPayloads(f *testing.F) {
	f.Add([]byte(piece{Key: []byte("k"), Data: []byte("v")}.encode(nil)))
	f.Add([]byte(forwardReq{Proto: 2, Args: [][]byte{[]byte("GET"), []byte("k")}}.encode(nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := decodePiece(b); err == nil && !bytes.Equal(p.encode(nil), b) {
			t.Fatal("piece does not re-encode")
		}
		if r, err := decodePieceRef(b); err == nil && !bytes.Equal(r.encode(nil), b) {
			t.Fatal("ref does not re-encode")
		}
		_, _ = decodeForward(b)
		_, _ = decodeScan(b)
		_, _ = decodeScanResp(b)
	})
}
