package transport

import "sync"

// Pool holds one Client per peer address, made on first request with the
// pool's options. Clients stay until Close; one whose peer is gone holds no
// connection, only a few words of memory. It is safe for concurrent use.
type Pool struct {
	opts []Option

	mu      sync.Mutex
	clients map[string]*Client
	closed  bool
}

// NewPool returns an empty pool whose clients are made with opts.
func NewPool(opts ...Option) *Pool {
	return &Pool{opts: opts, clients: make(map[string]*Client)}
}

// Get returns the client for addr, creating it (without connecting) if
// needed. After Close it returns a closed client, whose calls fail with
// ErrClosed.
func (p *Pool) Get(addr string) *Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[addr]; ok {
		return c
	}
	c := Dial(addr, p.opts...)
	if p.closed {
		c.Close()
		return c
	}
	p.clients[addr] = c
	return c
}

// Close closes every client in the pool.
func (p *Pool) Close() error {
	p.mu.Lock()
	clients := p.clients
	p.clients = make(map[string]*Client)
	p.closed = true
	p.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
	return nil
}
