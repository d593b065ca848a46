package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Tags a connection on the shared peer port starts with.
const (
	// TagFrames marks a connection carrying transport frames (Client, Server).
	TagFrames byte = 'F'
	// TagRaft marks a connection of the Raft transport's stream layer.
	TagRaft byte = 'R'
)

// TagTimeout bounds how long a Mux waits for the tag byte of a new
// connection before closing it.
const TagTimeout = 10 * time.Second

// Mux shares one listener among protocols: it reads one tag byte from each
// accepted connection and hands the connection, tag consumed, to the
// listener registered for that tag. Connections with an unknown tag, or none
// within TagTimeout, are closed.
type Mux struct {
	l          net.Listener
	tagTimeout time.Duration // TagTimeout; shorter in tests
	done       chan struct{}
	once       sync.Once

	mu      sync.Mutex
	subs    map[byte]*muxListener
	routing map[net.Conn]struct{} // accepted, tag not yet read
}

// NewMux returns a Mux over l. Register listeners with Listener, then run
// Serve.
func NewMux(l net.Listener) *Mux {
	return &Mux{
		l:          l,
		tagTimeout: TagTimeout,
		done:       make(chan struct{}),
		subs:       make(map[byte]*muxListener),
		routing:    make(map[net.Conn]struct{}),
	}
}

// Listener returns the listener for connections tagged tag. Its Accept
// returns connections whose tag byte has been read; its Addr is the
// underlying listener's. Register every tag before Serve, so that no early
// connection finds its tag unknown; registering a tag twice panics.
func (m *Mux) Listener(tag byte) net.Listener {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.subs[tag]; dup {
		panic(fmt.Sprintf("transport: mux tag %q registered twice", tag))
	}
	sub := &muxListener{m: m, tag: tag, conns: make(chan net.Conn), done: make(chan struct{})}
	m.subs[tag] = sub
	return sub
}

// Serve accepts connections until Close, then returns nil; it returns an
// error if the underlying listener fails otherwise.
func (m *Mux) Serve() error {
	return acceptLoop(m.l, m.isClosed, func(c net.Conn) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.isClosed() {
			c.Close()
			return
		}
		m.routing[c] = struct{}{}
		go m.route(c)
	})
}

// Close closes the underlying listener, every tag listener and connections
// whose tag has not been read yet. Connections already handed out stay open.
func (m *Mux) Close() error {
	var err error
	m.once.Do(func() {
		m.mu.Lock()
		close(m.done)
		for c := range m.routing {
			c.Close()
		}
		m.mu.Unlock()
		err = m.l.Close()
	})
	return err
}

func (m *Mux) isClosed() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// route reads the tag of c and hands c to its listener.
func (m *Mux) route(c net.Conn) {
	var tag [1]byte
	c.SetReadDeadline(time.Now().Add(m.tagTimeout))
	_, err := io.ReadFull(c, tag[:])
	c.SetReadDeadline(time.Time{})
	m.mu.Lock()
	delete(m.routing, c)
	sub := m.subs[tag[0]]
	m.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	if sub == nil {
		c.Close()
		return
	}
	select {
	case sub.conns <- c:
	case <-sub.done:
		c.Close()
	case <-m.done:
		c.Close()
	}
}

// muxListener is the net.Listener of one tag.
type muxListener struct {
	m     *Mux
	tag   byte
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
	case <-l.m.done:
	}
	return nil, fmt.Errorf("transport: mux listener %q: %w", l.tag, net.ErrClosed)
}

// Close stops this tag's listener; later connections with its tag are
// closed. The Mux and other tags go on.
func (l *muxListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *muxListener) Addr() net.Addr { return l.m.l.Addr() }

// DialTag connects to addr over TCP and writes tag as the connection's first
// byte, for a Mux on the other side. timeout bounds the dial and the write;
// zero means no bound besides ctx.
func DialTag(ctx context.Context, addr string, tag byte, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	if timeout > 0 {
		c.SetWriteDeadline(time.Now().Add(timeout))
	}
	if _, err := c.Write([]byte{tag}); err != nil {
		c.Close()
		return nil, fmt.Errorf("transport: dial %s: writing tag: %w", addr, err)
	}
	c.SetWriteDeadline(time.Time{})
	return c, nil
}
