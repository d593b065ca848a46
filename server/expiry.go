package server

import (
	"context"
	"time"

	"github.com/memgest/memgest/store"
)

// Expiry works like Redis's: lazily when a read finds an expired key, and
// by an active cycle that samples expired keys a bounded number at a time.
// Both delete through the coordinator's write path so that redundancy is
// released too. No per-key timers.

const (
	expireEvery     = 100 * time.Millisecond
	expireBatch     = 200
	expireBudget    = 25 * time.Millisecond
	expireQueueSize = 4096
)

// expireCycle runs the active expiry until ctx ends.
func (n *Node) expireCycle(ctx context.Context) {
	t := time.NewTicker(expireEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-n.expireQ:
			n.expireKey(ctx, key)
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
		n.primary.SampleExpired(nowMs(), expireBatch, func(key []byte, _ store.Meta) {
			keys = append(keys, append([]byte(nil), key...))
		})
		for _, k := range keys {
			n.expireKey(ctx, k)
		}
		if len(keys) < expireBatch {
			break
		}
	}
	n.stripes.SampleExpired(deadline, nowMs, func(key []byte) { n.expireKey(ctx, key) })
}

// expireKey deletes key if it is still expired when its turn comes.
func (n *Node) expireKey(ctx context.Context, key []byte) {
	expired := false
	err := n.rmwMeta(ctx, key, func(cur current) (*writeOp, error) {
		meta, ok := n.keyMeta(key) // the primary store's or a stripe scheme's
		if !ok || meta.ExpireAt == 0 || meta.ExpireAt > nowMs() {
			return nil, nil
		}
		expired = true
		entry, _ := n.ctl.Map().SchemeByID(meta.Scheme)
		return &writeOp{key: key, del: true, entry: entry}, nil
	})
	if err == nil && expired {
		n.stats.expired.Add(1)
	}
}

// expireLater queues key for deletion after a read found it expired; a full
// queue drops it, and the active cycle finds it later.
func (n *Node) expireLater(key []byte) {
	select {
	case n.expireQ <- append([]byte(nil), key...):
	default:
	}
}
