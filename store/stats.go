package store

// Stats describes a store's contents and memory. Byte counts are exact for
// the structures they name; the Go allocator's own rounding of slab buffers
// is zero because segment sizes are powers of two it serves exactly.
type Stats struct {
	Keys         int // keys stored
	ExpiringKeys int // keys with ExpireAt ≠ 0
	// MeanExpireAt is the mean ExpireAt of those keys (unix
	// milliseconds), 0 without any.
	MeanExpireAt int64
	KeyBytes     int64 // Σ len(key)
	ValueBytes   int64 // Σ len(value)
	RecordBytes  int64 // live record bytes in slabs: headers, keys, inline values
	SlabBytes    int64 // bytes reserved by slabs, used or not (one spare segment per shard included)
	LargeBytes   int64 // bytes of large values held outside the slabs
	IndexBytes   int64 // bytes of the index tables
	Segments     int   // slab segments in use
	CleanedBytes int64 // bytes the cleaner has copied since New or Clear: its write amplification

	// ByScheme breaks Keys, KeyBytes and ValueBytes down by Meta.Scheme;
	// schemes with no key are left out.
	ByScheme map[uint16]SchemeStats
}

// SchemeStats counts the records of one Meta.Scheme.
type SchemeStats struct {
	Keys       int
	KeyBytes   int64
	ValueBytes int64
}

// Stats returns the current figures, summed shard by shard.
func (s *Store) Stats() Stats {
	st := Stats{ByScheme: map[uint16]SchemeStats{}}
	var expires expireSum
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		st.Keys += sh.tab.count
		st.ExpiringKeys += sh.expiring
		expires = expires.plus(sh.expireSum)
		st.KeyBytes += sh.keyBytes
		st.ValueBytes += sh.valBytes
		st.RecordBytes += sh.mem.live
		st.SlabBytes += sh.mem.reserved
		st.LargeBytes += sh.largeBytes
		st.IndexBytes += sh.tab.bytes()
		st.Segments += sh.mem.segments()
		st.CleanedBytes += sh.mem.copied
		for _, c := range sh.schemes {
			if c.Keys > 0 {
				t := st.ByScheme[c.id]
				t.Keys, t.KeyBytes, t.ValueBytes = t.Keys+c.Keys, t.KeyBytes+c.KeyBytes, t.ValueBytes+c.ValueBytes
				st.ByScheme[c.id] = t
			}
		}
		sh.mu.RUnlock()
	}
	st.MeanExpireAt = expires.mean(st.ExpiringKeys)
	return st
}

// OverheadPerKey is the memory per key beyond its key and value bytes:
// IndexHeaderPerKey plus SlackPerKey. 0 for an empty store.
func (s Stats) OverheadPerKey() float64 {
	return perKey(s.SlabBytes+s.LargeBytes+s.IndexBytes-s.KeyBytes-s.ValueBytes, s.Keys)
}

// IndexHeaderPerKey is the index and record header bytes per key: the cost
// of the data structure itself.
func (s Stats) IndexHeaderPerKey() float64 {
	return perKey(s.IndexBytes+s.RecordBytes+s.LargeBytes-s.KeyBytes-s.ValueBytes, s.Keys)
}

// SlackPerKey is the reserved slab space per key not holding a live record:
// garbage awaiting the cleaner, segment tails, the spare segment.
func (s Stats) SlackPerKey() float64 { return perKey(s.SlabBytes-s.RecordBytes, s.Keys) }

func perKey(b int64, keys int) float64 {
	if keys == 0 {
		return 0
	}
	return float64(b) / float64(keys)
}

// MemoryBytes is all the memory the store holds for its records: slabs,
// large values and index. A maxmemory check should use this, not
// SlabBytes, which leaves out values above MaxInlineRecord.
func (s Stats) MemoryBytes() int64 { return s.SlabBytes + s.LargeBytes + s.IndexBytes }
