package repair

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
)

// This file runs a node's rebuild as rounds (issue 43). A round plans
// the work of every shard the node coordinates that awaits a rebuild
// (planShard), orders it by redundancy level (orderRebuild) and does it a
// level at a time: no piece of a level is sent before every step of the
// levels below has ended. One round runs at a time. A map that lists new
// work (a shard the round did not plan, or a shard's rebuild list
// changed: a new failure) or starts a recovery cancels the round, and the
// next plans again from the holders' listings, so the keys a new failure
// left with the least redundancy go first. A shard whose step fails
// leaves the round (it is planned again by the next), so one unreachable
// holder holds no other shard back.

// rebuildRounds is the round a node runs, if any.
type rebuildRounds struct {
	mu      sync.Mutex
	running bool
	cancel  context.CancelFunc
	covers  map[int]uint64 // the shards the running round planned, with their RebuildRound
	count   uint64         // rounds begun
}

// covered says whether the running round planned every shard of shards
// in its current rebuild round.
func (r *rebuildRounds) covered(shards []cluster.Shard) bool {
	for _, sh := range shards {
		if round, ok := r.covers[sh.ID]; !ok || round != sh.RebuildRound {
			return false
		}
	}
	return true
}

// startRebuilds begins a round over every shard this node coordinates
// whose map entry lists lost positions, once no recovery is under way: a
// recovery is what keeps a failed coordinator's keys unavailable, so it
// gets the CPU first, and rebuilds wait for it (well under a second). A
// round running when new work or a recovery appears is cancelled.
func (n *Repairer) startRebuilds(ctx context.Context) {
	m := n.Ctl.Map()
	if m.State != cluster.OK || !n.Serving() {
		return
	}
	shards, busy := n.shardsToRebuild(m), recoveryUnderway(m)
	r := &n.rounds
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		if busy || !r.covered(shards) {
			r.cancel() // the plan may miss keys left with less redundancy
		}
		return
	}
	if busy || len(shards) == 0 {
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	r.running, r.cancel, r.covers = true, cancel, map[int]uint64{}
	for _, sh := range shards {
		r.covers[sh.ID] = sh.RebuildRound
	}
	r.count++
	go n.runRound(ctx, rctx, cancel, m, r.count, shards)
}

// shardsToRebuild are the shards of m this node coordinates that list
// positions to rebuild and are not recovering.
func (n *Repairer) shardsToRebuild(m *cluster.Map) []cluster.Shard {
	var out []cluster.Shard
	for _, sh := range m.Shards {
		if c, ok := m.CoordinatorOf(&sh); ok && c.ID == n.NodeID && len(sh.Rebuild) > 0 && !sh.Recovering {
			out = append(out, sh)
		}
	}
	return out
}

// round is one rebuild round under way: its shards as planned, the
// highest level each has work at, the shards whose work failed, and the
// pacer of its bytes.
type round struct {
	id     uint64
	shards []cluster.Shard
	last   map[int]int
	pace   *core.Pacer
	began  time.Time
	keys   atomic.Int64 // keys rebuilt

	mu     sync.Mutex
	failed map[int]bool
}

// fail takes shard out of the round: its steps left are skipped, and no
// RebuildDone is proposed for it.
func (r *round) fail(shard int) {
	r.mu.Lock()
	r.failed[shard] = true
	r.mu.Unlock()
}

// ok says whether shard's work has not failed.
func (r *round) ok(shard int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.failed[shard]
}

// runRound does round id over shards of m under rctx, then ends it
// (cancel) and, if a newer map cancelled it, starts the next at once
// (ctx: the node's).
func (n *Repairer) runRound(ctx, rctx context.Context, cancel context.CancelFunc, m *cluster.Map, id uint64, shards []cluster.Shard) {
	n.doRound(rctx, m, &round{id: id, shards: shards, pace: core.NewPacer(), began: time.Now(), failed: map[int]bool{}})
	cancelled := rctx.Err() != nil && ctx.Err() == nil
	cancel()
	n.rounds.mu.Lock()
	n.rounds.running = false
	n.rounds.mu.Unlock()
	if cancelled {
		n.startRebuilds(ctx)
	}
}

