package server

import (
	"fmt"
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
		e, send := core.DirChange(&c.op, 3, !c.op.Del && kindFor(t, c.op.Entry).Traits().Immediate, 10, had, c.had)
		if send != c.send || (send && (e.Kind != core.DirExists || e.Version != 10 || e.Shard != 3)) {
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
