package store

import (
	"flag"

	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"
)

var (
	reportFlag = flag.Bool("store.report", false, "run TestStoreOverheadReport")
	keysFlag   = flag.Int("store.keys", 2_000_000, "keys for TestStoreOverheadReport")
)

const (
	benchKeyLen = 16
	benchValLen = 100
)

// benchKey writes the 16-byte key number i into b.
func benchKey(b []byte, i int) []byte {
	b = append(b[:0], "key:000000000000"...)
	s := strconv.AppendInt(make([]byte, 0, 20), int64(i), 10)
	copy(b[benchKeyLen-len(s):], s)
	return b
}

func benchValue() []byte {
	v := make([]byte, 150)
	for i := range v {
		v[i] = byte('a' + i%26)
	}
	return v
}

func filledStore(tb testing.TB, n int, meta func(i int) Meta) *Store {
	s := New()
	val, key := benchValue()[:benchValLen], make([]byte, 0, benchKeyLen)
	for i := range n {
		if err := s.Put(benchKey(key, i), val, meta(i)); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// typicalMeta is what the coordinator writes for a record (server/datapath):
// a full-width version, a scheme id and a checksum in Aux.
func typicalMeta(i int) Meta {
	return Meta{Version: 1<<62 | uint64(i), Scheme: 2, Aux: uint32(i) * 2654435761}
}

const benchKeys = 1 << 20

func BenchmarkGet(b *testing.B) {
	s := filledStore(b, benchKeys, typicalMeta)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		key, dst := make([]byte, 0, benchKeyLen), make([]byte, 0, benchValLen)
		for pb.Next() {
			var ok bool
			if dst, _, ok = s.Get(benchKey(key, r.IntN(benchKeys)), dst); !ok {
				b.Fatal("missing key")
			}
		}
	})
}

// BenchmarkPut overwrites existing keys with a value of the same size (in
// place), of varying size (a new record each time, so the cleaner runs),
// and inserts new keys.
func BenchmarkPut(b *testing.B) {
	for _, c := range []struct {
		name   string
		vary   bool
		insert bool
	}{{"same-size", false, false}, {"varying-size", true, false}, {"insert", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			s := filledStore(b, benchKeys, typicalMeta)
			val := benchValue()
			b.SetBytes(benchKeyLen + benchValLen)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 0))
				key := make([]byte, 0, benchKeyLen)
				for pb.Next() {
					i, n := r.IntN(benchKeys), benchValLen
					if c.insert {
						i += benchKeys + int(r.Uint32())
					}
					if c.vary {
						n = 50 + r.IntN(100)
					}
					if err := s.Put(benchKey(key, i), val[:n], typicalMeta(i)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// TestStoreOverheadReport prints the memory figures docs/store.md records:
//
//	go test ./store -run TestStoreOverheadReport -store.report -v [-store.keys N]
func TestStoreOverheadReport(t *testing.T) {
	if !*reportFlag {
		t.Skip("pass -store.report to run")
	}
	n := *keysFlag
	t.Logf("%d keys of %d bytes, values of %d bytes, %d shards, GOMAXPROCS %d",
		n, benchKeyLen, benchValLen, DefaultShards, runtime.GOMAXPROCS(0))
	t.Logf("%-8s %8s %7s %8s %8s %9s %9s %10s %10s", "meta", "header", "index", "idx+hdr", "slack",
		"overhead", "heap-116", "GC wall", "GC STW")
	for _, c := range []struct {
		name string
		meta func(int) Meta
	}{
		{"minimal", func(i int) Meta { return Meta{Version: uint64(i)} }},
		{"typical", typicalMeta},
		{"full", func(i int) Meta {
			m := typicalMeta(i)
			m.ExpireAt, m.Flags = 1_800_000_000_000+int64(i), 1
			return m
		}},
	} {
		reportStore(t, c.name, n, c.meta)
	}
	reportMap(t, n)
}

func reportStore(t *testing.T, name string, n int, meta func(int) Meta) {
	before := heapAfterGC()
	s := filledStore(t, n, meta)
	heap := perKeyHeap(before, n)
	wall, stw := timeGC()
	st := s.Stats()
	header := float64(st.RecordBytes+st.LargeBytes-st.KeyBytes-st.ValueBytes) / float64(st.Keys)
	index := float64(st.IndexBytes) / float64(st.Keys)
	t.Logf("%-8s %8.1f %7.1f %8.1f %8.1f %9.1f %9.1f %10v %10v", name, header, index,
		st.IndexHeaderPerKey(), st.SlackPerKey(), st.OverheadPerKey(), heap, wall, stw)
	if st.Keys != n {
		t.Fatalf("%d keys stored, want %d", st.Keys, n)
	}
	if o := st.OverheadPerKey(); o > 40 {
		t.Errorf("%s: overhead %.1f bytes per key, the target is 40", name, o)
	}
	runtime.KeepAlive(s)
}

// reportMap gives the same figures for map[string][]byte, the structure the
// store replaces (no metadata at all).
func reportMap(t *testing.T, n int) {
	before := heapAfterGC()
	m := make(map[string][]byte)
	val, key := benchValue()[:benchValLen], make([]byte, 0, benchKeyLen)
	for i := range n {
		m[string(benchKey(key, i))] = append([]byte(nil), val...)
	}
	heap := perKeyHeap(before, n)
	wall, stw := timeGC()
	t.Logf("%-8s %8s %7s %8s %8s %9s %9.1f %10v %10v", "map", "-", "-", "-", "-", "-", heap, wall, stw)
	runtime.KeepAlive(m)
}

func perKeyHeap(before uint64, n int) float64 {
	return float64(heapAfterGC()-before)/float64(n) - benchKeyLen - benchValLen
}

// timeGC forces a collection three times and returns the fastest: the wall
// time runtime.GC blocks its caller (a full mark of the live heap) and the
// stop-the-world pause the runtime recorded for it.
func timeGC() (wall, stw time.Duration) {
	var ms runtime.MemStats
	wall, stw = time.Hour, time.Hour
	for range 3 {
		start := time.Now()
		runtime.GC()
		w := time.Since(start)
		runtime.ReadMemStats(&ms)
		wall, stw = min(wall, w), min(stw, time.Duration(ms.PauseNs[(ms.NumGC+255)%256]))
	}
	return wall.Round(time.Microsecond), stw.Round(time.Microsecond)
}
