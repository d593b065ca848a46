package server

import (
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/core"
)

// failed returns m with the nodes at positions of shard 0's placement
// marked failed, in that order.
func failed(t *testing.T, m *cluster.Map, positions ...int) *cluster.Map {
	t.Helper()
	pl := slices.Clone(m.Shards[0].Placement)
	for _, p := range positions {
		m = mustApply(t, m, cluster.MarkFailed{ID: pl[p]})
	}
	return m
}

// TestDirectoryIntactNeedsALiveDirectoryNode: recovery of a shard can name
// every key whose pieces died only while a node that kept the shard's key
// directory (the last two up positions of its placement other than the
// coordinator) survives, up and not awaiting a rebuild.
func TestDirectoryIntactNeedsALiveDirectoryNode(t *testing.T) {
	for _, c := range []struct {
		name   string
		failed []int // positions of shard 0's 6-node placement
		intact bool
	}{
		{"the coordinator alone", []int{0}, true},
		{"the coordinator and one directory node", []int{0, 5}, true},
		{"the coordinator and the other", []int{4, 0}, true},
		{"the coordinator and both directory nodes", []int{0, 4, 5}, false},
		{"in another order", []int{5, 0, 4}, false},
		{"the coordinator and two nodes that hold no directory", []int{0, 1, 3}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := failed(t, testMap(t, 6), c.failed...)
			if got := core.DirectoryIntact(m, &m.Shards[0]); got != c.intact {
				t.Fatalf("directoryIntact = %v, want %v (rebuild %v)", got, c.intact, m.Shards[0].Rebuild)
			}
		})
	}
	// A directory node that failed before and was rebuilt past (its
	// position no longer listed for rebuild) was replaced by the next up
	// node, which the rebuild gave every entry: it counts.
	m := failed(t, testMap(t, 6), 5)
	sh := m.Shards[0]
	coord, _ := m.Coordinator(sh.First)
	m = mustApply(t, m, cluster.RebuildDone{Shard: 0, By: coord.ID, Positions: sh.Rebuild, Round: sh.RebuildRound})
	if len(m.Shards[0].Rebuild) != 0 {
		t.Fatalf("rebuild still lists %v", m.Shards[0].Rebuild)
	}
	if m = failed(t, m, 0, 4); !core.DirectoryIntact(m, &m.Shards[0]) {
		t.Fatal("the rebuilt directory node (position 3) was not counted")
	}
	if m = failed(t, m, 3); core.DirectoryIntact(m, &m.Shards[0]) {
		t.Fatal("intact with every directory node failed")
	}
}
