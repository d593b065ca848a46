package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// InmemNetwork is a network in memory for tests: listeners and dialers keyed
// by address strings, joined by buffered pipes, with faults injected per
// link (an unordered pair of addresses). Client, Server and Mux run over it
// unchanged, so cluster tests need no sockets. It is safe for concurrent use.
//
// A partition behaves like a cable pulled out, not like a reset: bytes on
// existing connections between the two sides stall, undelivered, and are
// delivered in order after Heal, while new dials between them fail at once.
// Calls over a partitioned link therefore end by their context, as over a
// real network; nothing is told the peer is gone.
type InmemNetwork struct {
	mu        sync.Mutex
	listeners map[string]*inmemListener
	links     map[[2]string]*inmemLink
}

// NewInmemNetwork returns an empty network.
func NewInmemNetwork() *InmemNetwork {
	return &InmemNetwork{
		listeners: make(map[string]*inmemListener),
		links:     make(map[[2]string]*inmemLink),
	}
}

// Listen returns a listener at addr, which must not be in use.
func (n *InmemNetwork) Listen(addr string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[addr]; ok {
		return nil, fmt.Errorf("transport: inmem listen %s: address in use", addr)
	}
	l := &inmemListener{n: n, addr: inmemAddr(addr), conns: make(chan net.Conn, 64), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// Dialer returns a DialFunc that connects from the address from, which
// names this end of the link for Partition and SetDelay (it need not be
// listening).
func (n *InmemNetwork) Dialer(from string) DialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return n.dial(ctx, from, addr)
	}
}

// Partition cuts the link between a and b until Heal.
func (n *InmemNetwork) Partition(a, b string) {
	n.link(a, b).set(func(l *inmemLink) { l.held = true })
}

// Heal ends every partition; stalled bytes flow again.
func (n *InmemNetwork) Heal() {
	n.mu.Lock()
	links := make([]*inmemLink, 0, len(n.links))
	for _, l := range n.links {
		links = append(links, l)
	}
	n.mu.Unlock()
	for _, l := range links {
		l.set(func(l *inmemLink) { l.held = false })
	}
}

// SetDelay makes every write between a and b, either way, arrive d later
// (latency, not bandwidth: writes do not block). It applies to bytes
// written afterwards, and order is kept.
func (n *InmemNetwork) SetDelay(a, b string, d time.Duration) {
	n.link(a, b).set(func(l *inmemLink) { l.delay = d })
}

func (n *InmemNetwork) link(a, b string) *inmemLink {
	key := [2]string{min(a, b), max(a, b)}
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[key]
	if l == nil {
		l = &inmemLink{changed: make(chan struct{})}
		n.links[key] = l
	}
	return l
}

func (n *InmemNetwork) dial(ctx context.Context, from, to string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[to]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("transport: inmem dial %s: connection refused", to)
	}
	link := n.link(from, to)
	if held, _ := link.state(); held {
		return nil, fmt.Errorf("transport: inmem dial %s from %s: partitioned", to, from)
	}
	up, down := newPipeBuf(link), newPipeBuf(link)
	client := &inmemConn{rd: down, wr: up, local: inmemAddr(from), remote: inmemAddr(to)}
	server := &inmemConn{rd: up, wr: down, local: inmemAddr(to), remote: inmemAddr(from)}
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, fmt.Errorf("transport: inmem dial %s: connection refused", to)
	case <-ctx.Done():
		return nil, fmt.Errorf("transport: inmem dial %s: %w", to, ctx.Err())
	}
}

// inmemLink is the fault state shared by all connections between two
// addresses. changed is closed and replaced on every change, waking readers.
type inmemLink struct {
	mu      sync.Mutex
	held    bool
	delay   time.Duration
	changed chan struct{}
}

func (l *inmemLink) set(change func(*inmemLink)) {
	l.mu.Lock()
	change(l)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// state reports whether the link is partitioned and the channel that will
// be closed at its next change.
func (l *inmemLink) state() (held bool, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held, l.changed
}

func (l *inmemLink) getDelay() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delay
}

type inmemAddr string

func (a inmemAddr) Network() string { return "inmem" }
func (a inmemAddr) String() string  { return string(a) }

type inmemListener struct {
	n     *InmemNetwork
	addr  inmemAddr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *inmemListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("transport: inmem accept %s: %w", l.addr, net.ErrClosed)
	}
}

