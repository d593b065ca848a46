package server

import (
	"fmt"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/store"
)

// testMap is a formed map of n nodes with rep:3 and split:2+1 registered.
func testMap(t *testing.T, n int) *cluster.Map {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", 17000+i)
	}
	return testMapAt(t, addrs)
}

// testMapAt is testMap with one node per peer address.
func testMapAt(t *testing.T, peerAddrs []string) *cluster.Map {
	t.Helper()
	m := cluster.NewMap(len(peerAddrs), 3)
	for i, addr := range peerAddrs {
		m = mustApply(t, m, cluster.AddNode{Node: cluster.Node{ID: cluster.NodeID(fmt.Sprintf("%040x", i+1)),
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i), PeerAddr: addr}})
	}
	for _, s := range []string{"rep:3", "split:2+1"} {
		sp, _ := scheme.Parse(s)
		m = mustApply(t, m, cluster.CreateScheme{Spec: sp})
	}
	return m
}

// mustApply returns m with c applied, failing the test if c is refused.
func mustApply(t *testing.T, m *cluster.Map, c cluster.Command) *cluster.Map {
	t.Helper()
	next, err := cluster.Apply(m, c)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func schemeID(t *testing.T, m *cluster.Map, name string) uint16 {
	e, ok := m.Scheme(name)
	if !ok {
		t.Fatalf("no scheme %s", name)
	}
	return e.ID
}

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
			if s.ref.Versioned != (s.ref.Scheme == split) || !s.ref.Exact {
				t.Errorf("stale ref %+v: versioned must follow the scheme, and exact", s.ref)
			}
		}
		return out
	}
	if got := versions(staleVersions(tableOf(t, m), "k", all, replica)); !slices.Equal(got, []uint64{4, 9}) {
		t.Errorf("restoring the rep version, stale %v; want the split ones [4 9]", got)
	}
	if got := versions(staleVersions(tableOf(t, m), "k", all, oldShards)); !slices.Equal(got, []uint64{3, 5, 9}) {
		t.Errorf("restoring split version 4, stale %v; want [3 5 9]", got)
	}
	if got := versions(staleVersions(tableOf(t, m), "k", all, nil)); !slices.Equal(got, []uint64{3, 5, 4, 9}) {
		t.Errorf("a deleted key, stale %v; want every version", got)
	}
}

// TestAnnouncementPrecedesWhatReplacesPieces: deletions and moves to none
// store their directory entry before they commit; other writes do not.
func TestAnnouncementPrecedesWhatReplacesPieces(t *testing.T) {
	m := testMap(t, 4)
	rep, _ := m.Scheme("rep:3")
	none := m.DefaultScheme()
	n := leasedNode(t, m)
	n.Primary = store.New()
	key := []byte("k")
	if _, ok := n.Announcement(&core.WriteOp{Key: key, Entry: none}, 5); ok {
		t.Error("creating a key announced an entry")
	}
	if err := n.Primary.Put(key, []byte("v"), store.Meta{Version: 4, Scheme: none.ID}); err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Announcement(&core.WriteOp{Key: key, Entry: none}, 5); ok {
		t.Error("an overwrite in the same scheme announced an entry")
	}
	if _, ok := n.Announcement(&core.WriteOp{Key: key, Entry: rep}, 5); ok {
		t.Error("a move to a redundant scheme announced an entry")
	}
	if err := n.Primary.Put(key, []byte("v"), store.Meta{Version: 4, Scheme: rep.ID}); err != nil {
		t.Fatal(err)
	}
	if e, ok := n.Announcement(&core.WriteOp{Key: key, Entry: none}, 5); !ok || e.Kind != core.DirExists || e.Scheme != none.ID || e.Version != 5 {
		t.Errorf("a move to none announced %+v, %v", e, ok)
	}
	if e, ok := n.Announcement(&core.WriteOp{Key: key, Del: true}, 6); !ok || e.Kind != core.DirTombstone || e.Version != 6 {
		t.Errorf("a deletion announced %+v, %v", e, ok)
	}
}

func TestDirChangeSendsOnlyWhatRecoveryNeeds(t *testing.T) {
	m := testMap(t, 4)
	rep, _ := m.Scheme("rep:3")
	none := m.DefaultScheme()
	had := store.Meta{Version: 3, Scheme: none.ID}
	cases := []struct {
		name string
		op   core.WriteOp
		had  bool
		send bool
	}{
		{"a new key", core.WriteOp{Entry: none}, false, true},
		{"a plain overwrite", core.WriteOp{Entry: none}, true, false},
		{"a new scheme", core.WriteOp{Entry: rep}, true, true},
		{"a new expiry", core.WriteOp{Entry: none, ExpireAt: 99}, true, true},
		{"a deletion (announced before it commits)", core.WriteOp{Del: true}, true, false},
	}
	for _, c := range cases {
		c.op.Key = []byte("k")
		e, send := core.DirChange(&c.op, !c.op.Del && kindFor(t, c.op.Entry).Traits().Immediate, 10, had, c.had)
		if send != c.send || (send && (e.Kind != core.DirExists || e.Version != 10)) {
			t.Errorf("%s: %+v send=%v; want send=%v", c.name, e, send, c.send)
		}
	}
}

