package store

import (
	"fmt"
	"math"
	"testing"
)

// TestMeanExpireAt: Stats' mean expiry follows puts, TTL changes and
// deletions exactly, with expiries far enough out that a 64-bit sum of
// them would overflow.
func TestMeanExpireAt(t *testing.T) {
	s := New(WithShards(4))
	if st := s.Stats(); st.MeanExpireAt != 0 {
		t.Fatalf("empty store: mean %d", st.MeanExpireAt)
	}
	const far = math.MaxInt64 / 8 // eight of them overflow an int64
	put := func(k string, at int64) {
		t.Helper()
		if err := s.Put([]byte(k), []byte("v"), Meta{Version: 1, ExpireAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 64 {
		put(fmt.Sprint("far", i), far+int64(i%2)) // mean far+0.5, rounded down
	}
	put("none", 0) // no expiry: not in the mean
	check := func(want int64, keys int) {
		t.Helper()
		if st := s.Stats(); st.MeanExpireAt != want || st.ExpiringKeys != keys {
			t.Fatalf("mean %d over %d keys, want %d over %d", st.MeanExpireAt, st.ExpiringKeys, want, keys)
		}
	}
	check(far, 64)
	for i := range 64 {
		s.Delete([]byte(fmt.Sprint("far", i)))
	}
	check(0, 0)
	put("a", 1000)
	put("b", 3000)
	check(2000, 2)
	s.UpdateMeta([]byte("b"), func(m *Meta) bool { m.ExpireAt = 5000; return true })
	check(3000, 2)
	s.UpdateMeta([]byte("a"), func(m *Meta) bool { m.ExpireAt = 0; return true }) // PERSIST
	check(5000, 1)
	checkInvariants(t, s)
}
