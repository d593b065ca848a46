package server

import (
	"context"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
)

// This file is the node's half of stripe compaction (decision 0003;
// BCStore §III-B). An update that changes its object's size relocates it,
// and a deletion zeroes one, so sealed chunks collect garbage, and parity
// keeps covering it. The stripe engine picks the victim chunks
// (stripe.Engine.Compaction) and the coordinator rewrites the current objects of its chunks with the most
// garbage into open chunks, as writes at new versions through the usual
// write path (settleBlind): one that a client write of the same key
// overtakes, or that finds the key changed, is skipped, and the client's
// write moves the object anyway. An emptied chunk is freed (a Free update),
// and a stripe whose every chunk is free drops its parity. Once garbage is
// under the goal, chunks above free stripe numbers of their list move too
// (stripe.Data.Misplaced), so that the lists' stripes coincide again and
// parity shrinks with the data. The work is
// bounded by --compact-rate, in bytes of victim chunks per second, and by
// --compact-share of the time. Batch stripes (decision 0009) are
// collected in the same rounds (stripe.Engine.BatchGC): their live
// objects move through the write path, and emptied stripes are freed.

const (
	// compactEvery is how often compaction looks at the schemes.
	compactEvery = 100 * time.Millisecond
	// compactBatch bounds the objects relocated in one batch.
	compactBatch = 256
	// evacuateRate is the least rate, in bytes of chunks per second, at
	// which the lists of retired shards are emptied.
	evacuateRate = 4 << 20
)

// perRound is the bytes of victim chunks one round every compactEvery
// takes at rate bytes per second.
func perRound(rate int64) int { return int(rate * int64(compactEvery) / int64(time.Second)) }

// compactLoop runs compaction until ctx ends. Each round empties victims
// of at most --compact-rate's bytes per compactEvery; a round that worked
// for d is followed by a rest of d·(1/share − 1), so that compaction takes
// at most --compact-share of the time, as the rebuild does (a relocation
// costs about what a client's write does, and under a steady overwrite
// load of changing sizes there is always garbage).
//
// The lists of retired shards are emptied first, whatever --compact-rate
// says (at least evacuateRate; stripe.Engine.Evacuation): a drained node
// leaves only once no list it holds a position of in a retired shard
// holds objects (Node.retiredListsHeld).
func (n *Node) compactLoop(ctx context.Context) {
	wait := compactEvery
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = compactEvery
		if !n.stripes.InUse() || !n.Serving() || !compactable(n.Ctl.Map()) {
			continue
		}
		start := time.Now()
		work := n.stripes.Evacuation(perRound(max(n.Cfg.CompactRate, evacuateRate)))
		if budget := perRound(n.Cfg.CompactRate); len(work) == 0 && budget > 0 {
			work = n.stripes.Compaction(budget)
			work = append(work, n.stripes.BatchGC(ctx, budget)...)
		}
		for _, r := range work {
			for objs := r.Objects; len(objs) > 0; {
				k := min(len(objs), compactBatch)
				n.Relocate(ctx, relocations(r.Scheme, objs[:k]))
				objs = objs[k:]
			}
		}
		n.stripes.FreeEmptyBatchStripes()
		worked := len(work) > 0
		if worked {
			wait = max(wait, core.RestFor(time.Since(start), n.Cfg.CompactShare))
		}
	}
}

// compactable says whether compaction may run in m: the cluster is formed
// and no shard is being recovered or rebuilt, whose chunks those jobs are
// working on.
func compactable(m *cluster.Map) bool {
	return m.State == cluster.OK && m.RecoveringShards() == 0 && m.RebuildingShards() == 0
}

// relocations are compaction's victim objects of the stripe scheme with id
// scheme, as the core relocates them.
func relocations(scheme uint16, objs []stripe.Object) []core.PackedObject {
	out := make([]core.PackedObject, len(objs))
	for i, o := range objs {
		out[i] = core.PackedObject{Key: o.Key, Value: o.Value, Version: o.Version, ExpireAt: o.ExpireAt, Scheme: scheme}
	}
	return out
}
