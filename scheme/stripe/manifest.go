package stripe

import (
	"github.com/memgest/memgest/keyslot"
)

// A manifest is what a list's first parity holder knows of a sealed
// chunk's keys without decoding it (metadata-first recovery, Ring §5.5):
// one 24-bit tag per object, 3 bytes each, built from its copy of the
// chunk at seal (or from a sealed Resync) and dropped when the chunk is
// freed. Later deltas are not tracked: a deleted object's tag stays, so a
// manifest names a superset of the chunk's keys, and a stale tag costs a
// needless decode, never a missed key.
//
// A tag (keyslot.Tag) is the key's cluster slot (14 bits) and 10 bits of its CRC32C: a
// new coordinator can tell from the tags alone which chunks hold keys of
// its shard's slots, and a key's tag matches another key's of the same
// slot once in 1024.

// TagBytes is the size of one tag in a manifest.
const TagBytes = 3

// manifestOf returns the tags of chunk's objects (fragments included), or
// false if the chunk does not parse.
func manifestOf(chunk []byte) ([]byte, bool) {
	var tags []byte
	err := Scan(chunk, func(_ int, o Object) bool {
		t := keyslot.Tag(o.Key)
		tags = append(tags, byte(t>>16), byte(t>>8), byte(t))
		return true
	})
	return tags, err == nil
}

// Tags calls fn with each tag of manifest m.
func Tags(m []byte, fn func(tag uint32)) {
	for i := 0; i+TagBytes <= len(m); i += TagBytes {
		fn(uint32(m[i])<<16 | uint32(m[i+1])<<8 | uint32(m[i+2]))
	}
}
