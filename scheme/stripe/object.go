// Package stripe is the stripe:K+M scheme kind (MemEC §3.2
// "all-encoding"; DESIGN.md §2; decisions 0003 and 0007): whole small
// objects (a header, the key and the value) packed into fixed-size data
// chunks, the unit erasure coded across nodes.
//
// It has two layers. The chunk layer is pure, with no I/O and no locks: it
// lays objects out in a chunk, indexes them, and reports every change to a
// chunk as an Update for the parity holders, numbered so that holders
// apply each exactly once and in the order that matters (Data, the
// coordinator's side; Parity, a parity holder's, which folds updates into
// parity with ec.UpdateParity). The node layer is Engine: a node's state
// for every stripe scheme and what it does with it (engine.go, send.go,
// recover.go, pending.go, rebuild.go, verify.go): staging writes, sending
// updates to the parity holders in groups and answering them as a holder,
// recovering a failed coordinator's chunks, restoring deferred chunks,
// rebuilding lists, verifying stripes and picking compaction's victims.
// It reaches other nodes and the node's own write path only through Host,
// which the node implements; the bound kind (New, kind.go) is what the
// coordinator core sees.
//
// Everything here is hand-written: no library packs objects into chunks or
// sequences parity updates. The Reed-Solomon arithmetic is package ec's
// (klauspost/reedsolomon).
//
// # Objects
//
// An object is laid out as
//
//	flags u8 | version u64 | crc u32 | key length uvarint |
//	value length uvarint | [expireAt i64] |
//	[fragment offset uvarint | total length uvarint] | key | value
//
// crc is the CRC32C of every other byte of the object (DESIGN.md §4
// "Corruption", KVMD §3.2): every path that reads an object back — a
// GET, a degraded decode, recovery, the rebuild, a move, the batch GC and
// the scrub — checks it (Verify, ParseChecked), so a flipped bit in a
// chunk, a parity chunk, a replica copy or a batch piece is found before
// its bytes are served. It costs 4 bytes an object.
//
// Lengths are varints, so neither key nor value has an 8- or 24-bit limit
// (MemEC's 1-byte key and 3-byte value sizes). The flags byte of a stored
// object is never zero; free space and deleted objects are all zeros. So a
// chunk is read from start to end by skipping zero bytes and parsing a header
// at each non-zero one, and a chunk that was never written, or whose objects
// were all deleted, is the zero chunk that parity already treats as absent
// ("virtual zero padding", KVMD §3.2.4).
//
// An object larger than a chunk is stored as fragments: each is an object
// with the same key and version and the fragment flag, holding a slice of
// the value at an offset, with the value's total length (MemEC §3.2).
package stripe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Object flags: the first byte of every stored object.
const (
	flagObject   byte = 1 << 0 // set in every object, so its first byte is never zero
	flagExpiry   byte = 1 << 1 // an expiry time follows the lengths
	flagFragment byte = 1 << 2 // a fragment of a larger value: offset and total follow
	knownFlags        = flagObject | flagExpiry | flagFragment
)

// fixedHeader is the flags byte, the version and the checksum.
const fixedHeader = 1 + 8 + 4

// crcAt is where an object's checksum lies.
const crcAt = 1 + 8

// ErrCorrupt is returned for bytes that do not parse as an object.
var ErrCorrupt = errors.New("stripe: malformed object")

// ErrChecksum is returned for an object whose bytes fail its checksum.
var ErrChecksum = errors.New("stripe: object fails its checksum")

// Object is one object, or one fragment of a large one.
type Object struct {
	Key     []byte
	Value   []byte // the whole value, or the fragment's slice of it
	Version uint64
	// ExpireAt is the expiry in Unix milliseconds; 0 for none.
	ExpireAt int64
	// Fragment says Value is the slice at Offset of a value of Total bytes.
	Fragment      bool
	Offset, Total int
	// CRC is the checksum stored with the object (Parse), which AppendTo
	// computes afresh.
	CRC uint32
}

// EncodedLen is how many bytes o takes in a chunk.
func (o *Object) EncodedLen() int {
	n := fixedHeader + uvarintLen(uint64(len(o.Key))) + uvarintLen(uint64(len(o.Value)))
	if o.ExpireAt != 0 {
		n += 8
	}
	if o.Fragment {
		n += uvarintLen(uint64(o.Offset)) + uvarintLen(uint64(o.Total))
	}
	return n + len(o.Key) + len(o.Value)
}

// AppendTo appends o's encoding to dst.
func (o *Object) AppendTo(dst []byte) []byte {
	flags := flagObject
	if o.ExpireAt != 0 {
		flags |= flagExpiry
	}
	if o.Fragment {
		flags |= flagFragment
	}
	start := len(dst)
	dst = append(dst, flags)
	dst = binary.BigEndian.AppendUint64(dst, o.Version)
	dst = append(dst, 0, 0, 0, 0) // the checksum, below
	dst = binary.AppendUvarint(dst, uint64(len(o.Key)))
	dst = binary.AppendUvarint(dst, uint64(len(o.Value)))
	if o.ExpireAt != 0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(o.ExpireAt))
	}
	if o.Fragment {
		dst = binary.AppendUvarint(dst, uint64(o.Offset))
		dst = binary.AppendUvarint(dst, uint64(o.Total))
	}
	dst = append(dst, o.Key...)
	dst = append(dst, o.Value...)
	binary.BigEndian.PutUint32(dst[start+crcAt:], checksum(dst[start:]))
	return dst
}

