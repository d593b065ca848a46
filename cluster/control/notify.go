package control

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
)

// hub holds the latest map and tells waiters and subscribers about new ones.
// publish is called only from the Raft FSM goroutine, so maps arrive in log
// order.
type hub struct {
	cur     atomic.Pointer[cluster.Map]
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every publish
	subs    map[chan *cluster.Map]struct{}
	closed  bool
}

func newHub(m *cluster.Map) *hub {
	h := &hub{changed: make(chan struct{}), subs: map[chan *cluster.Map]struct{}{}}
	h.cur.Store(m)
	return h
}

func (h *hub) load() *cluster.Map { return h.cur.Load() }

func (h *hub) publish(m *cluster.Map) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur.Store(m)
	if h.closed {
		return
	}
	close(h.changed)
	h.changed = make(chan struct{})
	for ch := range h.subs {
		offer(ch, m)
	}
}

// offer puts m in ch (capacity 1), replacing an undelivered older map, so a
// slow subscriber skips intermediate maps but always gets the latest. Only
// publish and subscribe send, under h.mu, so the send cannot block.
func offer(ch chan *cluster.Map, m *cluster.Map) {
	select {
	case ch <- m:
	default:
		select {
		case <-ch:
		default:
		}
		ch <- m
	}
}

func (h *hub) subscribe() (<-chan *cluster.Map, func()) {
	ch := make(chan *cluster.Map, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(ch)
		return ch, func() {}
	}
	h.subs[ch] = struct{}{}
	offer(ch, h.load())
	return ch, func() { h.unsubscribe(ch) }
}

func (h *hub) unsubscribe(ch chan *cluster.Map) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[ch]; ok {
		delete(h.subs, ch)
		close(ch)
	}
}

// wait blocks until cond holds for the current map.
func (h *hub) wait(ctx context.Context, cond func(*cluster.Map) bool) (*cluster.Map, error) {
	for {
		h.mu.Lock()
		m, changed, closed := h.load(), h.changed, h.closed
		h.mu.Unlock()
		if cond(m) {
			return m, nil
		}
		if closed {
			return nil, cluster.ErrClosed
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// close wakes every waiter and closes every subscription.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.changed)
	for ch := range h.subs {
		close(ch)
	}
	h.subs = nil
}
