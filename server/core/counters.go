package core

import (
	"sync"
	"sync/atomic"
)

// counters are a node's running totals for INFO stats and /metrics.
type counters struct {
	Commands    atomic.Int64
	Forwarded   atomic.Int64
	Connections atomic.Int64
	Expired     atomic.Int64
	Relocated   atomic.Int64 // stripe objects moved by compaction
	// detachedValues maps a scheme id to an *atomic.Int64: the logical
	// value bytes of its keys that primary records do not hold
	// (kind.Scheme.Detached: split's values live in their shards).
	detachedValues sync.Map

	// RejectedConns counts client connections refused at maxclients.
	RejectedConns atomic.Int64
	// KeyspaceHits and KeyspaceMisses count reads of a key's value (Get)
	// that found it and that did not, as Redis's keyspace_hits and
	// keyspace_misses count read lookups.
	KeyspaceHits, KeyspaceMisses atomic.Int64
}

// DetachedBytes is scheme id's count of detached value bytes.
func (c *counters) DetachedBytes(id uint16) *atomic.Int64 {
	v, _ := c.detachedValues.LoadOrStore(id, new(atomic.Int64))
	return v.(*atomic.Int64)
}