// checksum is the CRC32C of an object's encoding b, its checksum field
// left out.
func checksum(b []byte) uint32 {
	return crc32.Update(crc32.Checksum(b[:crcAt], castagnoli), castagnoli, b[fixedHeader:])
}

// Verify checks that b, one object's whole encoding, matches its
// checksum.
func Verify(b []byte) error {
	if len(b) < fixedHeader {
		return ErrCorrupt
	}
	if binary.BigEndian.Uint32(b[crcAt:]) != checksum(b) {
		return ErrChecksum
	}
	return nil
}

// ParseChecked is Parse that also checks the object's checksum: the
// parse of every read that serves or keeps an object's bytes.
func ParseChecked(b []byte) (Object, int, error) {
	o, n, err := Parse(b)
	if err == nil {
		err = Verify(b[:n])
	}
	if err != nil {
		return Object{}, 0, err
	}
	return o, n, nil
}

// Parse reads the object at the start of b. Key and Value alias b. It
// returns the object and its encoded length.
func Parse(b []byte) (Object, int, error) {
	o, keyLen, valueLen, p, err := parseHeader(b)
	if err != nil {
		return Object{}, 0, err
	}
	if uint64(len(b)-p) < keyLen || uint64(len(b)-p)-keyLen < valueLen {
		return Object{}, 0, ErrCorrupt
	}
	end := p + int(keyLen) + int(valueLen)
	o.Key, o.Value = b[p:p+int(keyLen):p+int(keyLen)], b[p+int(keyLen):end:end]
	return o, end, nil
}

// parseHeader reads the header at the start of b (everything before the
// key): the object without key and value, their lengths, and the
// header's length.
func parseHeader(b []byte) (o Object, keyLen, valueLen uint64, p int, err error) {
	if len(b) < fixedHeader || b[0]&flagObject == 0 || b[0]&^knownFlags != 0 {
		return Object{}, 0, 0, 0, ErrCorrupt
	}
	o = Object{Version: binary.BigEndian.Uint64(b[1:crcAt]), CRC: binary.BigEndian.Uint32(b[crcAt:fixedHeader])}
	flags, p := b[0], fixedHeader
	keyLen, p, ok := uvarintAt(b, p)
	valueLen, p, ok2 := uvarintAt(b, p)
	if !ok || !ok2 {
		return Object{}, 0, 0, 0, ErrCorrupt
	}
	if flags&flagExpiry != 0 {
		if len(b)-p < 8 {
			return Object{}, 0, 0, 0, ErrCorrupt
		}
		o.ExpireAt = int64(binary.BigEndian.Uint64(b[p:]))
		if o.ExpireAt == 0 {
			return Object{}, 0, 0, 0, ErrCorrupt // 0 is no expiry, never stored
		}
		p += 8
	}
	if flags&flagFragment != 0 {
		if p, ok = o.parseFragment(b, p, valueLen); !ok {
			return Object{}, 0, 0, 0, ErrCorrupt
		}
	}
	return o, keyLen, valueLen, p, nil
}

// parseHead reads an object's head, its encoding cut before the value
// (BatchData's heads of objects kept elsewhere): the object with Value
// nil, and the value's length.
func parseHead(b []byte) (Object, int, bool) {
	o, keyLen, valueLen, p, err := parseHeader(b)
	if err != nil || uint64(len(b)-p) != keyLen || valueLen > uint64(maxInt) {
		return Object{}, 0, false
	}
	o.Key = b[p:len(b):len(b)]
	return o, int(valueLen), true
}

// parseFragment reads a fragment's offset and total at p, checking that
// the fragment's valueLen bytes lie within the total.
func (o *Object) parseFragment(b []byte, p int, valueLen uint64) (int, bool) {
	off, p, ok := uvarintAt(b, p)
	total, p, ok2 := uvarintAt(b, p)
	if !ok || !ok2 || off > total || total-off < valueLen || total > uint64(maxInt) {
		return p, false
	}
	o.Fragment, o.Offset, o.Total = true, int(off), int(total)
	return p, true
}

const maxInt = int(^uint(0) >> 1)

// uvarintAt reads a uvarint at b[p:] and returns it and the position after.
// Only the shortest encoding is accepted, so that every object has one
// encoding and parses back to the bytes it came from.
func uvarintAt(b []byte, p int) (uint64, int, bool) {
	if p > len(b) {
		return 0, p, false
	}
	v, n := binary.Uvarint(b[p:])
	if n <= 0 || n != uvarintLen(v) {
		return 0, p, false
	}
	return v, p + n, true
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// String describes o without its bytes.
func (o Object) String() string {
	s := fmt.Sprintf("object %q v%d (%d bytes)", o.Key, o.Version, len(o.Value))
	if o.Fragment {
		s += fmt.Sprintf(" fragment at %d of %d", o.Offset, o.Total)
	}
	return s
}