// doRound plans r's shards in m and does their work level by level,
// proposing each shard's RebuildDone once its last level is done.
func (n *Repairer) doRound(ctx context.Context, m *cluster.Map, r *round) {
	defer n.Rebuild.Begin()()
	n.Rebuild.Started.CompareAndSwap(0, time.Now().UnixNano())
	work := n.planRound(ctx, m, r)
	levels, planned := orderRebuild(work), plannedKeys(work)
	r.last = lastLevels(work)
	n.Rebuild.KeysTotal.Add(planned)
	n.Rebuild.SetPending(pendingOf(levels))
	n.finishShards(ctx, r, -1)
	for _, lv := range levels {
		n.runLevel(ctx, r, lv)
		n.finishShards(ctx, r, lv.level)
	}
	n.Rebuild.SetPending(nil)
	n.Rebuild.KeysTotal.Add(r.keys.Load() - planned) // what is left is planned again by the next round
}

// planRound plans the rebuild of each of r's shards in m, side by side
// (listing a shard's holders is mostly waiting on them); a shard whose
// plan failed leaves the round.
func (n *Repairer) planRound(ctx context.Context, m *cluster.Map, r *round) []shardWork {
	plans := make([]*shardWork, len(r.shards))
	forEach(ctx, len(r.shards), len(r.shards), func(ctx context.Context, i int) {
		sh := r.shards[i]
		w, err := n.planShard(ctx, m, sh)
		switch {
		case err != nil && ctx.Err() != nil:
			r.fail(sh.ID) // the round was cancelled
		case err != nil:
			n.stepFailed(r, sh.ID, "planning", err)
		default:
			plans[i] = &w
		}
	})
	var work []shardWork
	for _, w := range plans {
		if w != nil {
			work = append(work, *w)
		}
	}
	return work
}

// plannedKeys counts the keys work plans to rebuild.
func plannedKeys(work []shardWork) int64 {
	var out int64
	for _, w := range work {
		out += int64(len(w.items))
	}
	return out
}

// finishShards proposes RebuildDone for the shards of r whose last work
// was at level (-1: those with none), unless it failed or the round was
// cancelled.
func (n *Repairer) finishShards(ctx context.Context, r *round, level int) {
	for _, sh := range r.shards {
		if last, planned := r.last[sh.ID]; !planned || last != level || !r.ok(sh.ID) || ctx.Err() != nil {
			continue
		}
		done := cluster.RebuildDone{Shard: sh.ID, By: n.NodeID, Positions: sh.Rebuild, Round: sh.RebuildRound}
		if _, err := n.Propose(ctx, done); err != nil {
			n.Log.Warn("shard rebuild done, proposal failed; retrying", "shard", sh.ID, "err", err)
			continue
		}
		n.Log.Info("shard rebuilt", "shard", sh.ID, "round", r.id, "last_level", level, "took", time.Since(r.began))
	}
}

// step is one step of a level: what its event log calls it, and its
// shard.
type step struct {
	what  string
	shard int
	paced bool // by --rebuild-rate and --rebuild-share (not the stripe tasks)
}

// stepDone is what a step did: the keys rebuilt, the bytes sent, and
// the bytes of the plan it covered.
type stepDone struct {
	keys  int
	sent  int
	bytes int64
}

// runLevel does every step of lv: the stripe tasks (a shard's in turn,
// shards side by side), the batches copied,
// the batches decoded, then the keys rebuilt one by one (those a decode
// batch could not decode among them).
func (n *Repairer) runLevel(ctx context.Context, r *round, lv levelWork) {
	byShard := tasksByShard(lv.tasks)
	forEach(ctx, len(byShard), copyWorkers, func(ctx context.Context, i int) {
		for _, t := range byShard[i] { // one shard's in turn, as the engine's Rebuild runs them
			n.runStep(ctx, r, lv.level, step{what: t.task.What, shard: t.shard}, func() (stepDone, error) {
				return stepDone{bytes: t.task.Bytes}, t.task.Run(ctx)
			})
		}
	})
	forEach(ctx, len(lv.copies), copyWorkers, func(ctx context.Context, i int) {
		b := lv.copies[i]
		n.runStep(ctx, r, lv.level, stepOf("copies", b), func() (stepDone, error) {
			sent, err := n.rebuildCopies(ctx, b, b[0].have.lacks)
			return stepDone{keys: len(b), sent: sent, bytes: itemBytes(b)}, err
		})
	})
	keys := append(slices.Clone(lv.keys), n.runDecodes(ctx, r, lv)...)
	forEach(ctx, len(keys), rebuildWorkers, func(ctx context.Context, i int) {
		it := keys[i : i+1]
		n.runStep(ctx, r, lv.level, stepOf("keys", it), func() (stepDone, error) {
			sent, err := n.RebuildKey(ctx, it[0].key, it[0].have.lacks)
			var lost *kind.LostError
			if errors.As(err, &lost) { // a lost key is reported, not rebuilt
				err = nil
			}
			return stepDone{keys: 1, sent: sent, bytes: it[0].bytes}, err
		})
	})
}

