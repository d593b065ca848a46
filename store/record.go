package store

import (
	"encoding/binary"
	"math/bits"
)

// Meta is the per-record metadata, stored inline in the record header.
type Meta struct {
	Version  uint64 // assigned by the coordinator; 0 is legal
	ExpireAt int64  // unix milliseconds; 0 = no expiry. The store never expires by itself.
	Scheme   uint16 // scheme catalogue id, opaque to the store
	Flags    uint8  // opaque to the store
	Aux      uint32 // opaque to the store (e.g. a shard index or a logical length)
}

// A record is laid out in a slab as
//
//	descriptor   1 byte, below
//	Version      0-6 or 8 bytes, little-endian, leading zero bytes dropped
//	ExpireAt     if present: 6 bytes if it fits in 48 bits (any date within
//	             4000 years of 1970 in milliseconds), else 8
//	Scheme       2 bytes if present
//	Flags        1 byte if present
//	Aux          4 bytes if present
//	key field    uvarint: key length<<1, | 1 if the value is large
//	value field  uvarint: the value's length if inline, its large id if not
//	key
//	value        inline values only
//
// The descriptor says which fields are present: bits 0-2 the bytes of
// Version (7 meaning 8: a 7-byte version is stored in 8), bit 3 a 6-byte
// ExpireAt, bit 4 ExpireAt present, bits 5-7 Scheme, Flags, Aux present.
//
// Zero fields take no space, so the record the coordinator writes (a
// full-width version, a scheme and a checksum in Aux; key under 64 bytes,
// value under 128) has a 17-byte header, one with every field set 24 bytes;
// the worst case is 32 bytes. Records are not aligned: every field is read
// byte-wise, and alignment padding would cost more than it saves.
const (
	descVersion = 0x07
	descShortEx = 1 << 3
	descExpire  = 1 << 4
	descScheme  = 1 << 5
	descFlags   = 1 << 6
	descAux     = 1 << 7
)

// versionBytes[code] is how many bytes a version with descriptor code takes.
var versionBytes = [8]int{0, 1, 2, 3, 4, 5, 6, 8}

// metaBytes[d] is how many bytes follow descriptor d before the key field.
var metaBytes = func() (t [256]uint8) {
	for d := range t {
		n := versionBytes[d&descVersion] + expireBytes(byte(d))
		for _, f := range [...]struct{ bit, size int }{{descScheme, 2}, {descFlags, 1}, {descAux, 4}} {
			if d&f.bit != 0 {
				n += f.size
			}
		}
		t[d] = uint8(n)
	}
	return t
}()

func expireBytes(d byte) int {
	switch {
	case d&descExpire == 0:
		return 0
	case d&descShortEx != 0:
		return 6
	}
	return 8
}

func descriptor(m *Meta) byte {
	d := byte((bits.Len64(m.Version) + 7) / 8)
	if d == 8 {
		d = 7
	}
	if m.ExpireAt != 0 {
		d |= descExpire
		if m.ExpireAt == m.ExpireAt<<16>>16 {
			d |= descShortEx
		}
	}
	if m.Scheme != 0 {
		d |= descScheme
	}
	if m.Flags != 0 {
		d |= descFlags
	}
	if m.Aux != 0 {
		d |= descAux
	}
	return d
}

// metaSize is the encoded size of m, descriptor included.
func metaSize(m *Meta) int { return 1 + int(metaBytes[descriptor(m)]) }

func putMeta(b []byte, m *Meta) int {
	d := descriptor(m)
	b[0] = d
	n := 1
	for i := range versionBytes[d&descVersion] {
		b[n+i] = byte(m.Version >> (8 * i))
	}
	n += versionBytes[d&descVersion]
	for i := range expireBytes(d) {
		b[n+i] = byte(m.ExpireAt >> (8 * i))
	}
	n += expireBytes(d)
	if d&descScheme != 0 {
		binary.LittleEndian.PutUint16(b[n:], m.Scheme)
		n += 2
	}
	if d&descFlags != 0 {
		b[n] = m.Flags
		n++
	}
	if d&descAux != 0 {
		binary.LittleEndian.PutUint32(b[n:], m.Aux)
		n += 4
	}
	return n
}

func getMeta(b []byte) (m Meta) {
	d := b[0]
	vl := versionBytes[d&descVersion]
	for i := vl; i > 0; i-- {
		m.Version = m.Version<<8 | uint64(b[i])
	}
	n := 1 + vl
	m.ExpireAt = readExpire(b[n:], d)
	n += expireBytes(d)
	if d&descScheme != 0 {
		m.Scheme = binary.LittleEndian.Uint16(b[n:])
		n += 2
	}
	if d&descFlags != 0 {
		m.Flags = b[n]
		n++
	}
	if d&descAux != 0 {
		m.Aux = binary.LittleEndian.Uint32(b[n:])
	}
	return m
}

// readExpire reads an ExpireAt of expireBytes(d) bytes, sign-extending the
// short form.
func readExpire(b []byte, d byte) int64 {
	n := expireBytes(d)
	if n == 0 {
		return 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	shift := 64 - 8*n
	return int64(v<<shift) >> shift
}

// expireAt reads only ExpireAt, for the expiry sampler.
func expireAt(b []byte) int64 {
	return readExpire(b[1+versionBytes[b[0]&descVersion]:], b[0])
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

func uvarint(b []byte) (uint64, int) {
	if b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return binary.Uvarint(b)
}

// valRef says where a record's value is: n bytes inline after the key, or
// large value number n of the shard.
type valRef struct {
	large bool
	n     uint64
}

func (v valRef) inlineLen() int {
	if v.large {
		return 0
	}
	return int(v.n)
}

// rec is a parsed view of a record in a slab.
type rec struct {
	b        []byte // from the record's first byte to the end of its segment
	keyStart int
	keyLen   int
	val      valRef
}

func parseRec(b []byte) rec {
	n := 1 + int(metaBytes[b[0]])
	kf, w := uvarint(b[n:])
	n += w
	v, w := uvarint(b[n:])
	return rec{b: b, keyStart: n + w, keyLen: int(kf >> 1), val: valRef{large: kf&1 != 0, n: v}}
}

func (r rec) key() []byte    { return r.b[r.keyStart : r.keyStart+r.keyLen] }
func (r rec) large() bool    { return r.val.large }
func (r rec) largeID() int   { return int(r.val.n) }
func (r rec) inlineLen() int { return r.val.inlineLen() }
func (r rec) size() int      { return r.keyStart + r.keyLen + r.inlineLen() }
func (r rec) meta() Meta     { return getMeta(r.b) }
func (r rec) inline() []byte { return r.b[r.keyStart+r.keyLen : r.size()] }

func keyField(keyLen int, v valRef) uint64 {
	f := uint64(keyLen) << 1
	if v.large {
		f |= 1
	}
	return f
}

// recSize is the encoded size of a record.
func recSize(m *Meta, keyLen int, v valRef) int {
	return metaSize(m) + uvarintLen(keyField(keyLen, v)) + uvarintLen(v.n) + keyLen + v.inlineLen()
}

// encodeRec writes a record; inline is the value if v is inline.
func encodeRec(b []byte, m *Meta, key []byte, v valRef, inline []byte) {
	n := putMeta(b, m)
	n += binary.PutUvarint(b[n:], keyField(len(key), v))
	n += binary.PutUvarint(b[n:], v.n)
	n += copy(b[n:], key)
	copy(b[n:], inline)
}
