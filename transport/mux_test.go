package transport

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// rawEcho accepts connections on l and echoes their bytes, as a stand-in for
// the Raft stream layer.
func rawEcho(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

// startMux runs a Mux over l (with opts) with frames served by h and
// TagRaft connections echoed, until the test ends.
func startMux(t *testing.T, l net.Listener, h Handler, opts ...Option) *Mux {
	t.Helper()
	m := NewMux(l, opts...)
	m.tagTimeout = 200 * time.Millisecond
	frames, raft := m.Listener(TagFrames), m.Listener(TagRaft)
	if frames.Addr().String() != l.Addr().String() {
		t.Fatalf("mux listener address %s, want %s", frames.Addr(), l.Addr())
	}
	go rawEcho(raft)
	done := make(chan error, 1)
	go func() { done <- m.Serve() }()
	t.Cleanup(func() {
		m.Close()
		if err := <-done; err != nil {
			t.Errorf("Mux.Serve: %v", err)
		}
	})
	serve(t, frames, h) // after, so that it is closed before the mux
	return m
}

func TestMuxRoutesTags(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		addr := l.Addr().String()
		startMux(t, l, echo)
		ctx := ctxTimeout(t, 5*time.Second)

		c := tn.client(t, addr)
		if resp, err := c.Call(ctx, Frame{Payload: []byte("frames")}); err != nil || string(resp.Payload) != "frames" {
			t.Fatalf("frames through the mux: %v %q", err, resp.Payload)
		}

		raft := dialTagVia(t, tn, addr, TagRaft)
		defer raft.Close()
		if _, err := raft.Write([]byte("raft bytes")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len("raft bytes"))
		raft.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(raft, got); err != nil || string(got) != "raft bytes" {
			t.Fatalf("raft through the mux: %v %q", err, got)
		}

		for name, first := range map[string][]byte{"unknown tag": {'X'}, "no tag": nil} {
			conn := dialTagVia(t, tn, addr, 0)
			if first != nil {
				conn.Write(first)
			}
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := io.ReadAll(conn); len(n) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s: read %q, %v; want the mux to hang up", name, n, err)
			}
			conn.Close()
		}
	})
}

// dialTagVia connects to addr over tn and writes tag, unless tag is 0.
// Over TCP it uses DialTag itself.
func dialTagVia(t *testing.T, tn *testNet, addr string, tag byte) net.Conn {
	t.Helper()
	ctx := ctxTimeout(t, 5*time.Second)
	if tn.name == "tcp" && tag != 0 {
		c, err := DialTag(ctx, addr, tag, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c, err := tn.dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if tag != 0 {
		c.Write([]byte{tag})
	}
	return c
}

// A plain Server (no Mux) accepts clients, which send the tag byte anyway.
func TestServerWithoutMuxSkipsTag(t *testing.T) {
	l := tcpNet().listen(t, "")
	serve(t, l, echo)
	c := Dial(l.Addr().String())
	defer c.Close()
	if _, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{}); err != nil {
		t.Fatal(err)
	}
}

func TestMuxListenerClose(t *testing.T) {
	l := tcpNet().listen(t, "")
	m := NewMux(l)
	sub := m.Listener(TagRaft)
	go m.Serve()
	defer m.Close()
	sub.Close()
	if _, err := sub.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept on a closed tag listener: %v", err)
	}
	conn, err := DialTag(ctxTimeout(t, 5*time.Second), l.Addr().String(), TagRaft, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.ReadAll(conn); len(n) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection for a closed tag: read %q, %v; want a hang-up", n, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a tag twice did not panic")
		}
	}()
	m.Listener(TagRaft)
}
