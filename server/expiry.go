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
	for _, s := range n.stripes.all() {
		n.expireStripeSample(ctx, s, deadline)
	}
}

// expireStripeChunks is how many chunks one sample of a stripe scheme
// looks at.
const expireStripeChunks = 8

// expireStripeSample deletes the expired objects of stripe scheme s's
// chunks, sampling a few chunks at a time (stripe.Data.SampleExpired)
// while more than a quarter of the objects with a TTL it finds have
// expired and the budget lasts, as Redis's active expiry does.
func (n *Node) expireStripeSample(ctx context.Context, s *stripeScheme, deadline time.Time) {
	for time.Now().Before(deadline) {
		var keys [][]byte
		s.mu.Lock()
		withTTL := s.data.SampleExpired(nowMs(), expireStripeChunks, func(key []byte) { keys = append(keys, key) })
		s.mu.Unlock()
		for _, k := range keys {
			n.expireKey(ctx, k)
		}
		if len(keys)*4 <= withTTL || len(keys) == 0 {
			return
		}
	}
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
