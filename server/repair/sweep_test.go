package repair

import (
	"bytes"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/wire"
)

// TestAuditCodec: the audit request and reply survive the wire, and a
// truncated request is refused.
func TestAuditCodec(t *testing.T) {
	in := []AuditItem{{Key: []byte("a"), Shard: 7, Scheme: 3, Version: 9, Kind: core.PieceKindShard, Index: 2}, {Key: []byte("b"), Version: 1}}
	b := encodeAuditItems(in)
	got, err := wire.DecodeList(b, readAuditItem)
	if err != nil || len(got) != 2 || string(got[0].Key) != "a" || got[0].Shard != 7 || got[0].Index != 2 || got[1].Version != 1 {
		t.Fatalf("audit round trip: %+v, %v", got, err)
	}
	for i := range b {
		if _, err := wire.DecodeList(b[:i], readAuditItem); err == nil {
			t.Fatalf("an audit request cut at byte %d decoded", i)
		}
	}
}

// TestShardLeft: a holder drops, without asking, the pieces of a shard its
// map says no longer keeps their key's slot (retired, or the slot
// migrated to another shard), and keeps those of a shard that keeps it
// (an importing shard's range included) or that its map does not know
// yet (decision 0016).
func TestShardLeft(t *testing.T) {
	m := testMap(t, 6).Clone()
	key := []byte("k")
	slot := keyslot.Of(key)
	home := m.ShardOf(slot)
	imp := cluster.Shard{ID: len(m.Shards), First: slot, Last: slot, Importing: true, From: home.ID, Placement: home.Placement}
	m.Shards = append(m.Shards, imp)
	cases := []struct {
		name  string
		shard uint16
		left  bool
	}{
		{"the shard the slot is in", uint16(home.ID), false},
		{"the shard importing the slot", uint16(imp.ID), false},
		{"a shard the map does not know yet", uint16(len(m.Shards)), false},
		{"another shard", uint16((home.ID + 1) % imp.ID), true},
	}
	for _, c := range cases {
		if got := shardLeft(m.ShardByID(int(c.shard)), key); got != c.left {
			t.Errorf("%s: left %v, want %v", c.name, got, c.left)
		}
	}
	// The migration ends: the source shrinks past the slot, or retires.
	m.Shards[imp.ID].Importing = false
	if home.First == slot && home.Last == slot {
		m.Shards[home.ID].Retired = true
	} else if home.First == slot {
		m.Shards[home.ID].First = slot + 1
	} else {
		m.Shards[home.ID].Last = slot - 1
	}
	if !shardLeft(m.ShardByID(home.ID), key) {
		t.Error("the source's pieces of a slot it no longer keeps are kept")
	}
	if shardLeft(m.ShardByID(imp.ID), key) {
		t.Error("the importer's pieces are dropped after the migration")
	}
	m.Shards[imp.ID].Retired = true
	if !shardLeft(m.ShardByID(imp.ID), key) {
		t.Error("a retired shard's pieces are kept")
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
