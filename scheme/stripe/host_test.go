package stripe

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
)

// testNet is engines of several nodes in one process: a request to a node
// goes straight to its engine's handler, and a node without an engine
// does not answer.
type testNet struct {
	mu      sync.Mutex
	m       *cluster.Map
	engines map[cluster.NodeID]*Engine
}

// newTestNet is a net over m with no engine yet.
func newTestNet(m *cluster.Map) *testNet {
	return &testNet{m: m, engines: map[cluster.NodeID]*Engine{}}
}

// engine returns node id's engine, making it on first use.
func (tn *testNet) engine(id cluster.NodeID) *Engine {
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if e := tn.engines[id]; e != nil {
		return e
	}
	e := NewEngine(&testHost{net: tn, self: id}, Config{PeerTimeout: 2 * time.Second}, slog.New(slog.DiscardHandler))
	tn.engines[id] = e
	return e
}

// serve hands payload to node id's handler for msg.
func (tn *testNet) serve(id cluster.NodeID, msg Msg, payload []byte) ([]byte, error) {
	tn.mu.Lock()
	e := tn.engines[id]
	tn.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("node %s does not answer", id)
	}
	switch msg {
	case MsgUpdates:
		return e.OnUpdates(payload)
	case MsgRead:
		return e.OnRead(payload)
	case MsgResync:
		return e.OnResync(payload)
	case MsgBatch:
		return e.OnBatch(payload)
	case MsgRepair:
		return e.OnRepair(payload)
	}
	return nil, fmt.Errorf("no message %d", msg)
}

// testHost is one node of a testNet (Host). It records the keys reported
// lost and the objects handed over to re-home.
type testHost struct {
	net       *testNet
	self      cluster.NodeID
	lost      []kind.LostKey
	rehomed   map[uint16][]Object
	relocated map[uint16][]Object
	restored  int
}

func (h *testHost) Self() cluster.NodeID { return h.self }
func (h *testHost) Map() *cluster.Map {
	h.net.mu.Lock()
	defer h.net.mu.Unlock()
	return h.net.m
}
func (h *testHost) Fences() uint64 { return 0 }
func (h *testHost) Call(_ context.Context, node cluster.Node, msg Msg, payload []byte) ([]byte, error) {
	return h.net.serve(node.ID, msg, payload)
}
func (h *testHost) CallEach(ctx context.Context, reqs []Request, _ uint64) ([][]byte, []error) {
	replies, errs := make([][]byte, len(reqs)), make([]error, len(reqs))
	for i, r := range reqs {
		replies[i], errs[i] = h.Call(ctx, r.Node, r.Msg, r.Payload)
	}
	return replies, errs
}
func (h *testHost) SentParity(cluster.SchemeEntry, int) {}
func (h *testHost) RestoredOnDemand()                   { h.restored++ }
func (h *testHost) LoseTags(_ []uint32, k kind.LostKey) {
	h.lost = append(h.lost, k)
}
func (h *testHost) LoseRange(_, _ int, k kind.LostKey) { h.lost = append(h.lost, k) }
func (h *testHost) Relocate(_ context.Context, id uint16, objs []Object) {
	if h.relocated == nil {
		h.relocated = map[uint16][]Object{}
	}
	h.relocated[id] = append(h.relocated[id], objs...)
}
func (h *testHost) Rehome(_ context.Context, _ *cluster.Map, objs map[uint16][]Object) error {
	if h.rehomed == nil {
		h.rehomed = map[uint16][]Object{}
	}
	for id, os := range objs {
		h.rehomed[id] = append(h.rehomed[id], os...)
	}
	return nil
}
