package stripe

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// setMap gives every node of the net map m.
func (tn *testNet) setMap(m *cluster.Map) {
	tn.mu.Lock()
	tn.m = m
	tn.mu.Unlock()
}

// kill takes node id off the net: it answers nothing from now on.
func (tn *testNet) kill(id cluster.NodeID) {
	tn.mu.Lock()
	delete(tn.engines, id)
	tn.mu.Unlock()
}

// engineNet is a map of nodes nodes with scheme spec, and a net with an
// engine on every node.
func engineNet(t *testing.T, nodes int, spec string) (*cluster.Map, cluster.SchemeEntry, *testNet) {
	t.Helper()
	m := kindtest.Map(t, nodes, spec)
	net := newTestNet(m)
	for _, n := range m.Nodes {
		net.engine(n.ID)
	}
	return m, kindtest.Entry(t, m, spec), net
}

// writeKeys writes keys of shard sh's slots through the bound kind on
// coordinator eng, each committed once its parity holders applied its
// updates, and returns them with their values.
func writeKeys(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, eng *Engine, sh cluster.Shard, count int) map[string]string {
	t.Helper()
	p := packedOn(t, m, entry, eng)
	want := map[string]string{}
	for i := 0; len(want) < count; i++ {
		key := fmt.Appendf(nil, "key:%d", i)
		if s := keyslot.Of(key); s < sh.First || s > sh.Last {
			continue
		}
		put(t, p, key, fmt.Appendf(nil, "value %d", i), uint64(i+1))
		want[string(key)] = fmt.Sprintf("value %d", i)
	}
	return want
}

// packedOn is entry's stripe scheme bound to coordinator eng.
func packedOn(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, eng *Engine) kind.Packed {
	t.Helper()
	return Bind(eng, entry, kindtest.NewEnv(m, eng.host.Self()))
}

// put writes key = value at version through p, committed once its parity
// holders applied its updates.
func put(t *testing.T, p kind.Packed, key, value []byte, version uint64) {
	t.Helper()
	ctx := context.Background()
	w := &kind.Staged{Key: key, Value: value, Version: version}
	must(t, p.Stage(ctx, w))
	p.Flush(ctx, []*kind.Staged{w})
	must(t, w.Err)
	if _, err := p.Commit(w); err != nil {
		t.Fatal(err)
	}
}

// keepNewest adds to got the objects of scheme id in objs, each key at its
// newest version.
func keepNewest(got map[string]Object, objs map[uint16][]Object, id uint16) {
	for _, o := range objs[id] {
		if old, ok := got[string(o.Key)]; ok && old.Version >= o.Version {
			continue
		}
		got[string(o.Key)] = o
	}
}

// TestEngineRecoversAFailedCoordinatorsKeys: a coordinator writes keys of
// its shard through the engine, its parity holders keeping parity and
// copies of its open chunks; it fails. The shard's new coordinator
// recovers, metadata first (Ring §5.5): what it must decode now comes back
// from Recover, the sealed chunks whose manifests name only unknown keys
// are deferred, and the background pass restores those (RestoreShard),
// handing their objects to the node to re-home. Every key comes back at
// its version, once, and nothing is reported lost.
func TestEngineRecoversAFailedCoordinatorsKeys(t *testing.T) {
	const spec = "stripe:2+1/256"
	m, entry, net := engineNet(t, 4, spec)
	sh := m.Shards[0]
	coord, ok := m.Coordinator(sh.First)
	if !ok {
		t.Fatal("shard 0 has no coordinator")
	}
	want := writeKeys(t, m, entry, net.engine(coord.ID), sh, 60)

	net.kill(coord.ID)
	m = kindtest.Apply(t, m, cluster.MarkFailed{ID: coord.ID})
	net.setMap(m)
	next, ok := m.Coordinator(sh.First)
	if !ok || next.ID == coord.ID {
		t.Fatalf("no new coordinator for shard 0 (%v)", next.ID)
	}
	eng := net.engine(next.ID)
	host := eng.host.(*testHost)
	ctx := context.Background()
	rec, err := eng.Recover(ctx, m, m.Shards[0], map[uint32]bool{})
	must(t, err)
	if rec.Deferred() == 0 {
		t.Fatal("recovery deferred no sealed chunk: it decoded every chunk before serving")
	}
	got := map[string]Object{}
	keepNewest(got, rec.Objects, entry.ID)
	eng.Defer(m.Shards[0], rec)
	if !eng.Pending(0) || eng.PendingChunks() != int64(rec.Deferred()) {
		t.Fatalf("pending after Defer: %v, %d chunks; want %d", eng.Pending(0), eng.PendingChunks(), rec.Deferred())
	}
	must(t, eng.RestoreShard(ctx, 0))
	keepNewest(got, host.rehomed, entry.ID)
	if eng.Pending(0) || eng.Stats().ChunksRestored.Load() != int64(rec.Deferred()) {
		t.Fatalf("after the background pass: pending %v, %d chunks restored of %d", eng.Pending(0), eng.Stats().ChunksRestored.Load(), rec.Deferred())
	}
	if len(host.lost) != 0 {
		t.Fatalf("keys reported lost within tolerance: %+v", host.lost)
	}
	if len(got) != len(want) {
		t.Fatalf("recovered %d keys, wrote %d", len(got), len(want))
	}
	for k, v := range want {
		if o, ok := got[k]; !ok || string(o.Value) != v {
			t.Fatalf("key %s: recovered %q (found %v), wrote %q", k, o.Value, ok, v)
		}
	}
}