// Close frees the address and closes connections not yet accepted.
func (l *inmemListener) Close() error {
	l.once.Do(func() {
		l.n.mu.Lock()
		delete(l.n.listeners, string(l.addr))
		close(l.done)
		l.n.mu.Unlock()
		for {
			select {
			case c := <-l.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *inmemListener) Addr() net.Addr { return l.addr }

// inmemConn is one end of a connection: it reads from rd and writes to wr,
// which are the other end's wr and rd.
type inmemConn struct {
	rd, wr        *pipeBuf
	local, remote inmemAddr
}

func (c *inmemConn) Read(p []byte) (int, error)  { return c.rd.read(p) }
func (c *inmemConn) Write(p []byte) (int, error) { return c.wr.write(p) }

// Close makes this end's reads and writes fail, the other end's reads return
// io.EOF once drained, and its writes fail.
func (c *inmemConn) Close() error {
	c.rd.shut(true)
	c.wr.shut(false)
	return nil
}

func (c *inmemConn) LocalAddr() net.Addr  { return c.local }
func (c *inmemConn) RemoteAddr() net.Addr { return c.remote }

func (c *inmemConn) SetDeadline(t time.Time) error {
	c.rd.setDeadline(t, true)
	c.wr.setDeadline(t, false)
	return nil
}

func (c *inmemConn) SetReadDeadline(t time.Time) error {
	c.rd.setDeadline(t, true)
	return nil
}

func (c *inmemConn) SetWriteDeadline(t time.Time) error {
	c.wr.setDeadline(t, false)
	return nil
}

// pipeBuf is one direction of a connection: an unbounded queue of written
// chunks, each deliverable from its time on, and only while the link is not
// partitioned.
type pipeBuf struct {
	link *inmemLink

	mu        sync.Mutex
	chunks    []chunk
	readShut  bool      // the reading end closed: reads and writes fail
	writeShut bool      // the writing end closed: reads drain, then io.EOF
	rdeadline time.Time // for the reading end
	wdeadline time.Time // for the writing end
	changed   chan struct{}
}

type chunk struct {
	b  []byte
	at time.Time // deliverable from
}

func newPipeBuf(link *inmemLink) *pipeBuf {
	return &pipeBuf{link: link, changed: make(chan struct{})}
}

// signal wakes waiting readers; the caller holds mu.
func (p *pipeBuf) signal() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *pipeBuf) write(b []byte) (int, error) {
	delay := p.link.getDelay()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.writeShut:
		return 0, net.ErrClosed
	case p.readShut:
		return 0, io.ErrClosedPipe
	case !p.wdeadline.IsZero() && !time.Now().Before(p.wdeadline):
		return 0, os.ErrDeadlineExceeded
	}
	if len(b) == 0 {
		return 0, nil
	}
	at := time.Now().Add(delay)
	if n := len(p.chunks); n > 0 && p.chunks[n-1].at.After(at) {
		at = p.chunks[n-1].at // a shorter delay must not reorder bytes
	}
	p.chunks = append(p.chunks, chunk{b: append([]byte(nil), b...), at: at})
	p.signal()
	return len(b), nil
}

func (p *pipeBuf) read(b []byte) (int, error) {
	for {
		held, linkChanged := p.link.state()
		p.mu.Lock()
		n, wait, err := p.tryRead(b, held)
		if n > 0 || err != nil {
			p.mu.Unlock()
			return n, err
		}
		changed := p.changed
		p.mu.Unlock()
		p.wait(wait, changed, linkChanged)
	}
}

// wait blocks until either channel closes or, if d > 0, d has passed.
func (p *pipeBuf) wait(d time.Duration, changed, linkChanged <-chan struct{}) {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-changed:
	case <-linkChanged:
	case <-timeout:
	}
}

// tryRead reads what is deliverable now. With nothing to read it returns how
// long to wait at most before looking again (0: until a change). The caller
// holds mu.
func (p *pipeBuf) tryRead(b []byte, held bool) (n int, wait time.Duration, err error) {
	now := time.Now()
	switch {
	case p.readShut:
		return 0, 0, net.ErrClosed
	case !p.rdeadline.IsZero() && !now.Before(p.rdeadline):
		return 0, 0, os.ErrDeadlineExceeded
	case len(b) == 0:
		return 0, 0, nil
	}
	if !p.rdeadline.IsZero() {
		wait = p.rdeadline.Sub(now)
	}
	if len(p.chunks) == 0 {
		if p.writeShut {
			return 0, 0, io.EOF
		}
		return 0, wait, nil
	}
	if held {
		return 0, wait, nil
	}
	if c := &p.chunks[0]; c.at.After(now) {
		if d := c.at.Sub(now); wait == 0 || d < wait {
			wait = d
		}
		return 0, wait, nil
	}
	for n < len(b) && len(p.chunks) > 0 && !p.chunks[0].at.After(now) {
		c := &p.chunks[0]
		k := copy(b[n:], c.b)
		n += k
		c.b = c.b[k:]
		if len(c.b) == 0 {
			p.chunks[0] = chunk{}
			p.chunks = p.chunks[1:]
		}
	}
	return n, 0, nil
}

// shut closes the reading (reader true) or writing end.
func (p *pipeBuf) shut(reader bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if reader {
		p.readShut = true
		p.chunks = nil
	} else {
		p.writeShut = true
	}
	p.signal()
}

func (p *pipeBuf) setDeadline(t time.Time, reader bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if reader {
		p.rdeadline = t
	} else {
		p.wdeadline = t
	}
	p.signal()
}
