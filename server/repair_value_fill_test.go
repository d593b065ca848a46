package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/split"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
)

// fakeHolder is a peer that keeps pieces as a node does (a Node serving
// only its pieces store), and can be told to refuse new pieces or
// releases, or to fail every request as an overloaded node would.
type fakeHolder struct {
	n              *Node
	addr           string
	shard          uint16 // the test key's shard, which names its pieces
	refusePuts     atomic.Bool
	refuseReleases atomic.Bool
	failAll        atomic.Bool
}

func startFakeHolder(t *testing.T) *fakeHolder {
	t.Helper()
	h := &fakeHolder{n: &Node{Coordinator: core.NewCoordinator(DefaultConfig(), slog.New(slog.DiscardHandler), time.Now(), nil, nil)}}
	h.n.Router = h.n.newRouter()
	srv := transport.NewServer(func(req transport.Frame, reply func(transport.Frame)) {
		switch {
		case h.failAll.Load():
			reply(peer.ErrFrame(errors.New("server: overloaded")))
		case h.refusePuts.Load() && req.Type == peer.MsgPutPieces:
			reply(peer.ErrFrame(errors.New("server: out of memory")))
		case h.refuseReleases.Load() && req.Type == peer.MsgDelPiece:
			reply(peer.ErrFrame(errors.New("server: busy")))
		default:
			h.n.Router.ServeNow(req, reply)
		}
	})
	h.addr = serveFrames(t, srv)
	return h
}

// replica returns the value h holds for key in scheme, or nil.
func (h *fakeHolder) replica(key []byte, schemeID uint16) []byte {
	data, err := h.n.LoadPiece(peer.PieceRef{Key: key, Shard: h.shard, Scheme: schemeID})
	if err != nil {
		return nil
	}
	return data
}

func (h *fakeHolder) store(t *testing.T, key []byte, schemeID uint16, v uint64, value string) {
	t.Helper()
	err := h.n.StorePiece(peer.Piece{Key: key, Shard: h.shard, Scheme: schemeID, Version: v, CRC: bigcopy.Checksum([]byte(value)), Data: []byte(value)}, false)
	if err != nil {
		t.Fatal(err)
	}
}

// stubFixture is the coordinator of a rep:3 key and fake nodes for the
// rest of the map: the key's two replica holders among them.
type stubFixture struct {
	n       *Node
	rep     uint16
	holders []*fakeHolder // the key's replica holders, in target order
	byID    map[cluster.NodeID]*fakeHolder
}

func newStubFixture(t *testing.T, key []byte) stubFixture {
	t.Helper()
	fakes := make([]*fakeHolder, 5)
	addrs := make([]string, len(fakes))
	for i := range fakes {
		fakes[i] = startFakeHolder(t)
		addrs[i] = fakes[i].addr
	}
	m := testMapAt(t, addrs)
	for _, h := range fakes {
		h.shard = kind.ShardID(m, key)
	}
	rep := schemeID(t, m, "rep:3")
	coord, _ := m.Coordinator(m.ShardOf(keyslot.Of(key)).First)
	n := leasedNode(t, m)
	n.NodeID = coord.ID
	n.Primary, n.Pieces, n.Inflight = store.New(), store.New(), core.NewInflight()
	entry, _ := m.SchemeByID(rep)
	targets, _ := kindFor(t, entry).Targets(m, key)
	f := stubFixture{n: n, rep: rep, byID: map[cluster.NodeID]*fakeHolder{}}
	for _, node := range m.Nodes {
		for i, a := range addrs {
			if a == node.PeerAddr && node.ID != n.NodeID {
				f.byID[node.ID] = fakes[i]
			}
		}
	}
	for _, tg := range targets {
		f.holders = append(f.holders, f.byID[tg.Node.ID])
	}
	return f
}

// stub records key as recovery does: metadata first, value elsewhere.
func (f stubFixture) stub(t *testing.T, key []byte, v uint64, value string) store.Meta {
	t.Helper()
	meta := store.Meta{Version: v, Scheme: f.rep, Flags: core.RecordStub, Aux: bigcopy.Checksum([]byte(value))}
	if err := f.n.Primary.Put(key, nil, meta); err != nil {
		t.Fatal(err)
	}
	return meta
}

