package server

import (
	"errors"
	"strings"
	"testing"

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
	l.addTags([]uint32{stripe.KeyTag(key)}, LostKey{Scheme: "stripe:4+2", Lost: 3, Total: 6})
	k, ok := l.get(key)
	if !ok || k.Key != "user:1" || !k.Unsure || k.Lost != 3 {
		t.Fatalf("get(%s) = %+v, %v; want it maybe lost", key, k, ok)
	}
	var le *lostError
	if err := k.err(); !errors.As(err, &le) || !strings.Contains(err.Error(), "may have been lost") || !strings.HasPrefix(err.Error(), "LOST") {
		t.Fatalf("error %v", err)
	}
	if _, ok := l.get(other); ok {
		t.Fatal("a key of another tag reads as lost")
	}
	if keys, n := l.list(10); n != 1 || !strings.Contains(keys[0].Key, "tag") {
		t.Fatalf("list %v, %d; want the tag", keys, n)
	}
	if !l.forget(key) {
		t.Fatal("forget of a maybe-lost key says it was not reported")
	}
	if _, ok := l.get(key); ok {
		t.Fatal("a key written since still reads as lost")
	}
	if l.forget(key) {
		t.Fatal("a second forget reports it again")
	}
	l.clear()
	if l.count() != 0 {
		t.Fatalf("count %d after clear", l.count())
	}
}
