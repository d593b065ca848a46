package server

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
)

func TestPeerPayloadRoundTrips(t *testing.T) {
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

func TestListPiecesCodecAndPieceKeys(t *testing.T) {
	resp := listResp{Next: 9, Entries: []pieceEntry{
		{Key: []byte("a"), Scheme: 2, Version: 5, Index: 1, ExpireAt: 77},
		{Key: []byte("b"), Scheme: 3, Version: 6, Kind: core.PieceKindShard, Index: 4},
		{Key: []byte("c"), Scheme: 5, Version: 8, Kind: core.PieceKindDirectory},
	}}
	got, err := decodeListResp(resp.encode(nil))
	if err != nil || !reflect.DeepEqual(got, resp) {
		t.Fatalf("list reply: %+v, %v", got, err)
	}
	req := listReq{First: 10, Last: 20, Cursor: 3}
	if r, err := decodeListReq(req.encode(nil)); err != nil || r != req {
		t.Fatalf("list request: %+v, %v", r, err)
	}
	for _, ref := range []peer.PieceRef{
		{Key: []byte("k"), Scheme: 7},
		{Key: []byte("key"), Scheme: 9, Versioned: true, Version: 1 << 62},
		{Key: []byte{}, Scheme: 1},
	} {
		back, _, ok := core.ParsePieceKey(core.StoreKey(ref))
		if !ok || !bytes.Equal(back.Key, ref.Key) || back.Scheme != ref.Scheme || back.Versioned != ref.Versioned || back.Version != ref.Version {
			t.Fatalf("piece key of %+v parsed as %+v, %v", ref, back, ok)
		}
	}
	if _, _, ok := core.ParsePieceKey([]byte{0, 1, 1, 0}); ok {
		t.Fatal("a versioned piece key too short for its version parsed")
	}
	if back, kind, ok := core.ParsePieceKey(core.DirKey(nil, []byte("dk"))); !ok || kind != core.PieceKindDirectory || string(back.Key) != "dk" {
		t.Fatalf("directory key parsed as %+v kind %d, %v", back, kind, ok)
	}
	if _, _, ok := core.ParsePieceKey([]byte{0, 1, 3, 'k'}); ok {
		t.Fatal("a piece key of unknown kind parsed")
	}
	bad := listResp{Entries: []pieceEntry{{Key: []byte("x"), Kind: 9}}}
	if _, err := decodeListResp(bad.encode(nil)); err == nil {
		t.Fatal("a list entry of unknown kind decoded")
	}
}

func TestDirectoryCodec(t *testing.T) {
	in := []core.DirEntry{
		{Key: []byte("a"), Scheme: 4, Version: 9, ExpireAt: 123},
		{Key: []byte("b"), Version: 10, Kind: core.DirTombstone},
		{Key: []byte("c"), Version: 11, Kind: core.DirPurge},
	}
	b := core.EncodeDirectory(in)
	got, err := core.DecodeDirectory(b)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("directory round trip: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := core.DecodeDirectory(b[:i]); err == nil {
			t.Fatalf("a directory message cut at byte %d decoded", i)
		}
	}
	if _, err := core.DecodeDirectory(append(b, 0)); err == nil {
		t.Fatal("a directory message with a trailing byte decoded")
	}
}

// FuzzPeerPayloads: no decoder panics on arbitrary bytes, and whatever
// decodes re-encodes to the same bytes.
func FuzzPeerPayloads(f *testing.F) {
	f.Add(core.EncodeDirectory([]core.DirEntry{{Key: []byte("d"), Scheme: 2, Version: 3}, {Key: []byte("t"), Version: 4, Kind: core.DirTombstone}}))
	f.Add(encodeAudit("holder", []auditItem{{Key: []byte("a"), Scheme: 1, Version: 2, Kind: core.PieceKindShard, Index: 1}}))
	f.Add([]byte(forwardReq{Proto: 2, Args: [][]byte{[]byte("GET"), []byte("k")}}.encode(nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeListResp(b); err == nil && !bytes.Equal(r.encode(nil), b) {
			t.Fatal("ListPieces reply does not re-encode")
		}
		if d, err := core.DecodeDirectory(b); err == nil && !bytes.Equal(core.EncodeDirectory(d), b) {
			t.Fatal("Directory does not re-encode")
		}
		if h, items, err := decodeAudit(b); err == nil && !bytes.Equal(encodeAudit(h, items), b) {
			t.Fatal("Audit does not re-encode")
		}
		_, _ = decodeListReq(b)
		_, _, _ = core.ParsePieceKey(b)
		_, _ = decodeHeartbeat(b)
		_, _ = decodeForward(b)
		_, _ = decodeScan(b)
		_, _ = decodeScanResp(b)
	})
}
