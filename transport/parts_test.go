package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// patterned returns n bytes that differ from one offset to the next, so
// that a part landing at the wrong place shows.
func patterned(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ byte(i>>11) ^ seed
	}
	return b
}

// Messages of every size around the part boundaries, with payloads split
// between Payload and Tail, arrive whole and byte for byte, both ways (the
// echo server sends each back, itself in parts when large).
func TestLargeMessagesRoundTrip(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		serve(t, l, echo)
		c := tn.client(t, l.Addr().String())
		ctx := ctxTimeout(t, 30*time.Second)
		for i, size := range []int{PartSize - 1, PartSize, PartSize + 1, 3*PartSize + 5} {
			want := patterned(size, byte(i))
			for _, cutAt := range []int{0, 1, size / 2, size} {
				req := Frame{Type: 6, Epoch: 9, Payload: want[:cutAt]}
				if cutAt < size {
					req.Tail = [][]byte{want[cutAt : cutAt+(size-cutAt)/3], want[cutAt+(size-cutAt)/3:]}
				}
				resp, err := c.Call(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(resp.Payload, want) || resp.Type != 6 || resp.Epoch != 9 || resp.Flags != FlagResponse {
					t.Fatalf("size %d cut at %d: got %d bytes, flags %#x", size, cutAt, len(resp.Payload), resp.Flags)
				}
			}
		}
	})
}

// A small request sent after a huge one reaches the server first: the
// huge message goes in parts, and the writer sends the frames queued
// meanwhile between them (issue 23: one 512 MiB frame held its connection,
// and every frame behind it, for as long as it took to send). Before the
// fix the huge frame went out in one piece, ahead of the small one.
func TestSmallFramesOvertakeHugeMessage(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		arrived := make(chan uint8, 4)
		serve(t, l, func(req Frame, reply func(Frame)) {
			arrived <- req.Type
			reply(Frame{Type: req.Type})
		})
		gated := make(chan *gatedConn, 1)
		dial := func(ctx context.Context, addr string) (net.Conn, error) {
			conn, err := tn.dial(ctx, addr)
			if err != nil {
				return nil, err
			}
			gc := &gatedConn{Conn: conn}
			gated <- gc
			return gc, nil
		}
		c := Dial(l.Addr().String(), WithDialer(dial))
		t.Cleanup(func() { c.Close() })
		ctx := ctxTimeout(t, 30*time.Second)
		if _, err := c.Call(ctx, Frame{Type: 1}); err != nil {
			t.Fatal(err)
		}
		<-arrived
		release := (<-gated).hold() // the writer's next Write waits
		done := make(chan error, 2)
		c.Go(Frame{Type: 2, Payload: make([]byte, 8*PartSize)}, func(_ Frame, err error) { done <- err })
		c.Go(Frame{Type: 3, Payload: []byte("small")}, func(_ Frame, err error) { done <- err })
		release()
		if first := <-arrived; first != 3 {
			t.Fatalf("the server got request type %d first; the small one (3), queued behind the huge one (2), should overtake it", first)
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// partBytes is the wire encoding of one part of a message of total bytes:
// data at off.
func partBytes(f Frame, total, off int, data []byte) []byte {
	payload := binary.BigEndian.AppendUint32(nil, uint32(total))
	payload = binary.BigEndian.AppendUint32(payload, uint32(off))
	f.Flags |= FlagPart
	f.Payload = append(payload, data...)
	return AppendFrame(nil, f)
}

// The reader assembles parts interleaved with other frames and other
// messages' parts, and refuses parts that break the rules: out of order,
// unlike the first part, beyond the message, or a message over the limit.
func TestFrameReaderParts(t *testing.T) {
	a, b := Frame{Type: 1, ID: 7, Epoch: 3}, Frame{Type: 2, ID: 8, Epoch: 3}
	var stream []byte
	stream = append(stream, partBytes(a, 6, 0, []byte("ab"))...)
	stream = append(stream, partBytes(b, 4, 0, []byte("wx"))...)
	stream = append(stream, AppendFrame(nil, Frame{Type: 9, ID: 9, Payload: []byte("small")})...)
	stream = append(stream, partBytes(a, 6, 2, []byte("cd"))...)
	stream = append(stream, partBytes(b, 4, 2, []byte("yz"))...)
	stream = append(stream, partBytes(a, 6, 4, []byte("ef"))...)
	r := newFrameReader(bufio.NewReader(bytes.NewReader(stream)), 100)
	for _, want := range []struct {
		id      uint64
		payload string
	}{{9, "small"}, {8, "wxyz"}, {7, "abcdef"}} {
		f, err := r.next()
		if err != nil || f.ID != want.id || string(f.Payload) != want.payload || f.Flags&FlagPart != 0 {
			t.Fatalf("got id %d %q flags %#x err %v, want id %d %q", f.ID, f.Payload, f.Flags, err, want.id, want.payload)
		}
	}
	if _, err := r.next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}

	bad := map[string][]byte{
		"first part not at 0": partBytes(a, 6, 2, []byte("cd")),
		"over the limit":      partBytes(a, 101, 0, []byte("ab")),
		"gap":                 append(partBytes(a, 6, 0, []byte("ab")), partBytes(a, 6, 4, []byte("ef"))...),
		"beyond the message":  append(partBytes(a, 6, 0, []byte("ab")), partBytes(a, 6, 2, []byte("cdefg"))...),
		"other type":          append(partBytes(a, 6, 0, []byte("ab")), partBytes(Frame{Type: 5, ID: 7, Epoch: 3}, 6, 2, []byte("cd"))...),
		"other length":        append(partBytes(a, 6, 0, []byte("ab")), partBytes(a, 8, 2, []byte("cd"))...),
		"no bytes":            partBytes(a, 6, 0, nil),
	}
	for name, raw := range bad {
		r := newFrameReader(bufio.NewReader(bytes.NewReader(raw)), 100)
		var err error
		for err == nil {
			_, err = r.next()
		}
		if !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
}

// slowConn is a link that takes delay over every write.
type slowConn struct {
	net.Conn
	delay time.Duration
}

func (c slowConn) Write(p []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Write(p)
}

// A response still arriving in parts when the deadline passes is not cut
// off by CallUntilIdle, as long as parts keep coming; Call gives up at the
// deadline. The server's link takes 200 ms per write, one part per write,
// so a 5-part response takes a second or more, against a deadline of
// 500 ms that its first part beats. Each call has a connection of its own.
func TestCallUntilIdleWaitsForAResponseStillArriving(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := &countingListener{Listener: tn.listen(t, ""), wrap: func(c net.Conn) net.Conn { return slowConn{c, 200 * time.Millisecond} }}
		big := patterned(5*PartSize, 5)
		serve(t, l, func(req Frame, reply func(Frame)) { reply(Frame{Payload: big}) })
		deadline := func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}
		if _, err := tn.client(t, l.Addr().String()).Call(deadline(), Frame{Type: 1}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Call: %v, want the deadline", err)
		}
		resp, err := tn.client(t, l.Addr().String()).CallUntilIdle(deadline(), Frame{Type: 2}, 10*time.Second)
		if err != nil || !bytes.Equal(resp.Payload, big) {
			t.Fatalf("CallUntilIdle: %v, %d bytes", err, len(resp.Payload))
		}
	})
}
