package repair

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
)

func TestJudgeWeighsTheDirectoryAgainstReadableVersions(t *testing.T) {
	m := testMap(t, 4)
	rep, split := schemeID(t, m, "rep:3"), schemeID(t, m, "split:2+1")
	replica := &candidate{scheme: rep, version: 5, shards: map[uint8]bool{1: true}}
	twoShards := &candidate{scheme: split, version: 7, shards: map[uint8]bool{0: true, 2: true}}
	oneShard := &candidate{scheme: split, version: 9, shards: map[uint8]bool{1: true}}
	// lostShards: one shard left, the others' nodes failed; a commit left it complete.
	lostShards := &candidate{scheme: split, version: 9, shards: map[uint8]bool{1: true}, complete: true}
	completeReplica := &candidate{scheme: rep, version: 5, shards: map[uint8]bool{1: true}, complete: true}
	dir := func(s uint16, v uint64, exp int64) map[string]pieceEntry {
		return map[string]pieceEntry{"k": {Key: []byte("k"), Scheme: s, Version: v, ExpireAt: exp, Kind: core.PieceKindDirectory}}
	}
	tomb := func(v uint64) map[string]pieceEntry {
		return map[string]pieceEntry{"k": {Key: []byte("k"), Version: v, Kind: core.PieceKindDirectory, Index: core.DirTombstoneFlag}}
	}
	cases := []struct {
		name  string
		cands []*candidate
		dir   map[string]pieceEntry
		best  uint64 // 0: none
		lost  string // "" when not lost
	}{
		{"newest readable wins", []*candidate{replica, twoShards}, nil, 7, ""},
		{"an unreadable newer version loses to a readable one", []*candidate{replica, oneShard}, nil, 5, ""},
		{"nothing readable", []*candidate{lostShards}, nil, 0, "split:2+1 2/3"},
		{"fragments of a write that never committed are no loss", []*candidate{oneShard}, nil, 0, ""},
		{"a none key's entry alone", nil, dir(cluster.NoneID, 3, 0), 0, "none 1/1"},
		{"an entry older than the readable version", []*candidate{replica}, dir(rep, 2, 0), 5, ""},
		{"an entry newer than every readable version", []*candidate{replica}, dir(cluster.NoneID, 6, 0), 0, "none 1/1"},
		{"a rep key with no replica left", nil, dir(rep, 4, 0), 0, "rep:3 3/3"},
		{"an expired entry loses nothing", nil, dir(cluster.NoneID, 3, 1), 0, ""},
		{"a tombstone newer than every version: deleted", []*candidate{replica, twoShards}, tomb(8), 0, ""},
		{"a tombstone and the fragments of a half-released version", []*candidate{oneShard}, tomb(10), 0, ""},
		{"a version written after the tombstone", []*candidate{replica, twoShards}, tomb(6), 7, ""},
		{"an older version never comes back over a tombstone", []*candidate{twoShards, lostShards}, tomb(8), 0, "split:2+1 2/3"},
		{"a complete version wins over a newer incomplete one", []*candidate{completeReplica, twoShards}, nil, 5, ""},
	}
	for _, c := range cases {
		best, lost := judge(tableOf(t, m), "k", c.cands, c.dir, 1000)
		gotBest := uint64(0)
		if best != nil {
			gotBest = best.version
		}
		gotLost := ""
		if lost != nil {
			gotLost = fmt.Sprintf("%s %d/%d", lost.Scheme, lost.Lost, lost.Total)
		}
		if gotBest != c.best || gotLost != c.lost {
			t.Errorf("%s: best %d lost %q; want %d %q", c.name, gotBest, gotLost, c.best, c.lost)
		}
	}
}

