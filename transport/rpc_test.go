package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCallRoundTrip(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		var gotID atomic.Uint64
		serve(t, l, func(req Frame, reply func(Frame)) {
			gotID.Store(req.ID)
			reply(Frame{Type: req.Type + 1, Epoch: req.Epoch + 1, ID: 999, Payload: append([]byte("re:"), req.Payload...)})
		})
		c := tn.client(t, l.Addr().String())
		resp, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{Type: 4, Epoch: 10, ID: 12345, Payload: []byte("hi")})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Type != 5 || resp.Epoch != 11 || string(resp.Payload) != "re:hi" || resp.Flags != FlagResponse {
			t.Fatalf("response %+v", resp)
		}
		if resp.ID != gotID.Load() || resp.ID == 12345 {
			t.Fatalf("response id %d, request id as served %d: the client sets ids, the server echoes them", resp.ID, gotID.Load())
		}
	})
}

// Many goroutines share one connection; every call gets its own response.
func TestPipelinedConcurrentCalls(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := &countingListener{Listener: tn.listen(t, "")}
		serve(t, l, echo)
		c := tn.client(t, l.Addr().String())
		ctx := ctxTimeout(t, 10*time.Second)
		var wg sync.WaitGroup
		for g := range 32 {
			wg.Go(func() {
				for i := range 100 {
					want := fmt.Sprintf("g%d-i%d", g, i)
					resp, err := c.Call(ctx, Frame{Type: uint8(g), Epoch: uint64(i), Payload: []byte(want)})
					if err != nil {
						t.Error(err)
						return
					}
					if string(resp.Payload) != want || resp.Type != uint8(g) || resp.Epoch != uint64(i) {
						t.Errorf("got %q type %d epoch %d for %s", resp.Payload, resp.Type, resp.Epoch, want)
						return
					}
				}
			})
		}
		wg.Wait()
		if n := l.accepted.Load(); n != 1 {
			t.Fatalf("%d connections for one client, want 1", n)
		}
	})
}

// A handler that replies later and out of order: responses are matched to
// requests by id, not by position.
func TestOutOfOrderAsyncReplies(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		const n = 100
		type held struct {
			req   Frame
			reply func(Frame)
		}
		var mu sync.Mutex
		var pending []held
		l := tn.listen(t, "")
		serve(t, l, func(req Frame, reply func(Frame)) {
			mu.Lock()
			defer mu.Unlock()
			pending = append(pending, held{req, reply})
			if len(pending) == n {
				go func(all []held) {
					for i := len(all) - 1; i >= 0; i-- {
						all[i].reply(Frame{Payload: all[i].req.Payload})
					}
				}(pending)
			}
		})
		c := tn.client(t, l.Addr().String())
		var order []int
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			c.Go(Frame{Payload: []byte{byte(i)}}, func(resp Frame, err error) {
				defer wg.Done()
				if err != nil || !bytes.Equal(resp.Payload, []byte{byte(i)}) {
					t.Errorf("call %d: err=%v payload %v", i, err, resp.Payload)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
		}
		wg.Wait()
		// Go from one goroutine may dial in the background for the first
		// calls, so only the sent order is uncertain at the start; the
		// completion order must be the reverse of the order served.
		mu.Lock()
		defer mu.Unlock()
		for k := range n {
			if want := pending[n-1-k].req.Payload[0]; order[k] != int(want) {
				t.Fatalf("completion %d was call %d, want %d (reverse of arrival)", k, order[k], want)
			}
		}
	})
}

// When the server goes away, every call in flight fails promptly with
// ErrClosed, and the client reconnects once the server is back.
func TestServerCloseFailsPendingAndClientReconnects(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		addr := l.Addr().String()
		var arrived atomic.Int64
		s := NewServer(func(req Frame, reply func(Frame)) { arrived.Add(1) }) // never replies
		go s.Serve(l)
		c := tn.client(t, addr)
		errs := make(chan error, 10)
		for range 10 {
			c.Go(Frame{}, func(_ Frame, err error) { errs <- err })
		}
		waitFor(t, "requests to arrive", func() bool { return arrived.Load() == 10 })
		start := time.Now()
		s.Close()
		for range 10 {
			select {
			case err := <-errs:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("pending call failed with %v, want ErrClosed", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("pending call not failed after server close")
			}
		}
		t.Logf("pending calls failed %v after close", time.Since(start))

		serve(t, tn.listen(t, addr), echo)
		resp, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{Payload: []byte("again")})
		if err != nil || string(resp.Payload) != "again" {
			t.Fatalf("after restart: %v %q", err, resp.Payload)
		}
	})
}

