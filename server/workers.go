package server

import (
	"context"
	"sync"
	"sync/atomic"
)

// workerPool runs short tasks on long-lived goroutines. A fresh goroutine
// starts with a small stack and grows it by copying as the command path
// deepens; profiles of pipelined SETs showed that copying taking ~40% of the
// CPU. Workers keep their grown stacks across tasks. Beyond maxWorkers idle
// or busy workers, tasks get plain goroutines, so the pool never blocks.
type workerPool struct {
	tasks chan func()
	slots chan struct{}
}

const maxWorkers = 1024

func newWorkerPool() *workerPool {
	return &workerPool{tasks: make(chan func()), slots: make(chan struct{}, maxWorkers)}
}

// Go runs f on an idle worker, a new worker, or a plain goroutine.
func (p *workerPool) Go(f func()) {
	select {
	case p.tasks <- f:
		return
	default:
	}
	select {
	case p.slots <- struct{}{}:
		go p.work(f)
	default:
		go f()
	}
}

func (p *workerPool) work(f func()) {
	for {
		f()
		f = <-p.tasks
	}
}

// forEach runs fn(ctx, i) for i in 0..count-1, up to width at a time, in
// index order of start. The first error cancels the rest and is returned.
func forEach(ctx context.Context, count, width int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(width, count) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < count && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
