package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// scanAll runs a full iteration with the given count and stop probability
// and returns how often each key was seen.
func scanAll(s *Store, r *rand.Rand, count int, stopEvery int) map[string]int {
	seen := map[string]int{}
	fn := func(k []byte, m Meta) bool {
		seen[string(k)]++
		return stopEvery == 0 || r.IntN(stopEvery) != 0
	}
	for c := s.Scan(0, count, fn); c != 0; c = s.Scan(c, count, fn) {
	}
	return seen
}

func stableKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("stable-%d", i))
	}
	return keys
}

func requireSeen(t *testing.T, seen map[string]int, keys [][]byte) {
	t.Helper()
	for _, k := range keys {
		if seen[string(k)] == 0 {
			t.Fatalf("scan missed %q, present throughout", k)
		}
	}
}

// TestScanAcrossResize grows and then shrinks the tables between Scan calls:
// cursors are hash prefixes, so neither may lose a key.
func TestScanAcrossResize(t *testing.T) {
	s := New(WithShards(2))
	keys := stableKeys(200)
	for _, k := range keys {
		mustPut(t, s, k, k)
	}
	seen := map[string]int{}
	fn := func(k []byte, m Meta) bool { seen[string(k)]++; return true }
	c := s.Scan(0, 30, fn)
	for i := range 20_000 { // grow
		mustPut(t, s, fmt.Appendf(nil, "extra-%d", i), nil)
	}
	c = s.Scan(c, 30, fn)
	for i := range 20_000 { // shrink
		s.Delete(fmt.Appendf(nil, "extra-%d", i))
	}
	for c != 0 {
		c = s.Scan(c, 30, fn)
	}
	requireSeen(t, seen, keys)
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%q seen %d times with no early stop", k, n)
		}
	}
}

// TestScanEarlyStop stops fn at random: resuming from the returned cursor
// must still see every key.
func TestScanEarlyStop(t *testing.T) {
	s := New(WithShards(8))
	keys := stableKeys(3000)
	for _, k := range keys {
		mustPut(t, s, k, nil)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, stop := range []int{1, 2, 10} {
		requireSeen(t, scanAll(s, r, 1+r.IntN(40), stop), keys)
	}
	if c := s.Scan(0, len(keys)+1, func([]byte, Meta) bool { return true }); c != 0 {
		t.Fatalf("a count above Len must finish in one call, got cursor %x", c)
	}
	if c := s.Scan(1<<60, 10, func([]byte, Meta) bool { return true }); c != 0 {
		t.Fatalf("a cursor past the last shard must return 0, got %x", c)
	}
}

// TestScanConcurrent scans while other goroutines insert and delete keys by
// the thousand (growing and shrinking tables) and overwrite the stable keys
// with values of changing size (moving records, running the cleaner).
func TestScanConcurrent(t *testing.T) {
	s := New(WithShards(4), withMinSegment(512))
	keys := stableKeys(2000)
	for _, k := range keys {
		mustPut(t, s, k, k)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			churn(t, s, w, keys, &stop)
		}()
	}
	r := rand.New(rand.NewPCG(3, 4))
	for pass := range 12 {
		requireSeen(t, scanAll(s, r, 1+r.IntN(64), pass%3*5), keys)
	}
	stop.Store(true)
	wg.Wait()
	checkInvariants(t, s)
}

func churn(t *testing.T, s *Store, w int, stable [][]byte, stop *atomic.Bool) {
	r := rand.New(rand.NewPCG(uint64(w), 9))
	val := make([]byte, 300)
	for round := 0; !stop.Load(); round++ {
		n := 1000 + r.IntN(3000)
		for i := range n {
			if err := s.Put(fmt.Appendf(nil, "churn-%d-%d", w, i), val[:r.IntN(len(val))], Meta{}); err != nil {
				t.Error(err)
				return
			}
			k := stable[r.IntN(len(stable))]
			if err := s.Put(k, val[:r.IntN(len(val))], Meta{Version: uint64(round)}); err != nil {
				t.Error(err)
				return
			}
		}
		for i := range n {
			s.Delete(fmt.Appendf(nil, "churn-%d-%d", w, i))
		}
	}
}

func mustPut(t testing.TB, s *Store, k, v []byte) {
	t.Helper()
	if err := s.Put(k, v, Meta{}); err != nil {
		t.Fatal(err)
	}
}
