package transport

import (
	"bytes"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// recordConn is a net.Conn whose writes are recorded.
type recordConn struct {
	net.Conn // nil: only Write is used
	mu       sync.Mutex
	buf      bytes.Buffer
}

func (c *recordConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *recordConn) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Len()
}

// The send queue writes exactly the frames pushed, in order, whatever mix of
// inline and referenced payloads each batch holds and however the arena is
// reallocated between them: checked against AppendFrame, the slow reference.
func TestSendQueueWritesFramesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{0, 1, lockedCRCMax, lockedCRCMax + 1, inlineMax, inlineMax + 1, 300 << 10}
	conn := &recordConn{}
	q := newSendQueue(TagFrames)
	failed := make(chan error, 1)
	go q.run(conn, func(err error) { failed <- err })
	want := []byte{TagFrames}
	for i := range 400 {
		payload := bytes.Repeat([]byte{byte(i)}, sizes[rng.IntN(len(sizes))])
		f := Frame{Type: uint8(i), Epoch: uint64(i), ID: uint64(i) + 1, Payload: payload}
		want = AppendFrame(want, f)
		if err := q.push(f); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for conn.len() < len(want) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	q.close(ErrClosed)
	select {
	case err := <-failed:
		t.Fatal(err)
	default:
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if !bytes.Equal(conn.buf.Bytes(), want) {
		t.Fatalf("wrote %d bytes differing from the %d expected", conn.buf.Len(), len(want))
	}
}
