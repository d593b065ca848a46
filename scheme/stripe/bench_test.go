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

// dataFixture is a Data of n 100-byte values under benchKeys(n).
func dataFixture(b *testing.B, n int) (*Data, [][]byte) {
	b.Helper()
	d, err := NewData(DefaultChunkSize)
	if err != nil {
		b.Fatal(err)
	}
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	keys := benchKeys(n)
	value := make([]byte, 100)
	for i, k := range keys {
		o := Object{Key: k, Value: value, Version: uint64(i + 1)}
		loc, _, err := d.Append(&o)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := d.Commit(k, loc); err != nil {
			b.Fatal(err)
		}
	}
	return d, keys
}

// BenchmarkDataGet reads objects of 24-byte keys and 100-byte values as
// a GET did before issue 43 (Get: parse only); BenchmarkDataGetChecked as
// a GET does now (GetChecked: parse and CRC32C). Their difference is the
// check's cost per GET on the coordinator.
func BenchmarkDataGet(b *testing.B) {
	d, keys := dataFixture(b, 1<<16)
	for i := 0; b.Loop(); i++ {
		if _, ok := d.Get(keys[i&(len(keys)-1)]); !ok {
			b.Fatal("missing key")
		}
	}
}

func BenchmarkDataGetChecked(b *testing.B) {
	d, keys := dataFixture(b, 1<<16)
	for i := 0; b.Loop(); i++ {
		if _, ok, err := d.GetChecked(keys[i&(len(keys)-1)]); !ok || err != nil {
			b.Fatal("missing key", err)
		}
	}
}

// BenchmarkObjectChecksum is the CRC32C of one such object's encoding,
// what a SET pays up to three times (its encoding, the check of the
// object it replaces at its stage, and at its removal).
func BenchmarkObjectChecksum(b *testing.B) {
	o := Object{Key: benchKeys(1)[0], Value: make([]byte, 100), Version: 7}
	enc := o.AppendTo(nil)
	for b.Loop() {
		if Verify(enc) != nil {
			b.Fatal("fails")
		}
	}
	b.SetBytes(int64(len(enc)))
}
