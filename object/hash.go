package object

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// A hash is encoded as
//
//	header    8 bytes, type Hash
//	count     uvarint: the number of fields
//	fields    count times: uvarint length, name, uvarint length, value
//
// in the order fields were first set (HSET appends a new field, HDEL
// closes the gap), as Redis keeps a small hash. Replacing a field's value
// by one of the same length changes only its bytes, so a packed scheme
// updates such a hash in place with a parity delta of those bytes.

// ErrCorrupt is a typed value whose encoding does not parse.
var ErrCorrupt = errors.New("object: corrupt value")

// Field is one field of a hash; Name and Value may alias the encoded value.
type Field struct {
	Name, Value []byte
}

// HashObject is a decoded hash: its fields in encoding order.
type HashObject []Field

// DecodeHash parses a hash value; its fields alias v.
func DecodeHash(v []byte) (HashObject, error) {
	count, rest, err := hashBody(v)
	if err != nil {
		return nil, err
	}
	h := make(HashObject, 0, min(count, uint64(len(rest)/2)))
	for range count {
		var f Field
		if f.Name, rest, err = lenPrefixed(rest); err == nil {
			f.Value, rest, err = lenPrefixed(rest)
		}
		if err != nil {
			return nil, err
		}
		h = append(h, f)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last field", ErrCorrupt, len(rest))
	}
	return h, nil
}

// HashGet finds field name in a hash value without decoding the rest.
func HashGet(v, name []byte) (value []byte, ok bool, err error) {
	count, rest, err := hashBody(v)
	if err != nil {
		return nil, false, err
	}
	for range count {
		var f, val []byte
		if f, rest, err = lenPrefixed(rest); err == nil {
			val, rest, err = lenPrefixed(rest)
		}
		if err != nil {
			return nil, false, err
		}
		if bytes.Equal(f, name) {
			return val, true, nil
		}
	}
	return nil, false, nil
}

// HashLen is the number of fields of a hash value.
func HashLen(v []byte) (int, error) {
	count, _, err := hashBody(v)
	return int(count), err
}

// hashBody checks the header and reads the count.
func hashBody(v []byte) (uint64, []byte, error) {
	if TypeOf(v) != Hash {
		return 0, nil, fmt.Errorf("%w: not a hash", ErrCorrupt)
	}
	rest := v[headerLen:]
	count, n := binary.Uvarint(rest)
	if n <= 0 || count > uint64(len(rest)) {
		return 0, nil, fmt.Errorf("%w: bad field count", ErrCorrupt)
	}
	return count, rest[n:], nil
}

// lenPrefixed reads a uvarint length and that many bytes.
func lenPrefixed(b []byte) (field, rest []byte, err error) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, fmt.Errorf("%w: truncated field", ErrCorrupt)
	}
	end := n + int(l)
	return b[n:end:end], b[end:], nil
}

// Index is the position of field name, or -1.
func (h HashObject) Index(name []byte) int {
	for i, f := range h {
		if bytes.Equal(f.Name, name) {
			return i
		}
	}
	return -1
}

// Get returns the value of field name.
func (h HashObject) Get(name []byte) ([]byte, bool) {
	if i := h.Index(name); i >= 0 {
		return h[i].Value, true
	}
	return nil, false
}

// Set sets field name to value, appending a new field; it says whether
// the field is new.
func (h *HashObject) Set(name, value []byte) bool {
	if i := h.Index(name); i >= 0 {
		(*h)[i].Value = value
		return false
	}
	*h = append(*h, Field{Name: name, Value: value})
	return true
}

// Del removes field name and says whether it was there.
func (h *HashObject) Del(name []byte) bool {
	i := h.Index(name)
	if i < 0 {
		return false
	}
	*h = append((*h)[:i], (*h)[i+1:]...)
	return true
}

// EncodedLen is the length of h's encoding.
func (h HashObject) EncodedLen() int {
	n := headerLen + uvarintLen(uint64(len(h)))
	for _, f := range h {
		n += uvarintLen(uint64(len(f.Name))) + len(f.Name) + uvarintLen(uint64(len(f.Value))) + len(f.Value)
	}
	return n
}

// Encode returns h's value: a fresh slice, never aliasing the fields.
func (h HashObject) Encode() []byte {
	b := make([]byte, 0, h.EncodedLen())
	b = appendHeader(b, Hash)
	b = binary.AppendUvarint(b, uint64(len(h)))
	for _, f := range h {
		b = binary.AppendUvarint(b, uint64(len(f.Name)))
		b = append(b, f.Name...)
		b = binary.AppendUvarint(b, uint64(len(f.Value)))
		b = append(b, f.Value...)
	}
	return b
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
