package stripe

import (
	"bytes"
	"context"
	"errors"
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

// recoverShard0 kills the nodes at positions kill of shard 0's placement
// (position 0 is its coordinator), marks them failed, and has the shard's
// new coordinator recover it (recoverShard). The coordinator's updates
// sent in the background (the removals of relocated objects) are
// delivered first: on the in-process net a killed node's goroutines would
// go on sending, which a dead process cannot, and a recovery that read
// the holders' states before such a late update would wait on it.
func recoverShard0(t *testing.T, m *cluster.Map, entry cluster.SchemeEntry, net *testNet, kill []int) recovered {
	t.Helper()
	placement := slices.Clone(m.Shards[0].Placement)
	settleSends(t, net.engine(placement[0]))
	for _, p := range kill {
		net.kill(placement[p])
		m = kindtest.Apply(t, m, cluster.MarkFailed{ID: placement[p]})
	}
	return recoverShard(t, m, entry, net)
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

// TestReplicaHolderKeepsSealedCopies: a hybrid list's replica holder
// (holder position M−1) keeps the chunk whole through its seal, applies
// deltas to the sealed copy, refuses a Free while objects remain, frees
// the copy once they are gone, and takes a Resync of a sealed chunk as its
// new copy; a parity holder of the same scheme folds the chunk into
// RS(K, M−1) parity as under stripe, and a holder position past M−1 is
// refused.
func TestReplicaHolderKeepsSealedCopies(t *testing.T) {
	const k, m, size = 2, 2, 256
	spec := scheme.Spec{Kind: scheme.Hybrid, K: k, M: m, Chunk: size}
	d, err := NewData(size)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	replica, err := holderParity(spec)
	must(t, err)
	parity, err := holderParity(spec)
	must(t, err)
	apply := func(ups []Update) {
		t.Helper()
		for _, u := range ups {
			for j, p := range []*Parity{parity, replica} {
				if out, _, err := p.Apply(j, u); err != nil || out == Missing {
					t.Fatalf("holder %d applying %s: %v %v", j, u, out, err)
				}
			}
		}
	}
	// Objects are appended and committed until the first chunk seals.
	var id ChunkID
	for i, found := 0, false; !found; i++ {
		o := Object{Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{byte('a' + i)}, 100), Version: uint64(i + 1)}
		loc, ups, err := d.Append(&o)
		must(t, err)
		_, _, more, err := d.Commit(o.Key, loc)
		must(t, err)
		for _, u := range append(ups, more...) {
			if u.Kind == Seal {
				id, found = u.Chunk, true
			}
		}
		apply(append(ups, more...))
		if i > 20 {
			t.Fatal("no chunk sealed")
		}
	}
	if _, _, err := replica.Apply(m, Update{Chunk: id, Seq: 99, Kind: Delta, Bytes: []byte{1}}); !errors.Is(err, ErrUpdate) {
		t.Fatalf("holder position %d of a hybrid:%d+%d list: %v, want refused", m, k, m, err)
	}
	local, sealed, seq, _ := d.Read(id)
	if !sealed || !bytes.Equal(replica.Image(id), local) {
		t.Fatal("the replica holder's copy of the sealed chunk differs from the chunk")
	}
	if st := replica.Stats(); st.CopyBytes != size || st.ImageBytes != size || st.ParityBytes != 0 { // the sealed chunk's copy, the open one's image
		t.Fatalf("replica holder after the seal: %+v", st)
	}
	if p, _ := parity.ParityChunk(0, id.Stripe); p == nil || parity.Image(id) != nil {
		t.Fatal("the parity holder did not fold the sealed chunk into parity")
	}
	// A delta to the sealed chunk reaches the copy.
	delta := Update{Chunk: id, Seq: seq + 1, Base: seq, Kind: Delta, Offset: 40, Bytes: []byte{0xff, 0x0f}}
	apply([]Update{delta})
	want := bytes.Clone(local)
	xorInto(want[40:], delta.Bytes)
	if !bytes.Equal(replica.Image(id), want) {
		t.Fatal("a delta to the sealed chunk did not reach the replica's copy")
	}
	if _, _, err := replica.Apply(1, Update{Chunk: id, Seq: seq + 2, Base: seq, Kind: Free}); !errors.Is(err, ErrUpdate) {
		t.Fatalf("Free of a copy with objects in it: %v, want refused", err)
	}
	// A Resync of the sealed chunk at a later seq replaces the copy.
	if out, err := replica.Resync(1, id, seq+3, local, true); out != Applied || err != nil || !bytes.Equal(replica.Image(id), local) {
		t.Fatalf("Resync of the sealed chunk: %v %v", out, err)
	}
	// The chunk's bytes XORed out, the copy is zeros and may be freed.
	for _, u := range []Update{{Chunk: id, Seq: seq + 4, Base: seq + 3, Kind: Delta, Bytes: local}, {Chunk: id, Seq: seq + 5, Base: seq + 3, Kind: Free}} {
		if out, _, err := replica.Apply(1, u); out != Applied || err != nil {
			t.Fatalf("%s: %v %v", u, out, err)
		}
	}
	if st := replica.Stats(); replica.Image(id) != nil || st.CopyBytes != 0 {
		t.Fatalf("after the Free the replica holder keeps %+v", st)
	}
}

// settleSends waits until every update eng sent or owes is acknowledged
// by all its holders, resending what is owed.
func settleSends(t *testing.T, eng *Engine) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; {
		eng.Resend(ctx)
		left := 0
		for _, s := range eng.all() {
			s.mu.Lock()
			left += len(s.data.Unacked())
			s.mu.Unlock()
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d updates still unacknowledged", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
