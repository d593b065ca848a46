// Package object is how a value that is not a string is one value every
// scheme can store: its encoding, and the type of a stored value.
//
// A memgest key holds one value whatever its scheme; the kinds replicate,
// split and pack bytes without knowing what they mean. A hash is encoded
// into such a value behind an 8-byte header no string may start with (the
// commands refuse a string value that does, IsReserved), so the type
// travels with the value through every scheme, move, recovery and rebuild
// with nothing added to their metadata (docs/decisions/0012-value-types.md).
//
// Hand-written: the encoding is memgest's own; no library offers it.
package object

import "bytes"

// Type is a value's Redis type.
type Type uint8

const (
	// String is any value without a type header.
	String Type = iota
	// Hash is a hash object (hash.go).
	Hash
)

// String is the type's name as TYPE answers it.
func (t Type) String() string {
	if t == Hash {
		return "hash"
	}
	return "string"
}

// header starts every typed value: a zero byte and 0xff (rare at the head
// of text and of common binary formats), "mgo", the type byte at
// typeAt and the format version.
var header = [headerLen]byte{0x00, 0xff, 'm', 'g', 'o', 0, 0x00, 0x01}

const (
	headerLen = 8
	typeAt    = 5
)

// TypeOf returns the type of a stored value.
func TypeOf(v []byte) Type {
	if !IsReserved(v) {
		return String
	}
	return Type(v[typeAt])
}

// IsReserved says whether v starts like a typed value: a string that does
// is refused (it would read as another type).
func IsReserved(v []byte) bool {
	return len(v) >= headerLen && bytes.Equal(v[:typeAt], header[:typeAt]) &&
		bytes.Equal(v[typeAt+1:headerLen], header[typeAt+1:])
}

// appendHeader starts a value of type t.
func appendHeader(b []byte, t Type) []byte {
	h := header
	h[typeAt] = byte(t)
	return append(b, h[:]...)
}
