package peer

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/transport"
)

// fakeMaps is a control plane whose epoch the test moves; WaitEpoch
// returns once the epoch reaches the one asked for.
type fakeMaps struct {
	mu    sync.Mutex
	epoch uint64
	moved chan struct{}
}

func newFakeMaps(epoch uint64) *fakeMaps { return &fakeMaps{epoch: epoch, moved: make(chan struct{})} }

func (f *fakeMaps) Map() *cluster.Map {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &cluster.Map{Epoch: f.epoch}
}

func (f *fakeMaps) WaitEpoch(ctx context.Context, epoch uint64) (*cluster.Map, error) {
	for {
		f.mu.Lock()
		at, moved := f.epoch, f.moved
		f.mu.Unlock()
		if at >= epoch {
			return &cluster.Map{Epoch: at}, nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (f *fakeMaps) advance(epoch uint64) {
	f.mu.Lock()
	f.epoch = epoch
	close(f.moved)
	f.moved = make(chan struct{})
	f.mu.Unlock()
}

// replies collects a router's replies.
type replies chan transport.Frame

func (r replies) reply(f transport.Frame) { r <- f }

func (r replies) next(t *testing.T) transport.Frame {
	t.Helper()
	select {
	case f := <-r:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
		return transport.Frame{}
	}
}

// TestRouterFencesByEpoch: a frame from an older map is refused with the
// node's epoch, one from a newer map is served once the node has that map,
// and an unfenced message is served whatever its epoch. A type nobody
// registered is answered with an error.
func TestRouterFencesByEpoch(t *testing.T) {
	maps := newFakeMaps(5)
	r := NewRouter(func(f func()) { go f() })
	r.Maps = maps
	echo := func(b []byte) ([]byte, error) { return append([]byte("ok:"), b...), nil }
	r.Handle(MsgDelPiece, OnLoop, echo)
	r.Handle(MsgJoin, Unfenced, echo)
	got := make(replies, 4)

	r.Serve(transport.Frame{Type: MsgDelPiece, Epoch: 4, Payload: []byte("x")}, got.reply)
	f := got.next(t)
	if epoch, stale := StaleEpoch(&transport.RemoteError{Msg: string(f.Payload)}); f.Flags&transport.FlagError == 0 || !stale || epoch != 5 {
		t.Fatalf("a frame from epoch 4 at a node at 5: %q; want STALEEPOCH 5", f.Payload)
	}
	r.Serve(transport.Frame{Type: MsgJoin, Epoch: 1, Payload: []byte("j")}, got.reply)
	if f := got.next(t); string(f.Payload) != "ok:j" {
		t.Fatalf("an unfenced message from an old epoch: %q", f.Payload)
	}
	r.Serve(transport.Frame{Type: MsgDelPiece, Epoch: 6, Payload: []byte("y")}, got.reply)
	select {
	case f := <-got:
		t.Fatalf("a frame from epoch 6 was served at a node at 5: %q", f.Payload)
	case <-time.After(20 * time.Millisecond):
	}
	maps.advance(6)
	if f := got.next(t); string(f.Payload) != "ok:y" {
		t.Fatalf("a frame from epoch 6 once the node is at 6: %q", f.Payload)
	}
	r.Serve(transport.Frame{Type: MsgAudit, Epoch: 6}, got.reply)
	if f := got.next(t); f.Flags&transport.FlagError == 0 || !strings.Contains(string(f.Payload), "unknown peer message type") {
		t.Fatalf("an unregistered type: %q", f.Payload)
	}
}

// TestRouterModes: an OnLoop handler runs before Serve returns (in the
// connection's order), an OffLoop one does not hold Serve up, a bulk
// payload that came in parts goes to the worker, and a stream answers
// the frame itself while a request a node sends itself gets the handler.
func TestRouterModes(t *testing.T) {
	maps := newFakeMaps(1)
	var worked int
	r := NewRouter(func(f func()) { worked++; f() })
	r.Maps = maps
	block := make(chan struct{})
	r.Handle(MsgDelPiece, OnLoop, func([]byte) ([]byte, error) { return []byte("loop"), nil })
	r.Handle(MsgScan, OffLoop, func([]byte) ([]byte, error) { <-block; return []byte("off"), nil })
	r.HandleBulk(MsgPutPieces, func([]byte) ([]byte, error) { return []byte("put"), nil })
	r.HandleStream(MsgGetPiece, OnLoop, func([]byte) ([]byte, error) { return []byte("handler"), nil },
		func(req transport.Frame, reply func(transport.Frame)) {
			reply(transport.Frame{Payload: []byte("stream")})
		})
	got := make(replies, 4)

	r.Serve(transport.Frame{Type: MsgDelPiece, Epoch: 1}, got.reply)
	if len(got) != 1 {
		t.Fatal("an OnLoop handler had not answered when Serve returned")
	}
	got.next(t)
	r.Serve(transport.Frame{Type: MsgScan, Epoch: 1}, got.reply) // would block Serve if run on the loop
	close(block)
	if f := got.next(t); string(f.Payload) != "off" {
		t.Fatalf("OffLoop: %q", f.Payload)
	}
	r.Serve(transport.Frame{Type: MsgPutPieces, Epoch: 1, Payload: make([]byte, 10)}, got.reply)
	r.Serve(transport.Frame{Type: MsgPutPieces, Epoch: 1, Payload: make([]byte, transport.PartSize+1)}, got.reply)
	got.next(t)
	got.next(t)
	if worked != 1 {
		t.Fatalf("%d PutPieces went to the worker; want only the one that came in parts", worked)
	}
	r.Serve(transport.Frame{Type: MsgGetPiece, Epoch: 1}, got.reply)
	if f := got.next(t); string(f.Payload) != "stream" {
		t.Fatalf("a stream's frame: %q", f.Payload)
	}
	if out, err := r.Handler(MsgGetPiece)(nil); err != nil || string(out) != "handler" {
		t.Fatalf("a local request of a stream's type: %q, %v", out, err)
	}
}