func TestLivePiecesSkipFailedPositions(t *testing.T) {
	m := testMap(t, 3)
	split, _ := m.Scheme("split:2+1")
	key := []byte("k")
	sh := m.ShardOf(keyslot.Of(key))
	victim := sh.Placement[2]
	m, _ = cluster.Apply(m, cluster.MarkFailed{ID: victim})
	sch := kindFor(t, split)
	targets, err := sch.Targets(m, key)
	if err != nil || len(targets) != 3 || targets[2].Node.State != cluster.Failed {
		t.Fatalf("targets %+v, %v; want three, the last on the failed node (no stand-in on 3 nodes)", targets, err)
	}
	pieces := make([]kind.Piece, len(targets))
	kept, _, err := core.LivePieces(sch, targets, pieces)
	if err != nil || len(kept) != 2 {
		t.Fatalf("live pieces %d, %v; want 2 (reduced tolerance)", len(kept), err)
	}
	m, _ = cluster.Apply(m, cluster.MarkFailed{ID: sh.Placement[1]})
	targets, _ = sch.Targets(m, key)
	if _, _, err := core.LivePieces(sch, targets, make([]kind.Piece, len(targets))); err == nil {
		t.Fatal("a split:2+1 write with one node up was placed")
	}
}

func TestHeldLacks(t *testing.T) {
	h := held{pieces: map[string][]heldPiece{"k": {{node: "a", index: 1, version: 5}}},
		listed: map[cluster.NodeID]bool{"a": true, "b": true}}
	node := func(id string) cluster.Node { return cluster.Node{ID: cluster.NodeID(id)} }
	if h.lacks([]byte("k"), kind.Target{Index: 1, Node: node("a")}, 5) {
		t.Error("a held piece counted as lacking")
	}
	for _, c := range []struct {
		t kind.Target
		v uint64
	}{{kind.Target{Index: 1, Node: node("a")}, 6}, {kind.Target{Index: 2, Node: node("a")}, 5}, {kind.Target{Index: 1, Node: node("b")}, 5}} {
		if !h.lacks([]byte("k"), c.t, c.v) {
			t.Errorf("%+v at version %d: a piece of another version, index or node counted as held", c.t, c.v)
		}
	}
	if h.lacks([]byte("k"), kind.Target{Index: 1, Node: node("c")}, 5) {
		t.Error("a node that was not listed (it kept its position) counted as lacking")
	}
}

// TestRecoveryUnderwayWaitsOnlyForLiveRecoveries: rebuilds wait while a
// failed coordinator's shard is being recovered, but not for a shard with
// no live node left to recover it.
func TestRecoveryUnderwayWaitsOnlyForLiveRecoveries(t *testing.T) {
	m := testMap(t, 3)
	if recoveryUnderway(m) {
		t.Fatal("a healthy map has a recovery under way")
	}
	m = mustApply(t, m, cluster.MarkFailed{ID: m.Nodes[0].ID})
	if m.RecoveringShards() == 0 || !recoveryUnderway(m) {
		t.Fatalf("after a coordinator failed: %d shards recovering, under way %v", m.RecoveringShards(), recoveryUnderway(m))
	}
	m = mustApply(t, m, cluster.MarkFailed{ID: m.Nodes[1].ID})
	m = mustApply(t, m, cluster.MarkFailed{ID: m.Nodes[2].ID})
	if m.RecoveringShards() == 0 || recoveryUnderway(m) {
		t.Fatalf("with every node failed: %d shards recovering, under way %v (nobody can recover them)",
			m.RecoveringShards(), recoveryUnderway(m))
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
	failed := mustApply(t, m, cluster.MarkFailed{ID: sh.Placement[2]})
	fsh := failed.ShardOf(keyslot.Of(key))
	if fsh.Rebuild == nil && !failed.StoodIn(fsh, 2) {
		t.Fatal("position 2 neither stood in for nor listed for rebuild")
	}
	markComplete(tableOf(t, failed), fsh, []*candidate{two})
	if !two.complete {
		t.Fatal("a version missing only the failed position's shard is not complete")
	}
}