// TestStubWithNoReplicaLeftIsLost: a stub whose value no replica holds any
// more, every holder having answered, is reported lost by name instead of
// failing its shard's rebuild for ever; a holder that only failed to
// answer leaves it a stub, to be filled later.
func TestStubWithNoReplicaLeftIsLost(t *testing.T) {
	key := []byte("k")
	f := newStubFixture(t, key)
	ctx := context.Background()
	meta := f.stub(t, key, 10, "committed")
	f.holders[0].store(t, key, f.rep, 12, "a later write's") // another version
	f.holders[1].failAll.Store(true)

	_, _, err := f.n.FillStub(ctx, key, meta)
	if err == nil || errors.Is(err, kind.ErrNoCopy) {
		t.Fatalf("a holder that did not answer: fillStub err %v, want a plain error", err)
	}
	if _, lost := f.n.Lost.Get(key); lost {
		t.Fatal("a key was reported lost while a holder had not answered")
	}
	if _, _, ok, err := f.n.repair.CopySource(ctx, f.n.Schemes(f.n.Ctl.Map()), key, nil); ok || err == nil {
		t.Fatalf("copySource of an unfillable stub: ok %v err %v; want the rebuild to retry", ok, err)
	}

	f.holders[1].failAll.Store(false) // it answers: it has no copy
	_, _, err = f.n.FillStub(ctx, key, meta)
	var lost *kind.LostError
	if !errors.As(err, &lost) {
		t.Fatalf("every holder answered without the value: fillStub err %v, want a lost error", err)
	}
	if _, ok := f.n.Lost.Get(key); !ok {
		t.Fatal("the key is not in the lost set")
	}
	if _, err := f.n.Get(ctx, key); !errors.As(err, &lost) {
		t.Fatalf("read of the lost key: err %v, want LOST", err)
	}
	if _, _, ok, err := f.n.repair.CopySource(ctx, f.n.Schemes(f.n.Ctl.Map()), key, nil); ok || err != nil {
		t.Fatalf("copySource of a lost stub: ok %v err %v; want it skipped", ok, err)
	}
}

// TestStubIsFilledFromAReplicaOfItsVersion: the one holder with the stub's
// version fills it, though the other holds another.
func TestStubIsFilledFromAReplicaOfItsVersion(t *testing.T) {
	key := []byte("k")
	f := newStubFixture(t, key)
	meta := f.stub(t, key, 10, "committed")
	f.holders[0].store(t, key, f.rep, 12, "a later write's")
	f.holders[1].store(t, key, f.rep, 10, "committed")
	cur, err := f.n.Get(context.Background(), key)
	if err != nil || string(cur.Value) != "committed" {
		t.Fatalf("read %q, %v; want the stub's value", cur.Value, err)
	}
	if got, _ := f.n.Primary.Meta(key); core.IsStub(got) || got.Version != meta.Version {
		t.Fatalf("record after the read: %+v; want the filled version 10", got)
	}
}

