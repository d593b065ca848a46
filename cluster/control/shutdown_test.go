package control

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heldTransport is an in-memory transport that hands the test Raft's
// heartbeat handler, and holds the handler inside Raft when asked: Raft
// encodes its own address (EncodePeer) after its shutdown check and before
// it saves a newer term.
type heldTransport struct {
	*raft.InmemTransport
	mu      sync.Mutex
	handler func(raft.RPC)
	hold    chan struct{} // non-nil: the next EncodePeer closes entered and waits
	entered chan struct{}
}

func (h *heldTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handler = cb
	h.InmemTransport.SetHeartbeatHandler(cb)
}

func (h *heldTransport) EncodePeer(id raft.ServerID, p raft.ServerAddress) []byte {
	h.mu.Lock()
	hold, entered := h.hold, h.entered
	h.hold = nil
	h.mu.Unlock()
	if hold != nil {
		close(entered)
		<-hold
	}
	return h.InmemTransport.EncodePeer(id, p)
}

// TestCloseWaitsForAHeartbeatInRaft: Close does not close the Raft store
// under a heartbeat that Raft's transport is handling (hashicorp/raft runs
// heartbeats on the transport's connection goroutine, which checks for
// shutdown only on entry). Before, the heartbeat then saved its newer term
// into the closed store and Raft panicked, "failed to save current term:
// database not open" (docs/robustness.md; seen once in CI at a graceful
// stop).
func TestCloseWaitsForAHeartbeatInRaft(t *testing.T) {
	var trans *heldTransport
	c := startInmem(t, func(inmem *raft.InmemTransport) raft.Transport {
		trans = &heldTransport{InmemTransport: inmem}
		return trans
	})
	hold, entered := make(chan struct{}), make(chan struct{})
	trans.mu.Lock()
	trans.hold, trans.entered = hold, entered
	heartbeat := trans.handler
	trans.mu.Unlock()
	handled := make(chan any, 1)
	go func() {
		defer func() { handled <- recover() }()
		respond := make(chan raft.RPCResponse, 1)
		heartbeat(raft.RPC{RespChan: respond, Command: &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("other"), Addr: []byte("other")},
			Term:      c.raft.CurrentTerm() + 1, // a newer term: Raft saves it
		}})
	}()
	<-entered // inside Raft, past its shutdown check
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed: // Close did not wait: the heartbeat now meets a closed store
	case <-time.After(time.Second): // Close waits for the heartbeat, as it should
	}
	close(hold)
	if p := <-handled; p != nil {
		t.Fatalf("the heartbeat Raft was handling panicked after Close: %v", fmt.Sprint(p))
	}
	<-closed
}
