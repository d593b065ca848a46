package transport

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// testNet is a network the client/server tests run over: loopback TCP or an
// InmemNetwork. Every behaviour test runs over both.
type testNet struct {
	name string
	// listen returns a listener at addr, or at a fresh address if addr is "".
	listen func(t *testing.T, addr string) net.Listener
	// dial connects without the Client, for raw-bytes tests.
	dial DialFunc
	// opts make a Client use this network.
	opts []Option
}

func tcpNet() *testNet {
	var d net.Dialer
	return &testNet{
		name: "tcp",
		listen: func(t *testing.T, addr string) net.Listener {
			t.Helper()
			if addr == "" {
				addr = "127.0.0.1:0"
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		dial: func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) },
	}
}

func inmemNet() *testNet {
	nw := NewInmemNetwork()
	var next atomic.Int64
	return &testNet{
		name: "inmem",
		listen: func(t *testing.T, addr string) net.Listener {
			t.Helper()
			if addr == "" {
				addr = fmt.Sprintf("node-%d", next.Add(1))
			}
			l, err := nw.Listen(addr)
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
		dial: nw.Dialer("client"),
		opts: []Option{WithDialer(nw.Dialer("client"))},
	}
}

// forEachNet runs test over TCP and over the in-memory network.
func forEachNet(t *testing.T, test func(t *testing.T, tn *testNet)) {
	for _, tn := range []*testNet{tcpNet(), inmemNet()} {
		t.Run(tn.name, func(t *testing.T) { test(t, tn) })
	}
}

// serve runs a Server with h on l until the test ends.
func serve(t *testing.T, l net.Listener, h Handler, opts ...Option) *Server {
	t.Helper()
	s := NewServer(h, opts...)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// client returns a Client for addr over tn, closed when the test ends.
func (tn *testNet) client(t *testing.T, addr string, opts ...Option) *Client {
	c := Dial(addr, append(append([]Option(nil), tn.opts...), opts...)...)
	t.Cleanup(func() { c.Close() })
	return c
}

// echo replies with the request's type, epoch and payload.
func echo(req Frame, reply func(Frame)) {
	reply(Frame{Type: req.Type, Epoch: req.Epoch, Payload: req.Payload})
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// countingListener counts accepted connections and wraps each with wrap.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
	wrap     func(net.Conn) net.Conn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
		if l.wrap != nil {
			c = l.wrap(c)
		}
	}
	return c, err
}

// gatedConn counts Write calls, and while held makes them wait, so that a
// test can let frames pile up behind one Write deterministically.
type gatedConn struct {
	net.Conn
	writes atomic.Int64
	gate   atomic.Pointer[chan struct{}]
}

// hold makes Writes wait until release is called and restarts the count.
func (c *gatedConn) hold() (release func()) {
	ch := make(chan struct{})
	c.writes.Store(0)
	c.gate.Store(&ch)
	return func() {
		c.gate.Store(nil)
		close(ch)
	}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if g := c.gate.Load(); g != nil {
		<-*g
	}
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
