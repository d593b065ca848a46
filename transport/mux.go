package transport

import (
	"context"
	"errors"
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

// MaxUnrouted bounds the connections a Mux holds before their tag (and
// handshake) is through; beyond it new connections are closed at once, so
// that strangers opening connections cannot pile up goroutines.
const MaxUnrouted = 1024

// Mux shares one listener among protocols: it reads one tag byte from each
// accepted connection and hands the connection, tag consumed, to the
// listener registered for that tag. Connections with an unknown tag, or none
// within TagTimeout, are closed. With a Guard (WithGuard), a connection is
// first admitted by the guard's handshake, and one it refuses is closed
// before anything is read from it.
type Mux struct {
	l          net.Listener
	opts       options
	tagTimeout time.Duration // TagTimeout; shorter in tests
	done       chan struct{}
	once       sync.Once

	mu      sync.Mutex
	subs    map[byte]*muxListener
	routing map[net.Conn]struct{} // accepted, tag not yet read
}

// NewMux returns a Mux over l. Register listeners with Listener, then run
// Serve. It takes WithGuard and WithRefused; other options are ignored.
func NewMux(l net.Listener, opts ...Option) *Mux {
	return &Mux{
		l:          l,
		opts:       buildOptions(opts),
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
		if m.isClosed() || len(m.routing) >= MaxUnrouted {
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

// route admits c through the guard, if any, reads its tag and hands it to
// the tag's listener.
func (m *Mux) route(raw net.Conn) {
	c, tag, err := m.admit(raw)
	m.mu.Lock()
	delete(m.routing, raw)
	sub := m.subs[tag]
	m.mu.Unlock()
	if err != nil {
		raw.Close()
		if m.opts.refused != nil && errors.Is(err, ErrRefused) {
			m.opts.refused(err)
		}
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

// admit runs the guard's handshake on c, when the Mux has a guard, and
// reads the tag byte; it returns the connection to hand on.
func (m *Mux) admit(c net.Conn) (net.Conn, byte, error) {
	if g := m.opts.guard; g != nil {
		var err error
		if c, err = g.Accept(c); err != nil {
			return nil, 0, err
		}
	}
	var tag [1]byte
	c.SetReadDeadline(time.Now().Add(m.tagTimeout))
	_, err := io.ReadFull(c, tag[:])
	c.SetReadDeadline(time.Time{})
	return c, tag[0], err
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

// DialTag connects to addr (over TCP, or with WithDialer's function), runs
// WithGuard's handshake if given, and writes tag as the connection's first
// byte, for a Mux on the other side. timeout bounds the dial, the handshake
// and the write; zero means no bound besides ctx.
func DialTag(ctx context.Context, addr string, tag byte, timeout time.Duration, opts ...Option) (net.Conn, error) {
	o := buildOptions(opts)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c, err := o.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	if o.guard != nil {
		if c, err = o.guard.Dial(ctx, c); err != nil {
			return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
		}
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
