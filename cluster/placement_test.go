package cluster

import (
	"slices"
	"testing"

	"github.com/memgest/memgest/keyslot"
)

// The ranges redis-cli --cluster create gives the same number of masters.
func TestPlaceRangesMatchRedisCli(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want [][2]int
	}{
		{1, [][2]int{{0, 16383}}},
		{2, [][2]int{{0, 8191}, {8192, 16383}}},
		{3, [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}},
		{5, [][2]int{{0, 3276}, {3277, 6553}, {6554, 9829}, {9830, 13106}, {13107, 16383}}},
		{6, [][2]int{{0, 2730}, {2731, 5460}, {5461, 8191}, {8192, 10922}, {10923, 13652}, {13653, 16383}}},
	} {
		if got := slotRanges(tc.n, keyslot.Count); !slices.Equal(got, tc.want) {
			t.Errorf("%d nodes: %v, want %v", tc.n, got, tc.want)
		}
	}
}

// Ring §5.4: rotating the group over the nodes balances coordinators and
// every redundancy role. Checked for many cluster sizes.
func TestPlaceProperties(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 16, 31, 100, 1000} {
		ids := testIDs(n)
		shards := Place(ids, keyslot.Count)
		checkCoverage(t, n, shards)
		checkRoles(t, ids, shards)
		if again := Place(ids, keyslot.Count); !slices.EqualFunc(shards, again, shardEqual) {
			t.Errorf("%d nodes: Place is not deterministic", n)
		}
	}
}

// checkCoverage: every slot in exactly one shard, shard sizes within one.
func checkCoverage(t *testing.T, n int, shards []Shard) {
	t.Helper()
	if len(shards) != n {
		t.Fatalf("%d nodes: %d shards", n, len(shards))
	}
	owner := make([]int, keyslot.Count)
	minSize, maxSize := keyslot.Count, 0
	for _, sh := range shards {
		size := sh.Last - sh.First + 1
		minSize, maxSize = min(minSize, size), max(maxSize, size)
		for s := sh.First; s <= sh.Last; s++ {
			owner[s]++
		}
	}
	for s, c := range owner {
		if c != 1 {
			t.Fatalf("%d nodes: slot %d in %d shards", n, s, c)
		}
	}
	if maxSize-minSize > 1 {
		t.Errorf("%d nodes: shard sizes %d..%d, want within 1", n, minSize, maxSize)
	}
}

// checkRoles: placements are min(N, MaxPlacement) distinct nodes, and every
// node holds every position (coordinator, first redundancy node, ...)
// exactly once.
func checkRoles(t *testing.T, ids []NodeID, shards []Shard) {
	t.Helper()
	n := len(ids)
	w := min(n, MaxPlacement)
	for pos := range w {
		seen := map[NodeID]int{}
		for _, sh := range shards {
			seen[sh.Placement[pos]]++
		}
		if len(seen) != n {
			t.Fatalf("%d nodes: position %d held by %d distinct nodes", n, pos, len(seen))
		}
	}
	for _, sh := range shards {
		if len(sh.Placement) != w || len(distinct(sh.Placement)) != w {
			t.Fatalf("%d nodes: shard %d placement %v not %d distinct nodes", n, sh.ID, sh.Placement, w)
		}
	}
}

func distinct(ids []NodeID) map[NodeID]bool {
	out := map[NodeID]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

func shardEqual(a, b Shard) bool {
	return a.ID == b.ID && a.First == b.First && a.Last == b.Last && slices.Equal(a.Placement, b.Placement)
}

// Balance in slots, not only in shards: for a scheme of width w every node
// holds ~w/N of all slots' pieces, and coordinates ~1/N of them.
func TestPlaceSlotBalance(t *testing.T) {
	for _, n := range []int{3, 5, 7} {
		shards := Place(testIDs(n), keyslot.Count)
		for w := 1; w <= n; w++ {
			held := map[NodeID]int{}
			for _, sh := range shards {
				for _, id := range sh.Placement[:w] {
					held[id] += sh.Last - sh.First + 1
				}
			}
			want := float64(keyslot.Count*w) / float64(n)
			for id, h := range held {
				if d := float64(h) - want; d > float64(w) || d < -float64(w) {
					t.Errorf("n=%d w=%d: node %s holds %d slots, want %.1f±%d", n, w, id[:6], h, want, w)
				}
			}
		}
	}
}

func TestPlaceRotation(t *testing.T) {
	ids := []NodeID{"a", "b", "c"}
	want := [][]NodeID{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}}
	for i, sh := range Place(ids, keyslot.Count) {
		if !slices.Equal(sh.Placement, want[i]) {
			t.Errorf("shard %d: %v, want %v", i, sh.Placement, want[i])
		}
	}
	shards := Place(ids, keyslot.Count)
	shards[0].Placement[0] = "z"
	if ids[0] != "a" {
		t.Error("Place aliases its input")
	}
}

func TestPlaceDegenerate(t *testing.T) {
	if Place(nil, keyslot.Count) != nil {
		t.Error("no nodes: want nil")
	}
	if Place(testIDs(5), 4) != nil {
		t.Error("more nodes than slots: want nil")
	}
	got := Place(testIDs(keyslot.Count), keyslot.Count)
	if len(got) != keyslot.Count || got[keyslot.Count-1].First != keyslot.Count-1 || len(got[0].Placement) != MaxPlacement {
		t.Errorf("one slot per node: %d shards", len(got))
	}
	checkRoles(t, testIDs(keyslot.Count), got)
}
