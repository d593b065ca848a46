package commands

import (
	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

var errFenced = resp.Err("CLUSTERDOWN memgest: this node has no fresh lease from the control plane " +
	"(paused, partitioned or marked failed); it serves no keys until it renews it")

// refuseKeys answers for a key command that this node must not run now:
// it is fenced, or a key's shard is coordinated here but still recovering.
func (n *Server) refuseKeys(m *cluster.Map, keys [][]byte) (resp.Reply, bool) {
	if m.State != cluster.OK {
		return resp.Reply{}, false
	}
	if !n.Serving() {
		return errFenced, true
	}
	if m.RecoveringShards() == 0 {
		return resp.Reply{}, false // the common case: no slot hashing here
	}
	for _, k := range keys {
		slot := keyslot.Of(k)
		if sh := m.ShardOf(slot); sh != nil && sh.Recovering {
			// The shard's coordinator, not the slot's: an importing
			// shard's slots route to its source (this node's view places
			// them in the shard it imports into).
			if c, ok := m.CoordinatorOf(sh); ok && c.ID == n.NodeID {
				n.Metrics.DegradedRequest(core.DegradedRecovering)
				return resp.Errorf("TRYAGAIN memgest: shard %d is recovering after its coordinator failed", sh.ID), true
			}
		}
	}
	return resp.Reply{}, false
}

// selfState is this node's state in m ("unknown" before it joined).
func (n *Server) selfState(m *cluster.Map) string {
	if self, ok := m.Node(n.NodeID); ok {
		return self.State.String()
	}
	return "unknown"
}
