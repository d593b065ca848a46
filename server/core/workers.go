package core

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

// workerPool runs short tasks on long-lived goroutines. A fresh goroutine
// starts with a small stack and grows it by copying as the command path
// deepens; profiles of pipelined SETs showed that copying taking ~40% of the
// CPU. Workers keep their grown stacks across tasks. Beyond maxWorkers idle
// or busy workers, tasks get plain goroutines, so the pool never blocks.
type workerPool struct {
	tasks chan func()
	slots chan struct{}
}
