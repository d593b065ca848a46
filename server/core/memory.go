package core

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrOOM is Redis's reply when maxmemory is reached; deletions still work.
var ErrOOM = errors.New("OOM command not allowed when used memory > 'maxmemory'.")

// memGauge caches the bytes the stores hold, refreshed a few times a
// second, so that the write path checks maxmemory without walking shards.
type memGauge struct{ used atomic.Int64 }

func (g *memGauge) Refresh(n *Coordinator) func(context.Context) {
	return func(ctx context.Context) {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			g.used.Store(n.Primary.Stats().MemoryBytes() + n.Pieces.Stats().MemoryBytes())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}

// Used is the bytes the stores held at the last refresh: what maxmemory
// bounds, and INFO's used_memory.
func (g *memGauge) Used() int64 { return g.used.Load() }

// checkMemory refuses a write that would grow the node beyond maxmemory.
// The bound is checked against the last refresh plus this write, so it can
// overshoot by one refresh interval of writes, like Redis's per-command
// check overshoots by one command.
func (n *Coordinator) checkMemory(op *WriteOp) error {
	if n.Cfg.MaxMemory == 0 || op.Del || op.Shrinks {
		return nil
	}
	if n.MemUsed.used.Load()+int64(len(op.Key)+len(op.Value)) > n.Cfg.MaxMemory {
		return ErrOOM
	}
	return nil
}