func TestDialFailureThenSuccess(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		addr := l.Addr().String()
		l.Close() // nothing listens at addr now
		c := tn.client(t, addr, WithDialTimeout(time.Second))
		if _, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{}); err == nil || errors.Is(err, ErrClosed) {
			t.Fatalf("call with nobody listening: %v, want a dial error", err)
		}
		serve(t, tn.listen(t, addr), echo)
		if _, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{}); err != nil {
			t.Fatalf("call once listening: %v", err)
		}
	})
}

func TestCallContext(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		release, lateSent := make(chan struct{}), make(chan struct{})
		l := tn.listen(t, "")
		serve(t, l, func(req Frame, reply func(Frame)) {
			if req.Type == 1 { // slow: replies once the test says so
				go func() {
					<-release
					reply(Frame{Payload: []byte("late")})
					close(lateSent)
				}()
				return
			}
			echo(req, reply)
		})
		c := tn.client(t, l.Addr().String())
		if _, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{}); err != nil {
			t.Fatal(err) // connect first, so the deadline below is the call's
		}

		_, err := c.Call(ctxTimeout(t, 50*time.Millisecond), Frame{Type: 1})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("slow call: %v, want DeadlineExceeded", err)
		}
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Call(cancelled, Frame{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("call with a cancelled context: %v", err)
		}
		// The late response arrives ahead of the next ones on the same
		// connection and is dropped; later calls get their own responses.
		close(release)
		<-lateSent
		for i := range 20 {
			want := fmt.Sprint(i)
			resp, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{Payload: []byte(want)})
			if err != nil || string(resp.Payload) != want {
				t.Fatalf("call after cancel: %v %q", err, resp.Payload)
			}
		}
	})
}

func TestRemoteError(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		serve(t, l, func(req Frame, reply func(Frame)) {
			reply(Frame{Flags: FlagError, Epoch: 8, Payload: []byte("stale epoch")})
		})
		c := tn.client(t, l.Addr().String())
		resp, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{Epoch: 7})
		var re *RemoteError
		if !errors.As(err, &re) || re.Msg != "stale epoch" {
			t.Fatalf("err %v, want RemoteError(stale epoch)", err)
		}
		if resp.Epoch != 8 {
			t.Fatalf("error response epoch %d, want 8: callers need it to catch up", resp.Epoch)
		}
	})
}

// Payloads over the limit are refused before sending; a reply over the limit
// becomes an error response rather than a frame that breaks the connection.
func TestPayloadLimit(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		const limit = 1000
		l := tn.listen(t, "")
		serve(t, l, func(req Frame, reply func(Frame)) {
			reply(Frame{Payload: make([]byte, int(req.Epoch))})
		}, WithMaxPayload(limit))
		c := tn.client(t, l.Addr().String(), WithMaxPayload(limit))
		ctx := ctxTimeout(t, 5*time.Second)
		if _, err := c.Call(ctx, Frame{Payload: make([]byte, limit+1)}); !errors.Is(err, ErrFrame) {
			t.Fatalf("oversize request: %v, want ErrFrame", err)
		}
		if resp, err := c.Call(ctx, Frame{Epoch: limit, Payload: make([]byte, limit)}); err != nil || len(resp.Payload) != limit {
			t.Fatalf("request and reply at the limit: %v", err)
		}
		_, err := c.Call(ctx, Frame{Epoch: limit + 1})
		var re *RemoteError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, "exceeds the limit") {
			t.Fatalf("oversize reply: %v, want a RemoteError about the limit", err)
		}
		if _, err := c.Call(ctx, Frame{}); err != nil {
			t.Fatalf("connection after oversize reply: %v", err)
		}
	})
}

// Large payloads (written from the caller's slice, writev over TCP) mixed
// with small ones keep their bytes and their order.
func TestLargePayloads(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		serve(t, l, echo)
		c := tn.client(t, l.Addr().String())
		ctx := ctxTimeout(t, 20*time.Second)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				size := 10 + g*(3<<20)/7 // from tiny to ~3 MiB
				want := bytes.Repeat([]byte{byte(g + 1)}, size)
				resp, err := c.Call(ctx, Frame{Payload: want})
				if err != nil || !bytes.Equal(resp.Payload, want) {
					t.Errorf("payload of %d bytes: err=%v, got %d bytes", size, err, len(resp.Payload))
				}
			})
		}
		wg.Wait()
	})
}

