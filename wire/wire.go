// Package wire is the codec of memgest's peer payloads: fixed-width and
// length-prefixed fields appended to a byte slice (Enc), read back with a
// sticky error (Dec), lists of items (EncodeList, DecodeList), and Spool,
// which builds a payload whose large byte strings go out from where they
// lie rather than copied in. It is a leaf: the node and the scheme kinds
// encode their messages with it. Hand-written, because the frames need
// exactly this layout and no allocation per field, which encoding/gob and
// protobuf libraries do not give.
package wire

import (
	"encoding/binary"
	"errors"

	"github.com/memgest/memgest/internal/bigcopy"
)

// ErrMalformed is returned for a peer payload that does not decode; the
// request it came in changes nothing.
var ErrMalformed = errors.New("wire: malformed peer payload")

// Enc appends fixed-width and length-prefixed fields to a peer payload.
type Enc []byte

// U8 appends a byte.
func (e Enc) U8(v uint8) Enc { return append(e, v) }

// U16 appends v big-endian.
func (e Enc) U16(v uint16) Enc { return binary.BigEndian.AppendUint16(e, v) }

// U32 appends v big-endian.
func (e Enc) U32(v uint32) Enc { return binary.BigEndian.AppendUint32(e, v) }

// U64 appends v big-endian.
func (e Enc) U64(v uint64) Enc { return binary.BigEndian.AppendUint64(e, v) }

// Flag appends b as one byte, 1 or 0 (Dec.Flag reads it).
func (e Enc) Flag(b bool) Enc {
	if b {
		return append(e, 1)
	}
	return append(e, 0)
}

// I64 appends v as its two's-complement U64.
func (e Enc) I64(v int64) Enc { return e.U64(uint64(v)) }

// Bytes appends b with a uvarint length, copying a large b in steps
// (internal/bigcopy).
func (e Enc) Bytes(b []byte) Enc {
	e = e.Reserve(UvarintLen(uint64(len(b))) + len(b))
	return bigcopy.Append(binary.AppendUvarint(e, uint64(len(b))), b)
}

// Reserve returns e with room for n more bytes, at least doubling its
// capacity when it must grow. Plain append grows a large slice by about a
// quarter at a time, so a 1 MiB frame of pieces built from a small one was
// copied some thirty times over (a fifth of a rebuild's CPU, profiled).
func (e Enc) Reserve(n int) Enc {
	if cap(e)-len(e) >= n {
		return e
	}
	grown := make(Enc, len(e), max(2*cap(e), len(e)+n))
	copy(grown, e)
	return grown
}

// Spool builds a peer payload whose large byte strings are not copied
// into it: each goes out from where it is, as a segment of the frame's
// Tail (transport.Frame), so a 512 MiB value is never copied to be sent.
// Its bytes must not change until the frame is sent.
type Spool struct {
	segs [][]byte // sealed segments, in order: encoded bytes, large strings
	Cur  Enc      // encoded bytes after the last sealed segment
}

// SpoolMin is the least length of a byte string a Spool refers to rather
// than copies; the transport copies shorter segments into its batch.
const SpoolMin = 64 << 10

// Bytes appends a length-prefixed byte string, referring to it when large.
func (s *Spool) Bytes(b []byte) {
	if len(b) < SpoolMin {
		s.Cur = s.Cur.Bytes(b)
		return
	}
	s.Cur = binary.AppendUvarint(s.Cur, uint64(len(b)))
	s.segs = append(s.segs, s.Cur, b)
	s.Cur = s.Cur[len(s.Cur):] // later bytes go after the sealed ones
}

// Add appends o's payload, without its first skip bytes.
func (s *Spool) Add(o *Spool, skip int) {
	segs := o.All()
	for i, seg := range segs {
		if i == 0 {
			seg = seg[skip:]
		}
		if len(seg) >= SpoolMin && i%2 == 1 {
			s.segs = append(s.segs, s.Cur, seg)
			s.Cur = s.Cur[len(s.Cur):]
			continue
		}
		s.Cur = append(s.Cur, seg...)
	}
}

