package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/scheme/stripe"
)

// TestLostTagsNameMaybeLostKeys: a key whose tag is a lost stripe chunk's
// answers as maybe lost, with its own name, until it is written or
// deleted; other keys do not; status lists the tag.
func TestLostTagsNameMaybeLostKeys(t *testing.T) {
	var l lostKeys
	key, other := []byte("user:1"), []byte("user:2")
	if stripe.KeyTag(key) == stripe.KeyTag(other) {
		t.Fatal("pick keys with different tags")
	}
	l.addTags([]uint32{stripe.KeyTag(key)}, kind.LostKey{Scheme: "stripe:4+2", Lost: 3, Total: 6})
	k, ok := l.get(key)
	if !ok || k.Key != "user:1" || !k.Unsure || k.Lost != 3 {
		t.Fatalf("get(%s) = %+v, %v; want it maybe lost", key, k, ok)
	}
	var le *kind.LostError
	if err := k.Err(); !errors.As(err, &le) || !strings.Contains(err.Error(), "may have been lost") || !strings.HasPrefix(err.Error(), "LOST") {
		t.Fatalf("error %v", err)
	}
	if _, ok := l.get(other); ok {
		t.Fatal("a key of another tag reads as lost")
	}
	if keys, n := l.list(10); n != 1 || !strings.Contains(keys[0].Key, "tag") {
		t.Fatalf("list %v, %d; want the tag", keys, n)
	}
	if !l.forget(key, true) {
		t.Fatal("forget of a maybe-lost key says it was not reported")
	}
	if _, ok := l.get(key); ok {
		t.Fatal("a key deleted since still reads as lost")
	}
	if l.forget(key, true) {
		t.Fatal("a second forget reports it again")
	}
	l.clear()
	if l.count() != 0 {
		t.Fatalf("count %d after clear", l.count())
	}
}

// TestLostRangesNameEveryKeyOfTheirSlots: where nothing names the lost
// keys, every key of the slot range answers as maybe lost, with the cause
// and the range, until it is deleted (a key written since exists and is
// not looked up); keys of other slots do not; status lists the range.
func TestLostRangesNameEveryKeyOfTheirSlots(t *testing.T) {
	var l lostKeys
	in, out := kindtest.KeyInSlots(t, 100, 200), kindtest.KeyInSlots(t, 201, 16383)
	l.addRange(100, 200, kind.LostKey{Scheme: "stripe:4+2", Lost: 3, Total: 6, Cause: "chunks of scheme stripe:4+2 lost 3 of 6 pieces"})
	l.addRange(100, 200, kind.LostKey{Scheme: "stripe:4+2", Lost: 3, Total: 6, Cause: "chunks of scheme stripe:4+2 lost 3 of 6 pieces"})
	if l.count() != 1 {
		t.Fatalf("count %d after the same range twice, want 1", l.count())
	}
	k, ok := l.get(in)
	if !ok || k.Key != string(in) || !k.Unsure {
		t.Fatalf("get(%s) = %+v, %v; want it maybe lost", in, k, ok)
	}
	err := k.Err()
	for _, want := range []string{"LOST", "may have been lost", "stripe:4+2", "slots 100-200", "SET or DEL clears"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
	if _, ok := l.get(out); ok {
		t.Fatal("a key of another slot reads as lost")
	}
	if keys, n := l.list(10); n != 1 || keys[0].Key != "(keys of slots 100-200)" {
		t.Fatalf("list %v, %d; want the range", keys, n)
	}
	if !l.forget(in, false) {
		t.Fatal("forget of a key of a lost range says it was not reported")
	}
	if _, ok := l.get(in); !ok {
		t.Fatal("a written key was remembered as cleared: every key written in the range would be")
	}
	if !l.forget(in, true) {
		t.Fatal("forget of a deleted key of a lost range says it was not reported")
	}
	if _, ok := l.get(in); ok {
		t.Fatal("a key deleted since still reads as lost")
	}
	if l.named(kindtest.KeyInSlots(t, 150, 150)) {
		t.Fatal("a key known by its slot only counts as named")
	}
	l.clear()
	if _, ok := l.get(kindtest.KeyInSlots(t, 150, 150)); ok || l.count() != 0 {
		t.Fatalf("the range outlived clear (count %d)", l.count())
	}
}
