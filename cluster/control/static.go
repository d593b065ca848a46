package control

import "github.com/memgest/memgest/cluster"

// NewStatic returns a Control without Raft that holds m, for unit tests of
// the packages above this one: Map, Subscribe, Wait and WaitEpoch work, and
// Publish changes the map. It leads nothing, knows no leader and has no
// Raft members (IsLeader, Leader, Members); nothing else that needs Raft
// (proposals, membership changes) may be called on it.
func NewStatic(m *cluster.Map) *Plane {
	return &Plane{hub: newHub(m)}
}

// Publish makes m the current map of a Control made by NewStatic; it
// panics on a Control that runs Raft, whose maps come only from its log.
func (c *Plane) Publish(m *cluster.Map) {
	if c.raft != nil {
		panic("cluster: Publish on a Control that runs Raft")
	}
	c.hub.publish(m)
}