// TestStaleVersionsAreEveryVersionButTheRestoredOne: recovery releases
// what it did not restore, except a rep replica in the restored scheme,
// which is the restored version's own stored piece.
func TestStaleVersionsAreEveryVersionButTheRestoredOne(t *testing.T) {
	m := testMap(t, 4)
	rep, split := schemeID(t, m, "rep:3"), schemeID(t, m, "split:2+1")
	oldReplica := &candidate{scheme: rep, version: 3, shards: map[uint8]bool{1: true}}
	replica := &candidate{scheme: rep, version: 5, shards: map[uint8]bool{1: true}}
	oldShards := &candidate{scheme: split, version: 4, shards: map[uint8]bool{0: true, 1: true}}
	fragment := &candidate{scheme: split, version: 9, shards: map[uint8]bool{1: true}}
	all := []*candidate{oldReplica, replica, oldShards, fragment}
	versions := func(st []staleVersion) []uint64 {
		var out []uint64
		for _, s := range st {
			out = append(out, s.ref.Version)
			if s.ref.Versioned != (s.ref.Scheme == split) || !s.ref.Exact || s.ref.Shard != 4 {
				t.Errorf("stale ref %+v: versioned must follow the scheme, exact, of the recovered shard", s.ref)
			}
		}
		return out
	}
	if got := versions(staleVersions(tableOf(t, m), 4, "k", all, replica)); !slices.Equal(got, []uint64{4, 9}) {
		t.Errorf("restoring the rep version, stale %v; want the split ones [4 9]", got)
	}
	if got := versions(staleVersions(tableOf(t, m), 4, "k", all, oldShards)); !slices.Equal(got, []uint64{3, 5, 9}) {
		t.Errorf("restoring split version 4, stale %v; want [3 5 9]", got)
	}
	if got := versions(staleVersions(tableOf(t, m), 4, "k", all, nil)); !slices.Equal(got, []uint64{3, 5, 4, 9}) {
		t.Errorf("a deleted key, stale %v; want every version", got)
	}
}

// TestMarkComplete: a version is complete when every up position of its
// placement not awaiting rebuild holds a piece of it; failed positions do
// not count.
func TestMarkComplete(t *testing.T) {
	m := testMap(t, 4)
	rep, split := schemeID(t, m, "rep:3"), schemeID(t, m, "split:2+1")
	key := []byte("k")
	sh := m.ShardOf(keyslot.Of(key))
	holders := m.Holders(sh, 3)
	all := &candidate{scheme: split, version: 1, shards: map[uint8]bool{0: true, 1: true, 2: true}}
	two := &candidate{scheme: split, version: 2, shards: map[uint8]bool{0: true, 1: true}}
	reps := &candidate{scheme: rep, version: 3, holders: holders}
	fewer := &candidate{scheme: rep, version: 4, holders: holders[:2]}
	markComplete(tableOf(t, m), sh, []*candidate{all, two, reps, fewer})
	if !all.complete || two.complete || !reps.complete || fewer.complete {
		t.Fatalf("complete: all shards %v, two of three %v, all replicas %v, two of three %v", all.complete, two.complete, reps.complete, fewer.complete)
	}
	failed := kindtest.Apply(t, m, cluster.MarkFailed{ID: sh.Placement[2]})
	fsh := failed.ShardOf(keyslot.Of(key))
	if fsh.Rebuild == nil && !failed.StoodIn(fsh, 2) {
		t.Fatal("position 2 neither stood in for nor listed for rebuild")
	}
	markComplete(tableOf(t, failed), fsh, []*candidate{two})
	if !two.complete {
		t.Fatal("a version missing only the failed position's shard is not complete")
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
	req := listReq{Shard: 300, First: 10, Last: 20, Cursor: 3}
	if r, err := decodeListReq(req.encode(nil)); err != nil || r != req {
		t.Fatalf("list request: %+v, %v", r, err)
	}
	for _, ref := range []peer.PieceRef{
		{Key: []byte("k"), Scheme: 7},
		{Key: []byte("key"), Shard: 3, Scheme: 9, Versioned: true, Version: 1 << 62},
		{Key: []byte{}, Shard: 65535, Scheme: 1},
		{Key: []byte("k2"), Shard: 200, Scheme: 7},
	} {
		back, _, ok := core.ParsePieceKey(core.StoreKey(ref))
		if !ok || !bytes.Equal(back.Key, ref.Key) || back.Shard != ref.Shard || back.Scheme != ref.Scheme || back.Versioned != ref.Versioned || back.Version != ref.Version {
			t.Fatalf("piece key of %+v parsed as %+v, %v", ref, back, ok)
		}
	}
	if _, _, ok := core.ParsePieceKey([]byte{0, 1, 1, 0}); ok {
		t.Fatal("a versioned piece key too short for its version parsed")
	}
	if back, kind, ok := core.ParsePieceKey(core.DirKey(nil, 129, []byte("dk"))); !ok || kind != core.PieceKindDirectory || string(back.Key) != "dk" || back.Shard != 129 {
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
