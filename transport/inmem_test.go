package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func inmemPair(t *testing.T, nw *InmemNetwork, from, to string) (client, server net.Conn) {
	t.Helper()
	l, err := nw.Listen(to)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err = nw.Dialer(from)(ctxTimeout(t, 5*time.Second), to)
	if err != nil {
		t.Fatal(err)
	}
	server, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestInmemConn(t *testing.T) {
	nw := NewInmemNetwork()
	c, s := inmemPair(t, nw, "a", "b")
	if c.LocalAddr().String() != "a" || c.RemoteAddr().String() != "b" || s.RemoteAddr().String() != "a" {
		t.Fatalf("addresses %v→%v, %v→%v", c.LocalAddr(), c.RemoteAddr(), s.LocalAddr(), s.RemoteAddr())
	}
	// Writes do not block and keep their order across chunks.
	c.Write([]byte("hello "))
	c.Write([]byte("world"))
	got := make([]byte, 11)
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "hello world" {
		t.Fatalf("read %q, %v", got, err)
	}
	// Read deadlines.
	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Read(got); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past deadline: %v", err)
	}
	s.SetReadDeadline(time.Time{})
	// Closing one end: the other drains, then sees EOF; its writes fail.
	c.Write([]byte("bye"))
	c.Close()
	if b, err := io.ReadAll(s); err != nil || string(b) != "bye" {
		t.Fatalf("after close: %q, %v", b, err)
	}
	if _, err := s.Write([]byte("x")); err == nil {
		t.Fatal("write to a closed peer succeeded")
	}
	if _, err := c.Read(got); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a closed conn: %v", err)
	}
}

func TestInmemListen(t *testing.T) {
	nw := NewInmemNetwork()
	l, err := nw.Listen("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nw.Listen("a"); err == nil {
		t.Fatal("listening twice on one address succeeded")
	}
	l.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	if _, err := nw.Dialer("x")(context.Background(), "a"); err == nil {
		t.Fatal("dial to a closed listener succeeded")
	}
	l, err = nw.Listen("a") // the address is free again
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

// A partition stalls traffic between two addresses, like a pulled cable:
// calls time out, new dials fail, other links are unaffected, and after Heal
// the stalled requests are delivered and answered.
func TestInmemPartition(t *testing.T) {
	nw := NewInmemNetwork()
	l, _ := nw.Listen("server")
	serve(t, l, echo)
	fromA := Dial("server", WithDialer(nw.Dialer("a")))
	fromB := Dial("server", WithDialer(nw.Dialer("b")))
	defer fromA.Close()
	defer fromB.Close()
	ctx := ctxTimeout(t, 5*time.Second)
	if _, err := fromA.Call(ctx, Frame{}); err != nil {
		t.Fatal(err)
	}

	nw.Partition("server", "a")
	if _, err := fromA.Call(ctxTimeout(t, 50*time.Millisecond), Frame{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call across a partition: %v, want DeadlineExceeded", err)
	}
	stalled := make(chan error, 1)
	fromA.Go(Frame{Payload: []byte("stalled")}, func(resp Frame, err error) { stalled <- err })
	if _, err := nw.Dialer("a")(ctx, "server"); err == nil {
		t.Fatal("dial across a partition succeeded")
	}
	if _, err := fromB.Call(ctx, Frame{}); err != nil {
		t.Fatalf("call on another link: %v", err)
	}
	select {
	case err := <-stalled:
		t.Fatalf("call finished during the partition: %v", err)
	case <-time.After(50 * time.Millisecond):
	}

	nw.Heal()
	select {
	case err := <-stalled:
		if err != nil {
			t.Fatalf("stalled call after heal: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stalled call not answered after heal")
	}
	if _, err := fromA.Call(ctx, Frame{}); err != nil {
		t.Fatalf("call after heal: %v", err)
	}
}

func TestInmemDelay(t *testing.T) {
	nw := NewInmemNetwork()
	l, _ := nw.Listen("server")
	serve(t, l, echo)
	c := Dial("server", WithDialer(nw.Dialer("a")))
	defer c.Close()
	ctx := ctxTimeout(t, 5*time.Second)
	if _, err := c.Call(ctx, Frame{}); err != nil {
		t.Fatal(err)
	}
	const delay = 20 * time.Millisecond
	nw.SetDelay("a", "server", delay)
	start := time.Now()
	if _, err := c.Call(ctx, Frame{}); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*delay {
		t.Fatalf("round trip %v with a %v delay each way", rtt, delay)
	}
	nw.SetDelay("server", "a", 0)
	start = time.Now()
	if _, err := c.Call(ctx, Frame{}); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt >= delay {
		t.Logf("round trip %v after removing the delay (slow machine?)", rtt)
	}
}

// A call that cannot connect fails with ErrNotSent, so callers know the
// peer never saw it; a call on a connection that broke does not claim so.
func TestCallThatCannotConnectIsNotSent(t *testing.T) {
	nw := NewInmemNetwork()
	c := Dial("nobody", WithDialer(nw.Dialer("a")))
	defer c.Close()
	_, err := c.Call(ctxTimeout(t, time.Second), Frame{})
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("call to an address nobody listens on: %v, want ErrNotSent", err)
	}
}
