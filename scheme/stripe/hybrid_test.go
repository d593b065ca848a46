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
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// hybridRun is what recovering a shard's keys after failures gave: the
// objects recovered and restored, each key at its newest version, and the
// recovering engine.
type hybridRun struct {
	got  map[string]Object
	eng  *Engine
	host *testHost
}

// recoverShard0 kills the nodes at positions kill of shard 0's placement
// (position 0 is its coordinator), marks them failed, and has the shard's
// new coordinator recover it, metadata first, and restore the chunks it
// deferred.
func recoverShard0(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, net *testNet, kill []int) hybridRun {
	t.Helper()
	placement := slices.Clone(m.Shards[0].Placement)
	for _, p := range kill {
		net.kill(placement[p])
		m = kindtest.Apply(t, m, cluster.MarkFailed{ID: placement[p]})
	}
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
	run := hybridRun{got: map[string]Object{}, eng: eng, host: eng.host.(*testHost)}
	keepNewest(run.got, rec.Objects, entry.ID)
	keepNewest(run.got, run.host.rehomed, entry.ID)
	return run
}

// TestHybridCopiesOneFailure: RE-Store §IV-D's single failure. The
// coordinator of shard 0 fails; every chunk it held comes back from its
// list's replica holder, whole, without a decode, and every key reads
// back as written.
func TestHybridCopiesOneFailure(t *testing.T) {
	const spec = "hybrid:2+2/256"
	m, entry, net := engineNet(t, 5, spec)
	coord, _ := m.Coordinator(m.Shards[0].First)
	want := writeKeys(t, m, entry, net.engine(coord.ID), m.Shards[0], 60)
	overwrite(t, m, entry, net.engine(coord.ID), want, 5)
	run := recoverShard0(t, m, entry, net, []int{0})
	checkRecovered(t, run, want)
	st := run.eng.Stats()
	if st.ChunksCopied.Load() == 0 || st.ChunksDecoded.Load() != 0 {
		t.Fatalf("one failure: %d chunks copied, %d decoded; want copies only", st.ChunksCopied.Load(), st.ChunksDecoded.Load())
	}
}

// TestHybridSurvivesEveryPatternUpToM: for hybrid:2+2, 3+2 and 4+2, the
// coordinator of shard 0 fails together with every choice of up to M−1
// other positions of its list (the replica holder, parity holders, other
// data nodes). Every key reads back bit-exact and none is reported lost;
// a pattern that leaves the replica holders of the coordinator's lists
// alive decodes nothing and one that kills one decodes (RE-Store §IV-D:
// replicas serve, parity is for a primary-secondary failure).
func TestHybridSurvivesEveryPatternUpToM(t *testing.T) {
	for _, c := range []struct {
		spec  string
		nodes int
	}{{"hybrid:2+2/256", 5}, {"hybrid:3+2/256", 6}, {"hybrid:4+2/256", 7}} {
		_, entry0, _ := engineNet(t, c.nodes, c.spec)
		width := entry0.Spec.K + entry0.Spec.M
		for _, others := range subsets(width-1, entry0.Spec.M-1) {
			kill := []int{0}
			for _, o := range others {
				kill = append(kill, o+1)
			}
			t.Run(fmt.Sprintf("%s/kill%v", c.spec, kill), func(t *testing.T) {
				m, entry, net := engineNet(t, c.nodes, c.spec)
				coord, _ := m.Coordinator(m.Shards[0].First)
				want := writeKeys(t, m, entry, net.engine(coord.ID), m.Shards[0], 80)
				overwrite(t, m, entry, net.engine(coord.ID), want, 7)
				writeLarge(t, m, entry, net.engine(coord.ID), want, 3)
				replicas := replicaHoldersOf(t, m, entry, coord.ID)
				run := recoverShard0(t, m, entry, net, kill)
				checkRecovered(t, run, want)
				replicaDied := false
				for _, p := range kill {
					replicaDied = replicaDied || slices.Contains(replicas, m.Shards[0].Placement[p])
				}
				switch decoded := run.eng.Stats().ChunksDecoded.Load(); {
				case !replicaDied && decoded != 0:
					t.Fatalf("%d chunks decoded though every replica of the coordinator's chunks survived", decoded)
				case replicaDied && decoded == 0:
					t.Fatal("a replica holder of the coordinator's chunks died and nothing was decoded")
				}
			})
		}
	}
}

