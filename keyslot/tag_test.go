package keyslot

import (
	"fmt"
	"testing"
)

// TestTagCarriesTheSlot: a tag gives back its key's slot, keys of one slot
// share a tag about once in 1024, and the tag of a key is stable (stripe
// manifests written by one node are read by another).
func TestTagCarriesTheSlot(t *testing.T) {
	// foo is in slot 12182 (Redis's value); 0x21d is CRC32C("foo")'s low
	// 10 bits.
	if got := Tag([]byte("foo")); got != 12182<<10|0x21d || TagSlot(got) != 12182 {
		t.Fatalf("Tag(foo) = %#x (slot %d); want %#x", got, TagSlot(got), 12182<<10|0x21d)
	}
	same, keys := 0, 0
	first := Tag([]byte("{user}0"))
	for i := 1; i <= 20000; i++ {
		tag := Tag(fmt.Appendf(nil, "{user}%d", i))
		if TagSlot(tag) != TagSlot(first) {
			t.Fatalf("keys with one hash tag have tags of slots %d and %d", TagSlot(first), TagSlot(tag))
		}
		keys++
		if tag == first {
			same++
		}
	}
	if same == 0 || same > 60 { // about 20000/1024 ≈ 20
		t.Fatalf("%d of %d keys of one slot share the first key's tag; want about 1 in 1024", same, keys)
	}
}