// TestSetOverAStubFillsItFirst: a plain SET of a key whose record is a rep
// stub fetches the committed value before its replicas replace the
// holders'; when the write then fails, the committed value is still here
// and is stored on the holders again. Before, the SET went out blind, and
// a failed one could leave the committed value on no node at all.
func TestSetOverAStubFillsItFirst(t *testing.T) {
	key := []byte("k")
	f := newStubFixture(t, key)
	ctx := context.Background()
	f.stub(t, key, 10, "committed")
	for _, h := range f.holders {
		h.store(t, key, f.rep, 10, "committed")
	}
	f.holders[1].refusePuts.Store(true)

	if err := f.n.Set(ctx, key, []byte("new"), 0, false, nil); err == nil {
		t.Fatal("a SET that one holder refused was acknowledged")
	}
	val, meta, ok := f.n.Primary.Get(key, nil)
	if !ok || core.IsStub(meta) || meta.Version != 10 || string(val) != "committed" {
		t.Fatalf("record after the failed SET: %q %+v; want the committed value, filled", val, meta)
	}
	deadline := time.Now().Add(5 * time.Second)
	for string(f.holders[0].replica(key, f.rep)) != "committed" {
		if time.Now().After(deadline) {
			t.Fatalf("holder 0 has %q after the failed SET; want the committed value back",
				f.holders[0].replica(key, f.rep))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A stub with nothing left to fill it is lost; a SET writes over it.
	lostKey := []byte("k") // a fresh fixture: nothing holds a copy
	f2 := newStubFixture(t, lostKey)
	f2.stub(t, lostKey, 10, "gone")
	if err := f2.n.Set(ctx, lostKey, []byte("fresh"), 0, false, nil); err != nil {
		t.Fatalf("SET over a lost stub: %v", err)
	}
	if cur, err := f2.n.Get(ctx, lostKey); err != nil || string(cur.Value) != "fresh" {
		t.Fatalf("read after the SET: %q, %v", cur.Value, err)
	}
	if _, lost := f2.n.Lost.Get(lostKey); lost {
		t.Fatal("the key is still reported lost after a SET")
	}
}

// queuedPurge says whether a purge of key's tombstone at v is queued.
func queuedPurge(n *Node, key []byte, v uint64) bool {
	n.Directory.Mu.Lock()
	defer n.Directory.Mu.Unlock()
	return slices.ContainsFunc(n.Directory.Queue, func(e core.DirEntry) bool {
		return e.Kind == core.DirPurge && string(e.Key) == string(key) && e.Version == v
	})
}

// TestUnfinishedDeletionIsPurgedOnceReleased: a DEL whose release a holder
// refused is acknowledged and keeps its tombstone; the coordinator sends
// the release again (finishDeletions) and, once it succeeds, purges the
// tombstone, so tombstones do not pile up after transient failures.
func TestUnfinishedDeletionIsPurgedOnceReleased(t *testing.T) {
	key := []byte("k")
	f := newStubFixture(t, key)
	ctx := context.Background()
	value := []byte("committed")
	if err := f.n.Primary.Put(key, value, store.Meta{Version: 10, Scheme: f.rep, Aux: bigcopy.Checksum(value)}); err != nil {
		t.Fatal(err)
	}
	for _, h := range f.holders {
		h.store(t, key, f.rep, 10, string(value))
	}
	f.holders[1].refuseReleases.Store(true)
	if r := f.n.Do(ctx, "DEL", string(key)); r.IsError() || r.Int() != 1 {
		t.Fatalf("DEL: %s, want 1", r)
	}
	if unfinishedCount(f.n) != 1 {
		t.Fatalf("%d unfinished deletions after a refused release, want 1", unfinishedCount(f.n))
	}
	if f.holders[1].replica(key, f.rep) == nil {
		t.Fatal("the refusing holder lost its replica anyway; the test proves nothing")
	}
	f.n.Unfinished.Mu.Lock()
	v := f.n.Unfinished.M[string(key)].Version
	f.n.Unfinished.Mu.Unlock()
	if queuedPurge(f.n, key, v) {
		t.Fatal("a purge was queued though a release failed")
	}

	f.n.FinishDeletions(ctx) // still refused: kept
	if unfinishedCount(f.n) != 1 || queuedPurge(f.n, key, v) {
		t.Fatal("a deletion whose release failed again was dropped or purged")
	}
	f.holders[1].refuseReleases.Store(false)
	f.n.FinishDeletions(ctx)
	if unfinishedCount(f.n) != 0 || !queuedPurge(f.n, key, v) {
		t.Fatalf("after the release succeeded: %d unfinished, purge queued %v", unfinishedCount(f.n), queuedPurge(f.n, key, v))
	}
	if f.holders[1].replica(key, f.rep) != nil {
		t.Fatal("the holder still has its replica")
	}
}

// TestSplitReadFindsShardsOnFormerStandIns: a split shard that its
// position's node lacks (readmitted empty, awaiting its rebuild) is read
// from another live node of the placement that still holds it (the stand-in
// it got while that node was down), instead of the key being reported lost
// (robustness finding 14).
func TestSplitReadFindsShardsOnFormerStandIns(t *testing.T) {
	key := []byte("k")
	f := newStubFixture(t, key)
	m := f.n.Ctl.Map()
	entry, _ := m.Scheme("split:2+1")
	targets, err := kindFor(t, entry).Targets(m, key)
	if err != nil {
		t.Fatal(err)
	}
	others := slices.DeleteFunc(kind.OtherPlacementNodes(m, key, targets), func(o cluster.Node) bool { return f.byID[o.ID] == nil })
	if len(others) == 0 {
		t.Fatal("the test map has no other placement node to stand in")
	}
	shards, err := split.Encode(key, []byte("value"), 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	storeShard := func(h *fakeHolder, index int) {
		err := h.n.StorePiece(peer.Piece{Key: key, Shard: h.shard, Scheme: entry.ID, Version: 10, Index: uint8(index),
			Versioned: true, CRC: bigcopy.Checksum(shards[index]), Data: shards[index]}, false)
		if err != nil {
			t.Fatal(err)
		}
	}
	// One target keeps its shard; a second shard is only on the stand-in.
	survivor := slices.IndexFunc(targets, func(tg kind.Target) bool { return f.byID[tg.Node.ID] != nil })
	storeShard(f.byID[targets[survivor].Node.ID], targets[survivor].Index)
	missing := (survivor + 1) % len(targets)
	storeShard(f.byID[others[0].ID], targets[missing].Index)
	meta := commitSplitRecord(t, f.n, key, entry.ID)

	v, err := f.n.KindOf(entry).Read(context.Background(), key, meta, nil)
	if err != nil || string(v) != "value" {
		t.Fatalf("read %q, %v; want the value from the stand-in's shard", v, err)
	}
	if _, lost := f.n.Lost.Get(key); lost {
		t.Fatal("the key was reported lost")
	}
}

// commitSplitRecord records a committed split record of key at version 10.
func commitSplitRecord(t *testing.T, n *Node, key []byte, schemeID uint16) store.Meta {
	t.Helper()
	meta := store.Meta{Version: 10, Scheme: schemeID, Aux: 5}
	if err := n.Primary.Put(key, nil, meta); err != nil {
		t.Fatal(err)
	}
	return meta
}

// unfinishedCount is how many deletions wait on n.
func unfinishedCount(n *Node) int {
	n.Unfinished.Mu.Lock()
	defer n.Unfinished.Mu.Unlock()
	return len(n.Unfinished.M)
}
