package store

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestChurnReusesMemory overwrites, resizes and deletes records millions of
// times over a fixed key space. The slabs must stay within the bound the
// cleaner promises, (1+ratio)×live plus a few segments per shard, and the Go
// heap must not grow with the number of operations.
func TestChurnReusesMemory(t *testing.T) {
	const shards = 16
	keys, ops := 20_000, 2_000_000
	if raceEnabled || testing.Short() {
		keys, ops = 5000, 150_000 // still 30 rewrites of every key
	}
	s := New(WithShards(shards))
	r := rand.New(rand.NewPCG(7, 7))
	val := make([]byte, 400)
	key := func(i int) []byte { return fmt.Appendf(nil, "churn-key-%08d", i) }
	for i := range keys {
		mustPut(t, s, key(i), val[:50+r.IntN(100)])
	}
	heap0 := heapAfterGC()
	var peak Stats
	for i := range ops {
		k := key(r.IntN(keys))
		switch r.IntN(8) {
		case 0:
			s.Delete(k)
		case 1:
			s.UpdateMeta(k, func(m *Meta) bool { m.ExpireAt = int64(r.IntN(2)) * 1e12; return true })
		default:
			if err := s.Put(k, val[:r.IntN(len(val)/2)+r.IntN(len(val)/2)], Meta{Version: uint64(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if i%50_000 == 0 {
			st := s.Stats()
			checkChurnBound(t, st, shards)
			if st.SlabBytes > peak.SlabBytes {
				peak = st
			}
		}
	}
	checkInvariants(t, s)
	st := s.Stats()
	t.Logf("after %d ops: %d keys, records %d B, slabs %d B (peak %d), %d segments, cleaner copied %d B",
		ops, st.Keys, st.RecordBytes, st.SlabBytes, peak.SlabBytes, st.Segments, st.CleanedBytes)
	if st.CleanedBytes == 0 {
		t.Fatal("the cleaner never ran")
	}
	// The heap holds the slabs, the index and garbage the GC has not yet
	// returned; it must be of the order of the slabs, not of the ops.
	if heap := heapAfterGC(); heap > heap0+3*uint64(peak.SlabBytes+peak.IndexBytes) {
		t.Fatalf("heap grew from %d to %d bytes", heap0, heap)
	}
}

// checkChurnBound asserts the slab bound: garbage ≤ ratio×live + 2 minimum
// segments per shard after cleaning, plus per shard the head segment, the
// spare, and the unused tails of segments (each under one record).
func checkChurnBound(t *testing.T, st Stats, shards int) {
	t.Helper()
	perShard := int64(2*defaultMinSegment + 2*maxSegSize)
	tails := int64(st.Segments) * 600
	limit := int64(float64(st.RecordBytes)*(1+DefaultGarbageRatio)) + int64(shards)*perShard + tails
	if st.SlabBytes > limit {
		t.Fatalf("slabs %d bytes for %d live record bytes: over the bound %d", st.SlabBytes, st.RecordBytes, limit)
	}
}

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
