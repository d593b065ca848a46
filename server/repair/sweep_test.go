package repair

import (
	"bytes"
	"testing"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/wire"
)

// TestAuditCodec: the audit request and reply survive the wire, and a
// truncated request is refused.
func TestAuditCodec(t *testing.T) {
	in := []AuditItem{{Key: []byte("a"), Scheme: 3, Version: 9, Kind: core.PieceKindShard, Index: 2}, {Key: []byte("b"), Version: 1}}
	b := encodeAuditItems(in)
	got, err := wire.DecodeList(b, readAuditItem)
	if err != nil || len(got) != 2 || string(got[0].Key) != "a" || got[0].Index != 2 || got[1].Version != 1 {
		t.Fatalf("audit round trip: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := wire.DecodeList(b[:i], readAuditItem); err == nil {
			t.Fatalf("an audit request cut at byte %d decoded", i)
		}
	}
}

// FuzzRepairPayloads: the repair path's decoders (ListPieces, Audit) never
// panic on arbitrary bytes, and whatever decodes re-encodes to the same
// bytes.
func FuzzRepairPayloads(f *testing.F) {
	f.Add(encodeAudit("holder", []AuditItem{{Key: []byte("a"), Scheme: 1, Version: 2, Kind: core.PieceKindShard, Index: 1}}))
	f.Add([]byte(listResp{Next: 3, Entries: []pieceEntry{{Key: []byte("k"), Scheme: 2, Version: 5, Kind: core.PieceKindShard, Index: 1}}}.encode(nil)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeListResp(b); err == nil && !bytes.Equal(r.encode(nil), b) {
			t.Fatal("ListPieces reply does not re-encode")
		}
		if h, items, err := decodeAudit(b); err == nil && !bytes.Equal(encodeAudit(h, items), b) {
			t.Fatal("Audit does not re-encode")
		}
		_, _ = decodeListReq(b)
	})
}
