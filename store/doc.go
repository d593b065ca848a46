// Package store is a node's local memory: the records a memgest node
// coordinates and the redundancy pieces (replicas, shards) other nodes send
// it, each a key, a value and a small versioned Meta (DESIGN.md §9). It
// holds tens of millions of records without giving the garbage collector
// anything per record to scan, and it imports nothing from the rest of
// memgest.
//
// # Layout
//
// A Store is split into shards (256 by default, WithShards) by the low bits
// of a seeded maphash of the key; each shard has a sync.RWMutex, an index
// and its slabs. Reads take the read lock just long enough to copy the
// value out; writes take the write lock. There are no per-key goroutines
// or timers.
//
//   - Slabs (arena.go, clean.go). Records (record.go: a 3- to 32-byte header
//     with Meta in variable-length form, the key, the value) are appended to
//     byte segments of 4 KiB to 256 KiB. Deletes and overwrites leave
//     garbage; once a shard's garbage exceeds 1/8 of its live bytes
//     (WithGarbageRatio), writes also clean: the segment with the most
//     garbage has its live records copied to the head and is released.
//     Memory therefore stays within about (1 + ratio) × live under any
//     churn, with no size classes and no rounding waste. An overwrite with
//     a same-size record is done in place and makes no garbage.
//   - Index (table.go). A []uint64 open-addressing table per shard; an
//     entry is a 28-bit hash prefix and a 36-bit slab offset, kept sorted by
//     prefix (Robin Hood linear probing), loaded 75-90%: about 10 bytes per
//     key. Lookups compare keys only on an equal 28-bit prefix.
//   - Values longer than fit in a 64 KiB record (MaxInlineRecord) are kept
//     in a []byte of their own, with only the header and key in the slab:
//     they are few, and copying them would make cleaning slow. The store
//     never changes such a value: a write replaces it whole. So it is
//     copied in, and out by Get, outside the shard's lock and in steps
//     that yield the processor (a 512 MiB memmove stalled whole nodes);
//     View returns its own bytes without a copy, and PutIfNewerOwned and
//     ExchangeIfOwned keep a buffer the caller hands over instead of
//     copying it.
//
// The GC sees a few pointers per 256 KiB of data (segment buffers) and one
// per large value. With 2M records of 16-byte keys and 100-byte values, the
// overhead beyond key and value bytes is about 29 bytes per key (index 10,
// header 17, slack 2) and a forced GC takes milliseconds, where a
// map[string][]byte costs 112 bytes per key and a second: docs/store.md.
//
// # Semantics
//
// Put replaces; PutIfNewer applies only over an absent key or a lower
// version, so out-of-order replication cannot roll a record back;
// UpdateMeta, DeleteIf and PutIfNewer decide and act under one lock. The
// store never expires records itself: ExpireAt is data, and SampleExpired
// finds due records for an active expiry cycle like Redis's. Scan iterates
// like Redis SCAN, by cursor, complete for keys present throughout, across
// any resize. Callbacks given to Scan, UpdateMeta and DeleteIf run under a
// shard lock and must not call the Store; SampleExpired calls its callback
// after unlocking.
//
// Limits: keys up to MaxKeySize (64 KiB − 1) bytes, values up to 512 MiB
// (WithMaxValueSize), 64 GiB of slabs per shard; beyond them writes fail
// with ErrTooLarge or ErrFull.
//
// # Why not a library
//
// fastcache, freecache and bigcache keep data in byte arenas for the same
// GC reason, but they are caches: they evict or overwrite under pressure
// (a ring buffer), have no per-record metadata or versions, no conditional
// writes, no iteration with a resumable cursor, and cap entry sizes. memgest
// needs a store that never drops a record, compares versions atomically
// with the write, and scans and samples expiry like Redis. No well-kept Go
// library offers a pointer-free map with that API, so the allocator and
// hash table here are written for it: about 1,400 lines with comments,
// checked against a map-based model by randomized, concurrent and fuzz
// tests.
package store
