package server

import (
	"sync"
	"sync/atomic"
)

// counters are a node's running totals for INFO stats and /metrics.
type counters struct {
	commands    atomic.Int64
	forwarded   atomic.Int64
	connections atomic.Int64
	expired     atomic.Int64
	relocated   atomic.Int64 // stripe objects moved by compaction
	// detachedValues maps a scheme id to an *atomic.Int64: the logical
	// value bytes of its keys that primary records do not hold
	// (kind.Scheme.Detached: split's values live in their shards).
	detachedValues sync.Map

	// rejectedConns counts client connections refused at maxclients.
	rejectedConns atomic.Int64
}

// detachedBytes is scheme id's count of detached value bytes.
func (c *counters) detachedBytes(id uint16) *atomic.Int64 {
	v, _ := c.detachedValues.LoadOrStore(id, new(atomic.Int64))
	return v.(*atomic.Int64)
}
