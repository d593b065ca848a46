package repair

import (
	"fmt"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
)

// items makes count items of shard at remaining redundancy, rebuilt how,
// of bytes each.
func items(shard, remaining, count int, how kind.Rebuild, bytes int64) []rebuildItem {
	out := make([]rebuildItem, count)
	for i := range out {
		out[i] = rebuildItem{key: fmt.Appendf(nil, "s%d:r%d:%d:%d", shard, remaining, how, i), remaining: remaining, bulk: how, bytes: bytes, shard: shard}
	}
	return out
}

// TestOrderRebuildByLevelAcrossShardsAndKinds: the plan of a node
// coordinating two shards, with copied, decoded and per-key keys and
// stripe tasks at several levels (a key beyond tolerance at level 0),
// comes out level by level, lowest first, each level holding exactly the
// work of that level from every shard and kind, bulk keys in batches of
// one shard, level and way of at most copyBatchKeys; the pending bytes
// add up per level, and each shard is done after its highest level.
func TestOrderRebuildByLevelAcrossShardsAndKinds(t *testing.T) {
	a := shardWork{shard: cluster.Shard{ID: 3},
		items: slices.Concat(items(3, 1, 5, kind.RebuildCopy, 10), items(3, 0, copyBatchKeys+1, kind.RebuildCopy, 1),
			items(3, 1, 2, kind.RebuildDecode, 100), items(3, -1, 1, kind.RebuildDecode, 7), items(3, 2, 3, kind.RebuildPerKey, 1000)),
		tasks: []stripe.RebuildTask{{Level: 1, Bytes: 4096, What: "list 3"}, {Level: 0, Bytes: 512, What: "batch of 3"}}}
	b := shardWork{shard: cluster.Shard{ID: 5},
		items: slices.Concat(items(5, 0, 4, kind.RebuildDecode, 50), items(5, 1, 1, kind.RebuildPerKey, 3))}
	c := shardWork{shard: cluster.Shard{ID: 6}} // nothing lacks a piece
	levels := orderRebuild([]shardWork{a, b, c})
	if len(levels) != 3 {
		t.Fatalf("%d levels, want 3", len(levels))
	}
	seen := map[string]bool{}
	for i, lv := range levels {
		if lv.level != i {
			t.Fatalf("level %d at place %d", lv.level, i)
		}
		for _, tk := range lv.tasks {
			if tk.task.Level != lv.level {
				t.Errorf("task %s of level %d at level %d", tk.task.What, tk.task.Level, lv.level)
			}
		}
		for _, batch := range append(slices.Clone(lv.copies), lv.decodes...) {
			if len(batch) == 0 || len(batch) > copyBatchKeys {
				t.Errorf("level %d: a batch of %d keys", lv.level, len(batch))
			}
			for _, it := range batch {
				if it.level() != lv.level || it.shard != batch[0].shard || it.bulk != batch[0].bulk {
					t.Errorf("level %d: %s (level %d, shard %d, way %d) in a batch of shard %d, way %d", lv.level, it.key, it.level(), it.shard, it.bulk, batch[0].shard, batch[0].bulk)
				}
				seen[string(it.key)] = true
			}
		}
		for _, it := range lv.keys {
			if it.level() != lv.level || it.bulk != kind.RebuildPerKey {
				t.Errorf("level %d: %s (level %d, way %d) among the keys rebuilt one by one", lv.level, it.key, it.level(), it.bulk)
			}
			seen[string(it.key)] = true
		}
	}
	if want := len(a.items) + len(b.items); len(seen) != want {
		t.Errorf("%d keys planned, want %d", len(seen), want)
	}
	if got := [3]int{len(levels[0].copies), len(levels[0].decodes), len(levels[0].tasks)}; got != [3]int{2, 2, 1} {
		t.Errorf("level 0: %d copy batches, %d decode batches, %d tasks; want 2 (%d+1 keys), 2 (one per shard), 1", got[0], got[1], got[2], copyBatchKeys)
	}
	want := []int64{copyBatchKeys + 1 + 7 + 4*50 + 512, 5*10 + 2*100 + 3 + 4096, 3 * 1000}
	if got := pendingOf(levels); !slices.Equal(got, want) {
		t.Errorf("pending %v, want %v", got, want)
	}
	if got := lastLevels([]shardWork{a, b, c}); got[3] != 2 || got[5] != 1 || got[6] != -1 {
		t.Errorf("last levels %v, want shard 3 at 2, 5 at 1, 6 with none (-1)", got)
	}
}

// TestOrderRebuildOfNothing: no work, no levels, nothing pending.
func TestOrderRebuildOfNothing(t *testing.T) {
	if levels := orderRebuild([]shardWork{{shard: cluster.Shard{ID: 1}}}); len(levels) != 0 || pendingOf(levels) != nil {
		t.Fatalf("levels %v, pending %v", levels, pendingOf(levels))
	}
}

// TestRoundCovers: a running round goes on while the map lists only the
// shards it planned, in the rebuild rounds it planned them in (or fewer:
// shards it finished); a shard it did not plan, or a new round of one it
// did (a position changed hands: a new failure), calls for a new plan.
func TestRoundCovers(t *testing.T) {
	r := rebuildRounds{covers: map[int]uint64{1: 4, 2: 7}}
	for _, c := range []struct {
		shards []cluster.Shard
		want   bool
	}{
		{[]cluster.Shard{{ID: 1, RebuildRound: 4}, {ID: 2, RebuildRound: 7}}, true},
		{[]cluster.Shard{{ID: 2, RebuildRound: 7}}, true},
		{nil, true},
		{[]cluster.Shard{{ID: 1, RebuildRound: 5}}, false},
		{[]cluster.Shard{{ID: 1, RebuildRound: 4}, {ID: 3, RebuildRound: 1}}, false},
	} {
		if got := r.covered(c.shards); got != c.want {
			t.Errorf("covered(%v) = %v, want %v", c.shards, got, c.want)
		}
	}
}
