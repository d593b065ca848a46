package keyslot

import "hash/crc32"

// A tag is a key's slot (14 bits) and 10 bits of its CRC32C: it tells
// which slot a key is in, and a key's tag matches another key's of the
// same slot once in 1024. Stripe manifests keep one per object, so a new
// coordinator can tell from the tags alone which chunks hold keys of its
// slots, and a node names keys lost with a chunk by their tags.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Tag returns key's tag.
func Tag(key []byte) uint32 {
	return uint32(Of(key))<<10 | crc32.Checksum(key, castagnoli)&0x3ff
}

// TagSlot returns the slot a tag carries.
func TagSlot(tag uint32) int { return int(tag >> 10) }