// All is the payload's segments: the sealed ones, then the bytes after.
func (s *Spool) All() [][]byte { return append(s.segs[:len(s.segs):len(s.segs)], s.Cur) }

// Frame splits the payload into a Frame's Payload and Tail.
func (s *Spool) Frame() (payload []byte, tail [][]byte) {
	all := s.All()
	return all[0], all[1:]
}

// Size is the payload's length.
func (s *Spool) Size() int {
	n := len(s.Cur)
	for _, seg := range s.segs {
		n += len(seg)
	}
	return n
}

// Str appends s as Bytes does.
func (e Enc) Str(s string) Enc { return append(binary.AppendUvarint(e, uint64(len(s))), s...) }

// EncodeList is a payload of a u32 count and the items back to back, each
// appended by encode.
func EncodeList[T any](items []T, encode func(Enc, T) Enc) Enc {
	e := Enc(nil).U32(uint32(len(items)))
	for _, x := range items {
		e = encode(e, x)
	}
	return e
}

// DecodeList reads what EncodeList wrote, each item with read. A count
// larger than the payload (every item takes a byte or more) is malformed
// before anything is allocated, and the whole payload must be read.
func DecodeList[T any](b []byte, read func(*Dec) T) ([]T, error) {
	d := NewDec(b)
	count := int(d.U32())
	if count > len(b) {
		return nil, ErrMalformed
	}
	out := make([]T, 0, min(count, 1024))
	for i := 0; i < count && d.err == nil; i++ {
		out = append(out, read(&d))
	}
	return out, d.Done()
}

// Dec reads what Enc wrote; the first failure sticks and every later read
// returns zero values, so callers check err once at the end.
type Dec struct {
	b   []byte
	err error
}

// NewDec reads b.
func NewDec(b []byte) Dec { return Dec{b: b} }

// Err is the first failure, if any.
func (d *Dec) Err() error { return d.err }

// Fail marks the payload malformed (a field the caller found out of
// range), unless it already failed.
func (d *Dec) Fail() {
	if d.err == nil {
		d.err = ErrMalformed
	}
}

// Rest is the bytes not read yet.
func (d *Dec) Rest() []byte { return d.b }

// Take reads the next n bytes (b's own, not a copy).
func (d *Dec) Take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = ErrMalformed
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// U8 reads a byte.
func (d *Dec) U8() uint8 {
	if b := d.Take(1); b != nil {
		return b[0]
	}
	return 0
}

// U16 reads a big-endian uint16.
func (d *Dec) U16() uint16 {
	if b := d.Take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

// U32 reads a big-endian uint32.
func (d *Dec) U32() uint32 {
	if b := d.Take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// U64 reads a big-endian uint64.
func (d *Dec) U64() uint64 {
	if b := d.Take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// I64 reads what Enc.I64 wrote.
func (d *Dec) I64() int64 { return int64(d.U64()) }

// Flag reads a boolean byte, refusing anything but 0 and 1 so that every
// payload has exactly one encoding.
func (d *Dec) Flag() bool {
	v := d.U8()
	if v > 1 {
		d.err = ErrMalformed
	}
	return v == 1
}

// Bytes reads what Enc.Bytes wrote (b's own bytes, not a copy), refusing
// a length in other than its shortest encoding.
func (d *Dec) Bytes() []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b)
	// A length must use its shortest encoding: one payload, one encoding.
	if k <= 0 || k != UvarintLen(n) || n > uint64(len(d.b)-k) {
		d.err = ErrMalformed
		return nil
	}
	d.b = d.b[k:]
	return d.Take(int(n))
}

// Str reads what Enc.Str wrote.
func (d *Dec) Str() string { return string(d.Bytes()) }

// Done reports the sticky error, or ErrMalformed if bytes are left over.
func (d *Dec) Done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = ErrMalformed
	}
	return d.err
}

// UvarintLen is how many bytes the uvarint encoding of n takes.
func UvarintLen(n uint64) int {
	var tmp [binary.MaxVarintLen64]byte
	return binary.PutUvarint(tmp[:], n)
}
