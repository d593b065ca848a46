package core

import (
	"context"
	"sync"
	"time"
)

// Pacer keeps work at a rate of bytes (or cost units) per second, shared by
// the workers that do it: a shard's rebuild (--rebuild-rate), the scrub
// (--scrub-rate) and a migration's movers (the rebalance's rate, which may
// change while they run: a new rate starts a new measure). A rate of 0 or
// less does not bound.
type Pacer struct {
	mu    sync.Mutex
	start time.Time
	done  int64
	rate  int64
}

// NewPacer returns a Pacer whose measure starts now.
func NewPacer() *Pacer { return &Pacer{start: time.Now()} }

// Wait counts n more done and sleeps while the work is ahead of rate. It
// returns ctx's error when ctx ends first.
func (p *Pacer) Wait(ctx context.Context, n, rate int64) error {
	if rate <= 0 {
		return nil
	}
	p.mu.Lock()
	if p.start.IsZero() || p.rate != 0 && rate != p.rate {
		p.start, p.done = time.Now(), 0
	}
	p.rate = rate
	p.done += n
	ahead := time.Duration(float64(p.done)/float64(rate)*float64(time.Second)) - time.Since(p.start)
	p.mu.Unlock()
	if ahead <= 0 {
		return nil
	}
	select {
	case <-time.After(ahead):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RestFor is how long a worker that worked d rests so that it works at
// most share of the time: d·(1/share − 1). A share outside (0, 1) does
// not rest. Bounding time rather than bytes follows what the work costs
// (a decode, a round trip, a machine slowed by load all lengthen d), where
// a byte rate follows only what it sends: the rebuild (--rebuild-share),
// compaction (--compact-share) and the movers of a migration
// (--migrate-share) rest by it.
func RestFor(d time.Duration, share float64) time.Duration {
	if share <= 0 || share >= 1 {
		return 0
	}
	return time.Duration(float64(d) * (1/share - 1))
}

// Rest sleeps RestFor(d, share), or until ctx ends.
func Rest(ctx context.Context, d time.Duration, share float64) {
	rest := RestFor(d, share)
	if rest <= 0 {
		return
	}
	t := time.NewTimer(rest)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
