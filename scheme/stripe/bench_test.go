package stripe

import (
	"fmt"
	"runtime"
	"testing"
)

// benchKeys are n MemEC-workload keys (24 bytes).
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%019d", i))
	}
	return keys
}

// BenchmarkIndexGet looks keys up in an Index of 1 M keys and reports its
// bytes per key; BenchmarkMapGet is the reference, a Go map from key to
// location (which also holds a copy of each key).
func BenchmarkIndexGet(b *testing.B) {
	keys := benchKeys(1 << 20)
	f := &indexFixture{keys: keys}
	x := NewIndex(f.keyAt)
	for i, k := range keys {
		if err := x.Put(k, Loc{Chunk: uint32(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		if _, ok := x.Get(keys[i&(len(keys)-1)]); !ok {
			b.Fatal("missing key")
		}
	}
	b.ReportMetric(float64(x.Bytes())/float64(x.Len()), "B/key")
}

func BenchmarkMapGet(b *testing.B) {
	keys := benchKeys(1 << 20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := make(map[string]Loc)
	for i, k := range keys {
		m[string(k)] = Loc{Chunk: uint32(i)}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	for i := 0; b.Loop(); i++ {
		if _, ok := m[string(keys[i&(len(keys)-1)])]; !ok {
			b.Fatal("missing key")
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(m)), "B/key")
}
