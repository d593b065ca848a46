package lostkeys

import (
	"testing"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
)

// TestReportsCarryTheSetToAnotherNode: a set's reports (its named keys as
// tags, its tags, its ranges), seeded into an empty set with the keys
// deleted since, make every lost key answer there — named keys as maybe
// lost — and a deleted one read as absent (issue 43 §2).
func TestReportsCarryTheSetToAnotherNode(t *testing.T) {
	var a Set
	a.Add(kind.LostKey{Key: "split-key", Scheme: "split:2+1", Lost: 2, Total: 3})
	stripeKey := []byte("stripe-key")
	a.AddTags([]uint32{keyslot.Tag(stripeKey)}, kind.LostKey{Scheme: "stripe:2+1", Lost: 2, Total: 3})
	rangeKey := []byte("anything")
	slot := keyslot.Of(rangeKey)
	a.AddRange(slot, slot, kind.LostKey{Scheme: "none", Cause: "its coordinator died"})
	reports := a.Reports(0, keyslot.Count-1)
	if len(reports) != 3 {
		t.Fatalf("%d reports: %+v; want the named key's, the tag's and the range's", len(reports), reports)
	}
	var b Set
	b.Seed(reports, []string{"deleted"})
	for _, key := range []string{"split-key", string(stripeKey), string(rangeKey)} {
		k, ok := b.Get([]byte(key))
		if !ok || !k.Unsure || k.Key != key {
			t.Fatalf("%s on the seeded set: %+v, %v; want maybe lost", key, k, ok)
		}
	}
	if k, _ := b.Get([]byte("split-key")); k.Scheme != "split:2+1" || k.Cause == "" {
		t.Fatalf("the named key's report lost what it said: %+v", k)
	}
	b.Seed(reports, nil) // again, as every new map does: nothing doubles
	if b.Count() != a.Count() {
		t.Fatalf("seeding twice: %d reports, want %d", b.Count(), a.Count())
	}
	a.Seed(reports, nil) // its own reports back from the map: each key counted once
	if a.Reported() != 3 {
		t.Fatalf("a set seeded with its own reports counts %d, want 3", a.Reported())
	}
	var c Set // seeded first, then naming the key itself (a recovery's order)
	c.Seed(reports, nil)
	c.Add(kind.LostKey{Key: "split-key", Scheme: "split:2+1", Lost: 2, Total: 3})
	if keys, n := c.List(10); n != 3 || len(keys) != 3 {
		t.Fatalf("seeded, then named: %d reports listed (%v), want 3", n, keys)
	}
	b.AddRange(keyslot.Of([]byte("deleted")), keyslot.Of([]byte("deleted")), kind.LostKey{Scheme: "none"})
	if _, ok := b.Get([]byte("deleted")); ok {
		t.Fatal("a key deleted since reads as lost")
	}
}
