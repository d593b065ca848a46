package server

import (
	"encoding/binary"
	"errors"

	"github.com/memgest/memgest/internal/bigcopy"
)

// errMalformed is returned for a peer payload that does not decode; the
// request it came in changes nothing.
var errMalformed = errors.New("server: malformed peer payload")

// enc appends fixed-width and length-prefixed fields to a peer payload.
type enc []byte

func (e enc) u8(v uint8) enc   { return append(e, v) }
func (e enc) u16(v uint16) enc { return binary.BigEndian.AppendUint16(e, v) }
func (e enc) u32(v uint32) enc { return binary.BigEndian.AppendUint32(e, v) }
func (e enc) u64(v uint64) enc { return binary.BigEndian.AppendUint64(e, v) }
func (e enc) i64(v int64) enc  { return e.u64(uint64(v)) }
func (e enc) bytes(b []byte) enc {
	e = e.reserve(uvarintLen(uint64(len(b))) + len(b))
	return bigcopy.Append(binary.AppendUvarint(e, uint64(len(b))), b)
}

// reserve returns e with room for n more bytes, at least doubling its
// capacity when it must grow. Plain append grows a large slice by about a
// quarter at a time, so a 1 MiB frame of pieces built from a small one was
// copied some thirty times over (a fifth of a rebuild's CPU, profiled).
func (e enc) reserve(n int) enc {
	if cap(e)-len(e) >= n {
		return e
	}
	grown := make(enc, len(e), max(2*cap(e), len(e)+n))
	copy(grown, e)
	return grown
}

// spool builds a peer payload whose large byte strings are not copied
// into it: each goes out from where it is, as a segment of the frame's
// Tail (transport.Frame), so a 512 MiB value is never copied to be sent.
// Its bytes must not change until the frame is sent.
type spool struct {
	segs [][]byte // sealed segments, in order: encoded bytes, large strings
	cur  enc      // encoded bytes after the last sealed segment
}

// spoolMin is the least length of a byte string a spool refers to rather
// than copies; the transport copies shorter segments into its batch.
const spoolMin = 64 << 10

// bytes appends a length-prefixed byte string, referring to it when large.
func (s *spool) bytes(b []byte) {
	if len(b) < spoolMin {
		s.cur = s.cur.bytes(b)
		return
	}
	s.cur = binary.AppendUvarint(s.cur, uint64(len(b)))
	s.segs = append(s.segs, s.cur, b)
	s.cur = s.cur[len(s.cur):] // later bytes go after the sealed ones
}

// add appends o's payload, without its first skip bytes.
func (s *spool) add(o *spool, skip int) {
	segs := o.all()
	for i, seg := range segs {
		if i == 0 {
			seg = seg[skip:]
		}
		if len(seg) >= spoolMin && i%2 == 1 {
			s.segs = append(s.segs, s.cur, seg)
			s.cur = s.cur[len(s.cur):]
			continue
		}
		s.cur = append(s.cur, seg...)
	}
}

// all is the payload's segments: the sealed ones, then the bytes after.
func (s *spool) all() [][]byte { return append(s.segs[:len(s.segs):len(s.segs)], s.cur) }

// frame splits the payload into a frame's Payload and Tail.
func (s *spool) frame() (payload []byte, tail [][]byte) {
	all := s.all()
	return all[0], all[1:]
}

// size is the payload's length.
func (s *spool) size() int {
	n := len(s.cur)
	for _, seg := range s.segs {
		n += len(seg)
	}
	return n
}

func (e enc) str(s string) enc { return append(binary.AppendUvarint(e, uint64(len(s))), s...) }

// encodeList is a payload of a u32 count and the items back to back.
func encodeList[T interface{ encode(enc) enc }](items []T) enc {
	e := enc(nil).u32(uint32(len(items)))
	for _, x := range items {
		e = x.encode(e)
	}
	return e
}

// decodeList reads what encodeList wrote, each item with read. A count
// larger than the payload (every item takes a byte or more) is malformed
// before anything is allocated, and the whole payload must be read.
func decodeList[T any](b []byte, read func(*dec) T) ([]T, error) {
	d := dec{b: b}
	count := int(d.u32())
	if count > len(b) {
		return nil, errMalformed
	}
	out := make([]T, 0, min(count, 1024))
	for i := 0; i < count && d.err == nil; i++ {
		out = append(out, read(&d))
	}
	return out, d.done()
}

// dec reads what enc wrote; the first failure sticks and every later read
// returns zero values, so callers check err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = errMalformed
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}
func (d *dec) u16() uint16 {
	if b := d.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}
func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}
func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}
func (d *dec) i64() int64 { return int64(d.u64()) }

// flag reads a boolean byte, refusing anything but 0 and 1 so that every
// payload has exactly one encoding.
func (d *dec) flag() bool {
	v := d.u8()
	if v > 1 {
		d.err = errMalformed
	}
	return v == 1
}

func (d *dec) bytes() []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b)
	// A length must use its shortest encoding: one payload, one encoding.
	if k <= 0 || k != uvarintLen(n) || n > uint64(len(d.b)-k) {
		d.err = errMalformed
		return nil
	}
	d.b = d.b[k:]
	return d.take(int(n))
}
func (d *dec) str() string { return string(d.bytes()) }

// done reports the sticky error, or errMalformed if bytes are left over.
func (d *dec) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errMalformed
	}
	return d.err
}

func uvarintLen(n uint64) int {
	var tmp [binary.MaxVarintLen64]byte
	return binary.PutUvarint(tmp[:], n)
}
