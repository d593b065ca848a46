package server

import (
	"context"
	"time"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/store"
)

const (
	expireEvery  = 100 * time.Millisecond
	expireBatch  = 200
	expireBudget = 25 * time.Millisecond
)

// Expiry works like Redis's: lazily when a read finds an expired key, and
// by an active cycle that samples expired keys a bounded number at a time.
// Both delete through the coordinator's write path so that redundancy is
// released too. No per-key timers.

// expireCycle runs the active expiry until ctx ends.
func (n *Node) expireCycle(ctx context.Context) {
	t := time.NewTicker(expireEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-n.ExpireQ:
			n.ExpireKey(ctx, key)
		case <-t.C:
			n.expireSample(ctx)
		}
	}
}

// expireSample deletes up to expireBatch expired keys per round, rounds
// repeating while the budget lasts and each round finds a full batch.
func (n *Node) expireSample(ctx context.Context) {
	deadline := time.Now().Add(expireBudget)
	for time.Now().Before(deadline) {
		var keys [][]byte
		n.Primary.SampleExpired(core.NowMs(), expireBatch, func(key []byte, _ store.Meta) {
			keys = append(keys, append([]byte(nil), key...))
		})
		for _, k := range keys {
			n.ExpireKey(ctx, k)
		}
		if len(keys) < expireBatch {
			break
		}
	}
	n.stripes.SampleExpired(deadline, core.NowMs, func(key []byte) { n.ExpireKey(ctx, key) })
}
