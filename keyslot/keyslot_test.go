package keyslot

import (
	"math/rand/v2"
	"testing"
)

// Values from Redis Cluster (CLUSTER KEYSLOT, and the Redis Cluster
// specification's CRC16 reference: "123456789" → 0x31C3).
func TestSlotKnownRedisValues(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"somekey", 11058},
		{"foo{hash_tag}", 2515},
		{"", 0},
	} {
		if got := Of([]byte(tc.key)); got != tc.slot {
			t.Errorf("Of(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
}

// The hash tag rules of the Redis Cluster specification ("Hash tags").
func TestSlotHashTags(t *testing.T) {
	for _, tc := range []struct {
		key, hashed string
	}{
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"}, // empty first tag: whole key
		{"foo{{bar}}zap", "{bar"},    // first '{', first '}' after it
		{"foo{bar}{zap}", "bar"},     // only the first tag counts
		{"{}", "{}"},                 // empty tag
		{"{", "{"},                   // no closing brace
		{"}{a}", "a"},                // '}' before the first '{' is ignored
		{"a{b", "a{b"},               // unclosed
		{"x{\x00}y", "\x00"},         // binary tags are fine
		{"{user1000}", "user1000"},   // whole key is a tag
		{"abc{def}ghi{jkl}", "def"},  // first of two
		{"{{}}", "{"},                // tag is "{"
		{"no tags at all", "no tags at all"},
	} {
		if got := string(hashTag([]byte(tc.key))); got != tc.hashed {
			t.Errorf("hashTag(%q) = %q, want %q", tc.key, got, tc.hashed)
		}
		if Of([]byte(tc.key)) != Of([]byte(tc.hashed)) {
			t.Errorf("Of(%q) != Of(%q)", tc.key, tc.hashed)
		}
	}
}

// crc16Slow is the bit-at-a-time CRC16/XMODEM definition, the reference for
// the table-driven crc16.
func crc16Slow(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c ^= uint16(x) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
	}
	return c
}

func TestCRC16MatchesBitwiseReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if crc16(b) != crc16Slow(b) {
			t.Fatalf("crc16(%x) = %#x, reference %#x", b, crc16(b), crc16Slow(b))
		}
		if s := Of(b); s < 0 || s >= Count {
			t.Fatalf("Of(%x) = %d out of range", b, s)
		}
	}
}

func BenchmarkSlot(b *testing.B) {
	key := []byte("user:1000:profile")
	for b.Loop() {
		Of(key)
	}
}
