package control

import (
	"sync"

	"github.com/hashicorp/raft"
)

// fullTransport is what Raft gets from Control: a transport with pre-vote
// and Close (hashicorp/raft's network and in-memory transports are).
type fullTransport interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

// gatedTransport runs Raft's heartbeat fast path under a gate that Close
// shuts before the Raft store closes. hashicorp/raft handles heartbeats on
// the transport's connection goroutine (processHeartbeat), which checks for
// shutdown only on entry, and neither Raft's Shutdown nor the transport's
// Close waits for a handler already past that check: one that then saved a
// newer term into the closed store panicked the node on a graceful stop.
type gatedTransport struct {
	fullTransport
	mu     sync.RWMutex // held for reading by each heartbeat Raft handles
	closed bool
}

// The transport Control builds has all of it, so it is always gated.
var _ fullTransport = (*raft.NetworkTransport)(nil)

// gate wraps t when it has what gatedTransport forwards; otherwise Raft
// gets t as it is, without the gate.
func gate(t raft.Transport) raft.Transport {
	if full, ok := t.(fullTransport); ok {
		return &gatedTransport{fullTransport: full}
	}
	return t
}

// SetHeartbeatHandler gives the transport cb behind the gate.
func (g *gatedTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	if cb == nil {
		g.fullTransport.SetHeartbeatHandler(nil)
		return
	}
	g.fullTransport.SetHeartbeatHandler(func(rpc raft.RPC) {
		g.mu.RLock()
		defer g.mu.RUnlock()
		if g.closed {
			rpc.Respond(nil, raft.ErrRaftShutdown)
			return
		}
		cb(rpc)
	})
}

// shut waits for the heartbeats being handled and refuses the next ones.
func (g *gatedTransport) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}
