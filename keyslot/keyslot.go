// Package keyslot maps keys to Redis Cluster hash slots. It is a leaf: the
// control plane, the node and the scheme packages all route by it.
package keyslot

import "bytes"

// Count is the number of hash slots, as in Redis Cluster.
const Count = 16384

// Of maps a key to its hash slot exactly as Redis Cluster does, so that
// cluster-aware Redis clients route memgest keys by themselves: CRC16
// (XMODEM) of the key modulo 16384, where a non-empty `{hash tag}` (the bytes
// between the first '{' and the first '}' after it) replaces the key.
func Of(key []byte) int {
	return int(crc16(hashTag(key)) & (Count - 1))
}

// hashTag returns the part of key that is hashed: the content of the first
// {...} if it is non-empty, else the whole key ("foo{}{bar}" hashes whole).
func hashTag(key []byte) []byte {
	open := bytes.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := bytes.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// crc16Table is CRC16-CCITT/XMODEM (polynomial 0x1021, init 0), the
// variant Redis Cluster uses (Redis src/crc16.c).
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crc16Table[byte(c>>8)^x]
	}
	return c
}