// TestHybridBeyondToleranceNamesItsKeys: the coordinator, the replica
// holder and every parity holder of list 0 fail, M+1 positions. The
// chunks of list 0 cannot come back, and recovery says so: their keys are
// reported lost (by slot range: the manifests died with the first parity
// holder), never dropped silently; chunks of the coordinator's other list
// still come back from its replica.
func TestHybridBeyondToleranceNamesItsKeys(t *testing.T) {
	const spec = "hybrid:2+2/256"
	m, entry, net := engineNet(t, 5, spec)
	coord, _ := m.Coordinator(m.Shards[0].First)
	want := writeKeys(t, m, entry, net.engine(coord.ID), m.Shards[0], 60)
	run := recoverShard0(t, m, entry, net, []int{0, 2, 3})
	if len(run.host.lost) == 0 {
		t.Fatal("list 0 lost three of four positions and no key was reported lost")
	}
	if len(run.got) >= len(want) {
		t.Fatalf("%d of %d keys recovered though list 0 lost its coordinator, replica and parity", len(run.got), len(want))
	}
	for k, o := range run.got {
		if want[k] != string(o.Value) {
			t.Fatalf("recovered %s = %q; wrote %q", k, o.Value, want[k])
		}
	}
}

// writeLarge rewrites n of the keys of want with values larger than a
// chunk (fragments, relocated from their old chunks), so that recovery
// must restore at once the chunks that hold their other fragments and
// older versions (Recover's closed set of tags), and records them in want.
func writeLarge(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, eng *Engine, want map[string]string, n int) {
	t.Helper()
	p := packedOn(t, m, entry, eng)
	for i, k := range slices.Sorted(maps.Keys(want))[len(want)-n:] {
		v := strings.Repeat(k+"|", 2*entry.Spec.ChunkSize()/len(k))
		put(t, p, []byte(k), []byte(v), uint64(2000+i))
		want[k] = v
	}
}

// checkRecovered fails unless run recovered every key of want bit-exact
// and reported nothing lost.
func checkRecovered(t *testing.T, run hybridRun, want map[string]string) {
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

// replicaHoldersOf lists the replica holders of the lists node appends
// in (its data positions).
func replicaHoldersOf(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, node cluster.NodeID) []cluster.NodeID {
	t.Helper()
	var out []cluster.NodeID
	for _, slot := range ownSlots(m, entry.Spec, node) {
		holders, err := parityHolders(m, entry.Spec, slot.List)
		must(t, err)
		out = append(out, holders[replicaHolder(entry.Spec)].ID)
	}
	return out
}

// subsets lists every subset of 0..n−1 with at most size members, the
// empty one first.
func subsets(n, size int) [][]int {
	out := [][]int{{}}
	for i := range n {
		for _, s := range out {
			if len(s) < size {
				out = append(out, append(slices.Clone(s), i))
			}
		}
	}
	return out
}

// TestKeyTolerance: how many more failures a key's chunk survives, as
// SCHEME.OF reports it, for stripe:4+2 and hybrid:4+2 (positions 0–3
// data, 4 parity, 5 parity or replica), the key's chunk at position 0.
func TestKeyTolerance(t *testing.T) {
	stripe42, _ := scheme.Parse("stripe:4+2")
	hybrid42, _ := scheme.Parse("hybrid:4+2")
	for _, c := range []struct {
		spec scheme.Spec
		lost []int
		want int
	}{
		{stripe42, nil, 2},
		{stripe42, []int{1}, 1},
		{stripe42, []int{4, 5}, 0},
		{stripe42, []int{1, 2, 3}, 0}, // beyond M, but the chunk itself is up: one more loses it
		{hybrid42, nil, 2},
		{hybrid42, []int{0}, 1}, // the replica serves it; with it lost too, two lost positions still decode
		{hybrid42, []int{5}, 1},
		{hybrid42, []int{0, 5}, 0},
		{hybrid42, []int{1, 2, 3}, 1}, // data and replica must both go: two more
		{hybrid42, []int{1, 4}, 1},
	} {
		lost := make([]bool, 6)
		for _, p := range c.lost {
			lost[p] = true
		}
		if got := keyTolerance(c.spec, lost, 0); got != c.want {
			t.Errorf("%s with positions %v lost: tolerates %d, want %d", c.spec, c.lost, got, c.want)
		}
	}
}