// TestEngineNamesKeysLostBeyondTolerance: the coordinator and the parity
// holder of its list fail together, two of stripe:2+1's three positions.
// Recovery does not fail or wait: it names what it lost (by slot range,
// since list 0's manifests died with its parity holder, decision 0005),
// and returns only the objects of chunks it could still decode, whole.
func TestEngineNamesKeysLostBeyondTolerance(t *testing.T) {
	const spec = "stripe:2+1/256"
	m, entry, net := engineNet(t, 4, spec)
	sh := m.Shards[0]
	coord, _ := m.Coordinator(sh.First)
	want := writeKeys(t, m, entry, net.engine(coord.ID), sh, 60)
	holders, err := parityHolders(m, entry.Spec, 0)
	must(t, err)
	for _, id := range []cluster.NodeID{coord.ID, holders[0].ID} {
		net.kill(id)
		m = kindtest.Apply(t, m, cluster.MarkFailed{ID: id})
	}
	net.setMap(m)
	next, ok := m.Coordinator(sh.First)
	if !ok {
		t.Fatal("no coordinator left for shard 0")
	}
	eng := net.engine(next.ID)
	rec, err := eng.Recover(context.Background(), m, m.Shards[0], map[uint32]bool{})
	must(t, err)
	host := eng.host.(*testHost)
	if len(host.lost) == 0 {
		t.Fatal("chunks lost beyond tolerance, and no key was reported lost")
	}
	for _, k := range host.lost {
		if k.Scheme != spec || k.Total != 3 || k.Lost < 2 {
			t.Fatalf("a loss report %+v; want 2 or more of 3 positions lost", k)
		}
	}
	if eng.Stats().PositionsLost.Load() == 0 {
		t.Fatal("no position counted lost")
	}
	// The coordinator's chunks in lists that lost one position only are
	// still decoded; list 0's are not.
	objs := rec.Objects[entry.ID]
	if len(objs) >= len(want) {
		t.Fatalf("%d of %d keys recovered though list 0 lost two of its three positions", len(objs), len(want))
	}
	for _, o := range objs {
		if v, ok := want[string(o.Key)]; !ok || v != string(o.Value) {
			t.Fatalf("recovered %s = %q; wrote %q", o.Key, o.Value, v)
		}
	}
}

// TestEngineRecoversPastAHolderThatLacksThePosition: one of the list's two
// parity holders lost its state and came back empty, as a holder
// resynced by the live positions only is, when the coordinator fails. The
// holder cannot take the backups' updates of the dead position (it
// answers Missing to each, and no retry changes that: the only sender is
// gone), so recovery leaves it out of those stripes, as solveChunk does,
// and decodes from the other holder. Waiting on it instead retried for
// ever (the robustness suite, seed 27).
func TestEngineRecoversPastAHolderThatLacksThePosition(t *testing.T) {
	const spec = "stripe:2+2/256"
	m, entry, net := engineNet(t, 5, spec)
	sh := m.Shards[0]
	coord, _ := m.Coordinator(sh.First)
	want := writeKeys(t, m, entry, net.engine(coord.ID), sh, 40)
	// Overwrites in place, last: their deltas depend on the chunk's earlier
	// updates, and their backups are not marked stable yet.
	overwrite(t, m, entry, net.engine(coord.ID), want, 3)
	holders, err := parityHolders(m, entry.Spec, 0)
	must(t, err)
	wiped := holders[1].ID
	if wiped == coord.ID {
		t.Fatal("the coordinator holds parity of its own list")
	}
	net.kill(wiped)
	net.engine(wiped) // back, holding nothing
	net.kill(coord.ID)
	m = kindtest.Apply(t, m, cluster.MarkFailed{ID: coord.ID})
	checkRecovered(t, recoverShard(t, m, entry, net), want)
}

// recovered is what recovering a shard's keys after failures gave: the
// objects recovered and restored, each key at its newest version, and the
// recovering engine.
type recovered struct {
	got  map[string]Object
	eng  *Engine
	host *testHost
}

// recoverShard gives the net map m, in which shard 0's coordinator
// failed, and has the shard's new coordinator recover it, metadata
// first, and restore the chunks it deferred.
func recoverShard(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, net *testNet) recovered {
	t.Helper()
	net.setMap(m)
	next, ok := m.Coordinator(m.Shards[0].First)
	if !ok {
		t.Fatal("no coordinator left for shard 0")
	}
	eng := net.engine(next.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, err := eng.Recover(ctx, m, m.Shards[0], map[uint32]bool{})
	must(t, err)
	eng.Defer(m.Shards[0], rec)
	must(t, eng.RestoreShard(ctx, 0))
	run := recovered{got: map[string]Object{}, eng: eng, host: eng.host.(*testHost)}
	keepNewest(run.got, rec.Objects, entry.ID)
	keepNewest(run.got, run.host.rehomed, entry.ID)
	return run
}

// overwrite writes n of the keys of want again, in place (values of the
// same length, newer versions), and records the new values in want.
func overwrite(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, eng *Engine, want map[string]string, n int) {
	t.Helper()
	p := packedOn(t, m, entry, eng)
	for i, k := range slices.Sorted(maps.Keys(want))[:n] {
		v := strings.ToUpper(want[k])
		put(t, p, []byte(k), []byte(v), uint64(1000+i))
		want[k] = v
	}
}

// checkRecovered fails unless run recovered every key of want bit-exact
// and reported nothing lost.
func checkRecovered(t *testing.T, run recovered, want map[string]string) {
	t.Helper()
	if len(run.host.lost) != 0 {
		t.Fatalf("keys reported lost within tolerance: %+v", run.host.lost)
	}
	if len(run.got) != len(want) {
		t.Fatalf("recovered %d keys, wrote %d", len(run.got), len(want))
	}
	for k, v := range want {
		if o, ok := run.got[k]; !ok || string(o.Value) != v {
			t.Fatalf("key %s: recovered %q (found %v), wrote %q", k, o.Value, ok, v)
		}
	}
}