// tasksByShard groups tasks by shard, in their order.
func tasksByShard(tasks []shardTask) [][]shardTask {
	var out [][]shardTask
	at := map[int]int{}
	for _, t := range tasks {
		i, ok := at[t.shard]
		if !ok {
			i, at[t.shard] = len(out), len(out)
			out = append(out, nil)
		}
		out[i] = append(out[i], t)
	}
	return out
}

// runDecodes does lv's decode batches and returns the keys they could
// not decode, for the per-key path.
func (n *Repairer) runDecodes(ctx context.Context, r *round, lv levelWork) []rebuildItem {
	var mu sync.Mutex
	var fallback []rebuildItem
	forEach(ctx, len(lv.decodes), copyWorkers, func(ctx context.Context, i int) {
		b := lv.decodes[i]
		n.runStep(ctx, r, lv.level, stepOf("decodes", b), func() (stepDone, error) {
			sent, left, err := n.rebuildDecodes(ctx, b, *b[0].have)
			mu.Lock()
			fallback = append(fallback, left...)
			mu.Unlock()
			return stepDone{keys: len(b) - len(left), sent: sent, bytes: itemBytes(b) - itemBytes(left)}, err
		})
	})
	return fallback
}

// forEach runs fn for 0..count-1, width at a time, until ctx ends (a
// step's failure is its shard's, not the level's: fn reports none).
func forEach(ctx context.Context, count, width int, fn func(ctx context.Context, i int)) {
	_ = core.ForEach(ctx, count, width, func(ctx context.Context, i int) error { fn(ctx, i); return nil })
}

// stepOf is the paced step of a batch of items (or one).
func stepOf(what string, items []rebuildItem) step {
	return step{what: what, shard: items[0].shard, paced: true}
}

// runStep does one step of round r at level, unless its shard's work
// failed already: it logs it (RebuildEvent), counts what it did, and
// paces its worker.
func (n *Repairer) runStep(ctx context.Context, r *round, level int, s step, do func() (stepDone, error)) {
	if !r.ok(s.shard) || ctx.Err() != nil {
		return
	}
	began, seq := time.Now(), n.events.begin()
	done, err := do()
	n.events.end(RebuildEvent{Round: r.id, Level: level, Shard: s.shard, What: s.what, Keys: done.keys, Bytes: done.bytes, Begin: seq})
	if err == nil {
		n.Rebuild.DonePending(level, done.bytes) // a failed step's bytes are still to rebuild
	}
	r.keys.Add(int64(done.keys))
	if s.paced {
		n.account(ctx, r.pace, done.keys, done.sent, began)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		r.fail(s.shard) // the round was cancelled: the next plans again
	case err != nil:
		n.stepFailed(r, s.shard, s.what, err)
	}
}

// stepFailed takes shard out of round r after a step (what) failed.
func (n *Repairer) stepFailed(r *round, shard int, what string, err error) {
	r.fail(shard)
	n.Log.Warn("shard rebuild failed; retrying", "shard", shard, "step", what, "err", err)
}

// account counts a step of keys and bytes that began at began, and paces
// its worker: by time (--rebuild-share: a step slowed by load earns a
// longer rest, so the bound follows what the rebuild costs, decodes
// included) and by bytes (--rebuild-rate, the round's pace).
func (n *Repairer) account(ctx context.Context, pace *core.Pacer, keys, bytes int, began time.Time) {
	n.Rebuild.KeysDone.Add(int64(keys))
	n.Rebuild.BytesDone.Add(int64(bytes))
	faults.Hit(faults.MidRebuild)
	core.Rest(ctx, time.Since(began), n.Cfg.RebuildShare)
	_ = pace.Wait(ctx, int64(bytes), n.Cfg.RebuildRate)
}