func TestClientClose(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		var arrived atomic.Int64
		serve(t, l, func(req Frame, reply func(Frame)) { arrived.Add(1) })
		c := Dial(l.Addr().String(), tn.opts...)
		errs := make(chan error, 5)
		for range 5 {
			c.Go(Frame{}, func(_ Frame, err error) { errs <- err })
		}
		waitFor(t, "requests to arrive", func() bool { return arrived.Load() == 5 })
		c.Close()
		for range 5 {
			if err := <-errs; !errors.Is(err, ErrClosed) {
				t.Fatalf("pending call after Close: %v", err)
			}
		}
		if _, err := c.Call(context.Background(), Frame{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Call after Close: %v", err)
		}
		c.Go(Frame{}, func(_ Frame, err error) { errs <- err })
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("Go after Close: %v", err)
		}
	})
}

func TestPool(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		la, lb := tn.listen(t, ""), tn.listen(t, "")
		serve(t, la, func(req Frame, reply func(Frame)) { reply(Frame{Payload: []byte("a")}) })
		serve(t, lb, func(req Frame, reply func(Frame)) { reply(Frame{Payload: []byte("b")}) })
		p := NewPool(tn.opts...)
		a, b := la.Addr().String(), lb.Addr().String()
		if p.Get(a) != p.Get(a) || p.Get(a) == p.Get(b) {
			t.Fatal("Get must return one client per address")
		}
		ctx := ctxTimeout(t, 5*time.Second)
		for addr, want := range map[string]string{a: "a", b: "b"} {
			if resp, err := p.Get(addr).Call(ctx, Frame{}); err != nil || string(resp.Payload) != want {
				t.Fatalf("%s: %v %q", addr, err, resp.Payload)
			}
		}
		old := p.Get(a)
		p.Close()
		if _, err := old.Call(ctx, Frame{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("client of a closed pool: %v", err)
		}
		if _, err := p.Get(b).Call(ctx, Frame{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Get after Close: %v", err)
		}
	})
}

// Garbage, a corrupted frame or a response sent to a server: the server
// drops the connection (its reader sees EOF) rather than guess.
func TestServerDropsBadConnections(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		serve(t, l, echo)
		corrupt := AppendFrame(nil, Frame{Payload: []byte("abc")})
		corrupt[len(corrupt)-1] ^= 1
		for name, bad := range map[string][]byte{
			"garbage":  []byte("*1\r\n$4\r\nPING\r\n"),
			"checksum": corrupt,
			"response": AppendFrame(nil, Frame{Flags: FlagResponse}),
		} {
			conn, err := tn.dial(ctxTimeout(t, 5*time.Second), l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			conn.Write(bad)
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			// EOF, or a reset if the server hung up on unread bytes.
			if n, err := io.ReadAll(conn); len(n) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("%s: read %q, %v; want the server to hang up", name, n, err)
			}
			conn.Close()
		}
	})
}

// Batching: with each side's connection held up at its next Write, 1000
// pipelined calls queue behind it and go out in a handful of Writes, both
// requests and responses.
func TestWritesAreBatched(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		const calls = 1000
		var serverConn atomic.Pointer[gatedConn]
		l := &countingListener{Listener: tn.listen(t, ""), wrap: func(c net.Conn) net.Conn {
			g := &gatedConn{Conn: c}
			serverConn.Store(g)
			return g
		}}
		var served atomic.Int64
		serve(t, l, func(req Frame, reply func(Frame)) {
			served.Add(1)
			echo(req, reply)
		})
		var clientConn *gatedConn
		c := tn.client(t, l.Addr().String(), WithDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := tn.dial(ctx, addr)
			if err != nil {
				return nil, err
			}
			clientConn = &gatedConn{Conn: conn}
			return clientConn, nil
		}))
		if _, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{}); err != nil {
			t.Fatal(err) // connected, so Go below queues synchronously
		}
		served.Store(0)
		releaseClient, releaseServer := clientConn.hold(), serverConn.Load().hold()

		var wg sync.WaitGroup
		wg.Add(calls)
		for i := range calls {
			c.Go(Frame{Epoch: uint64(i), Payload: []byte("small")}, func(resp Frame, err error) {
				defer wg.Done()
				if err != nil || resp.Epoch != uint64(i) {
					t.Errorf("call %d: %v epoch %d", i, err, resp.Epoch)
				}
			})
		}
		releaseClient()
		waitFor(t, "requests to be served", func() bool { return served.Load() == calls })
		releaseServer()
		wg.Wait()

		cw, sw := clientConn.writes.Load(), serverConn.Load().writes.Load()
		t.Logf("%d requests in %d client writes, %d responses in %d server writes", calls, cw, calls, sw)
		if cw > 3 || sw > 3 {
			t.Fatalf("%d and %d writes for %d frames each way: not batched", cw, sw, calls)
		}
	})
}
