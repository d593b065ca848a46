package lostkeys

import (
	"errors"
	"strings"
	"testing"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// TestLostTagsNameMaybeLostKeys: a key whose tag is a lost stripe chunk's
// answers as maybe lost, with its own name, until it is written or
// deleted; other keys do not; status lists the tag.
func TestLostTagsNameMaybeLostKeys(t *testing.T) {
	var l Set
	key, other := []byte("user:1"), []byte("user:2")
	if keyslot.Tag(key) == keyslot.Tag(other) {
		t.Fatal("pick keys with different tags")
	}
	l.AddTags([]uint32{keyslot.Tag(key)}, kind.LostKey{Scheme: "stripe:4+2", Lost: 3, Total: 6})
	k, ok := l.Get(key)
	if !ok || k.Key != "user:1" || !k.Unsure || k.Lost != 3 {
		t.Fatalf("get(%s) = %+v, %v; want it maybe lost", key, k, ok)
	}
	var le *kind.LostError
	if err := k.Err(); !errors.As(err, &le) || !strings.Contains(err.Error(), "may have been lost") || !strings.HasPrefix(err.Error(), "LOST") {
		t.Fatalf("error %v", err)
	}
	if _, ok := l.Get(other); ok {
		t.Fatal("a key of another tag reads as lost")
	}
	if keys, n := l.List(10); n != 1 || !strings.Contains(keys[0].Key, "tag") {
		t.Fatalf("list %v, %d; want the tag", keys, n)
	}
	if !l.Forget(key, true) {
		t.Fatal("forget of a maybe-lost key says it was not reported")
	}
	if _, ok := l.Get(key); ok {
		t.Fatal("a key deleted since still reads as lost")
	}
	if l.Forget(key, true) {
		t.Fatal("a second forget reports it again")
	}
	l.Clear()
	if l.Count() != 0 {
		t.Fatalf("count %d after clear", l.Count())
	}
}

// TestLostRangesNameEveryKeyOfTheirSlots: where nothing names the lost
// keys, every key of the slot range answers as maybe lost, with the cause
// and the range, until it is deleted (a key written since exists and is
// not looked up); keys of other slots do not; status lists the range.
func TestLostRangesNameEveryKeyOfTheirSlots(t *testing.T) {
	var l Set
	in, out := kindtest.KeyInSlots(t, 100, 200), kindtest.KeyInSlots(t, 201, 16383)
	l.AddRange(100, 200, kind.LostKey{Scheme: "stripe:4+2", Lost: 3, Total: 6, Cause: "chunks of scheme stripe:4+2 lost 3 of 6 pieces"})
	l.AddRange(100, 200, kind.LostKey{Scheme: "stripe:4+2", Lost: 3, Total: 6, Cause: "chunks of scheme stripe:4+2 lost 3 of 6 pieces"})
	if l.Count() != 1 {
		t.Fatalf("count %d after the same range twice, want 1", l.Count())
	}
	k, ok := l.Get(in)
	if !ok || k.Key != string(in) || !k.Unsure {
		t.Fatalf("get(%s) = %+v, %v; want it maybe lost", in, k, ok)
	}
	err := k.Err()
	for _, want := range []string{"LOST", "may have been lost", "stripe:4+2", "slots 100-200", "SET or DEL clears"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
	if _, ok := l.Get(out); ok {
		t.Fatal("a key of another slot reads as lost")
	}
	if keys, n := l.List(10); n != 1 || keys[0].Key != "(keys of slots 100-200)" {
		t.Fatalf("list %v, %d; want the range", keys, n)
	}
	if !l.Forget(in, false) {
		t.Fatal("forget of a key of a lost range says it was not reported")
	}
	if _, ok := l.Get(in); !ok {
		t.Fatal("a written key was remembered as cleared: every key written in the range would be")
	}
	if !l.Forget(in, true) {
		t.Fatal("forget of a deleted key of a lost range says it was not reported")
	}
	if _, ok := l.Get(in); ok {
		t.Fatal("a key deleted since still reads as lost")
	}
	if l.Named(kindtest.KeyInSlots(t, 150, 150)) {
		t.Fatal("a key known by its slot only counts as named")
	}
	l.Clear()
	if _, ok := l.Get(kindtest.KeyInSlots(t, 150, 150)); ok || l.Count() != 0 {
		t.Fatalf("the range outlived clear (count %d)", l.Count())
	}
}
