package repair

import (
	"cmp"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
)

// This file is the order of a node's rebuild (issue 43): the work of
// every shard it coordinates, of every kind — keys copied or decoded in
// bulk, keys rebuilt one by one, the stripe engine's lists and batch
// stripes — merged into one plan by redundancy level, the failures the
// pieces' keys still survive, lowest first. Everything at level 0 is
// re-protected before anything at level 1, and so on (runLevel does a
// level's work, then the next).

// shardWork is one shard's planned rebuild: the shard as planned (its
// RebuildDone clears those positions of that round), its keys missing
// pieces and its stripe tasks.
type shardWork struct {
	shard cluster.Shard
	items []rebuildItem
	tasks []stripe.RebuildTask
}

// levelWork is the rebuild work at one redundancy level, of every shard
// and kind: stripe tasks, batches of keys copied or decoded in bulk (each
// of one shard), and keys rebuilt one by one.
type levelWork struct {
	level   int
	tasks   []shardTask
	copies  [][]rebuildItem
	decodes [][]rebuildItem
	keys    []rebuildItem
}

// shardTask is a stripe task and the shard it rebuilds.
type shardTask struct {
	shard int
	task  stripe.RebuildTask
}

// orderRebuild merges the shards' work into levels, lowest first. Bulk
// keys go in batches of up to copyBatchKeys of one shard, level and way.
func orderRebuild(work []shardWork) []levelWork {
	byLevel := map[int]*levelWork{}
	at := func(level int) *levelWork {
		if byLevel[level] == nil {
			byLevel[level] = &levelWork{level: level}
		}
		return byLevel[level]
	}
	for _, w := range work {
		for _, t := range w.tasks {
			lv := at(max(t.Level, 0))
			lv.tasks = append(lv.tasks, shardTask{shard: w.shard.ID, task: t})
		}
		cutBatches(w.items, at)
	}
	out := make([]levelWork, 0, len(byLevel))
	for _, lv := range byLevel {
		out = append(out, *lv)
	}
	slices.SortFunc(out, func(a, b levelWork) int { return a.level - b.level })
	return out
}

// cutBatches puts one shard's items into their levels (at): bulk ones
// in batches of one level and way, the others one by one.
func cutBatches(items []rebuildItem, at func(int) *levelWork) {
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b rebuildItem) int {
		return cmp.Or(a.level()-b.level(), int(a.bulk)-int(b.bulk))
	})
	var batch []rebuildItem
	flush := func() {
		if len(batch) == 0 {
			return
		}
		lv := at(batch[0].level())
		if batch[0].bulk == kind.RebuildCopy {
			lv.copies = append(lv.copies, batch)
		} else {
			lv.decodes = append(lv.decodes, batch)
		}
		batch = nil
	}
	for _, it := range items {
		if it.bulk == kind.RebuildPerKey {
			at(it.level()).keys = append(at(it.level()).keys, it)
			continue
		}
		if len(batch) > 0 && (batch[0].level() != it.level() || batch[0].bulk != it.bulk || len(batch) == copyBatchKeys) {
			flush()
		}
		batch = append(batch, it)
	}
	flush()
}

// pendingOf is the bytes levels plan to send, by level.
func pendingOf(levels []levelWork) []int64 {
	if len(levels) == 0 {
		return nil
	}
	out := make([]int64, levels[len(levels)-1].level+1)
	for _, lv := range levels {
		for _, t := range lv.tasks {
			out[lv.level] += t.task.Bytes
		}
		for _, b := range append(slices.Clone(lv.copies), lv.decodes...) {
			out[lv.level] += itemBytes(b)
		}
		out[lv.level] += itemBytes(lv.keys)
	}
	return out
}

// itemBytes is the bytes items plan to send.
func itemBytes(items []rebuildItem) int64 {
	var out int64
	for _, it := range items {
		out += it.bytes
	}
	return out
}

// lastLevels is, for each shard of work, the highest level it has work
// at (-1: none): once that level is done, so is the shard.
func lastLevels(work []shardWork) map[int]int {
	out := map[int]int{}
	for _, w := range work {
		last := -1
		for _, t := range w.tasks {
			last = max(last, t.Level, 0)
		}
		for _, it := range w.items {
			last = max(last, it.level())
		}
		out[w.shard.ID] = last
	}
	return out
}
