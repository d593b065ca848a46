package store

import (
	"fmt"
	"testing"
)

// TestSampleExpired sweeps a store of never-, already- and later-expiring
// keys, deleting what the sampler reports from inside fn (which may call the
// store): exactly the expired keys must go.
func TestSampleExpired(t *testing.T) {
	const now = 1_000_000
	s := New(WithShards(8))
	want := map[string]bool{}
	for i := range 3000 {
		k := fmt.Appendf(nil, "k%d", i)
		m := Meta{Version: uint64(i)}
		switch i % 4 {
		case 1:
			m.ExpireAt = now - int64(i) // expired
			want[string(k)] = true
		case 2:
			m.ExpireAt = now + 1 + int64(i) // not yet
		case 3:
			m.ExpireAt = -int64(i) - 1 // negative: never due
		}
		if err := s.Put(k, k, m); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for calls := 0; len(got) < len(want); calls++ {
		if calls > 10_000 {
			t.Fatalf("sampler found %d of %d expired keys", len(got), len(want))
		}
		n := s.SampleExpired(now, 16, func(k []byte, m Meta) {
			if m.ExpireAt <= 0 || m.ExpireAt > now || !want[string(k)] {
				t.Fatalf("visited %q with %+v", k, m)
			}
			if s.DeleteIf(k, func(cur Meta) bool { return cur == m }) {
				got[string(k)] = true
			}
		})
		if n > 16 {
			t.Fatalf("visited %d, max 16", n)
		}
	}
	if s.Len() != 3000-len(want) {
		t.Fatalf("Len %d, want %d", s.Len(), 3000-len(want))
	}
	for range s.Len()/16 + 10 {
		if n := s.SampleExpired(now, 16, func([]byte, Meta) {}); n != 0 {
			t.Fatalf("found %d expired after the sweep", n)
		}
	}
	checkInvariants(t, s)
}

// TestSampleExpiredResumes checks the budget and the resume point: with many
// expiring but unexpired records, each call examines 20 records per record
// asked for and leaves the cursor just past them, and successive calls walk
// on until they reach the one expired record wherever it is.
func TestSampleExpiredResumes(t *testing.T) {
	s := New(WithShards(4))
	const n = 5000
	for i := range n {
		if err := s.Put(fmt.Appendf(nil, "k%d", i), nil, Meta{ExpireAt: 100}); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		before := entriesBefore(s, s.expiry.Load())
		s.SampleExpired(60, 1, func([]byte, Meta) { t.Fatal("nothing is due") })
		if d := entriesBefore(s, s.expiry.Load()) - before; d < sampleEffort-1 || d > sampleEffort {
			t.Fatalf("one call advanced %d records, want %d", d, sampleEffort)
		}
	}
	if err := s.Put([]byte("due"), nil, Meta{ExpireAt: 50}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for s.SampleExpired(60, 1, func(k []byte, m Meta) {
		if string(k) != "due" {
			t.Fatalf("visited %q", k)
		}
	}) == 0 {
		if calls++; calls > n/sampleEffort+len(s.shards)+1 {
			t.Fatalf("no expired record after %d calls: the sampler does not resume where it stopped", calls)
		}
	}
}

// entriesBefore counts the records a scan visits before reaching cursor c.
func entriesBefore(s *Store, c uint64) int {
	si, p, _ := s.splitCursor(c)
	n := 0
	for i := range s.shards {
		for _, e := range s.shards[i].tab.slots {
			if e != 0 && (i < si || i == si && entryPrefix(e) < p) {
				n++
			}
		}
	}
	return n
}

// Shards without expiring records cost nothing: a store with none returns
// at once.
func TestSampleExpiredNoExpiry(t *testing.T) {
	s := New()
	for i := range 1000 {
		mustPut(t, s, fmt.Appendf(nil, "k%d", i), nil)
	}
	if n := s.SampleExpired(1<<62, 10, func([]byte, Meta) { t.Fatal("visited") }); n != 0 {
		t.Fatalf("visited %d", n)
	}
}
