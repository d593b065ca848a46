package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// Frame is one message on a connection. The transport reads and writes
// frames but never looks inside Type or Payload: message types and payload
// encodings belong to the caller.
type Frame struct {
	Type    uint8  // caller-defined message type
	Flags   uint8  // FlagResponse, FlagError, FlagPart; other bits are reserved and refused
	Epoch   uint64 // cluster-map epoch the sender acted under
	ID      uint64 // request id; a response carries its request's id
	Payload []byte // caller-defined bytes; empty payloads decode as nil
	// Tail is more of the payload, sent after Payload without being
	// copied: a large value goes out from the caller's own slice. Only
	// senders use it; a received message has its whole payload in Payload.
	Tail [][]byte
}

// Size is the length of f's whole payload: Payload and Tail.
func (f Frame) Size() int {
	n := len(f.Payload)
	for _, t := range f.Tail {
		n += len(t)
	}
	return n
}

// segments is f's payload as the slices it is made of.
func (f Frame) segments() [][]byte {
	if len(f.Tail) == 0 {
		return [][]byte{f.Payload}
	}
	return append([][]byte{f.Payload}, f.Tail...)
}

// Flag bits. Every other bit is reserved: a decoder refuses frames that set
// one, so that a future meaning can never be silently ignored by an old node.
const (
	// FlagResponse marks a response; requests never set it.
	FlagResponse uint8 = 1 << 0
	// FlagError marks a response whose payload is an error message (UTF-8
	// text) instead of a result. The client turns it into a *RemoteError.
	FlagError uint8 = 1 << 1
	// FlagPart marks a frame that carries one part of a message larger
	// than PartSize (parts.go): its payload is the message's length and
	// the part's offset in it, then the part's bytes.
	FlagPart uint8 = 1 << 2

	knownFlags = FlagResponse | FlagError | FlagPart
)

// Wire constants; docs/transport.md has the byte table.
const (
	// HeaderSize is the size of the fixed frame header in bytes.
	HeaderSize = 32
	// Version is the magic/version byte every frame starts with. The high
	// nibble 0xE marks memgest frames, the low nibble is the format version.
	Version byte = 0xE1
	// DefaultMaxPayload is the largest payload a peer accepts unless told
	// otherwise: room for a 512 MiB value plus headers.
	DefaultMaxPayload = 600 << 20
	// MaxPayload is the largest payload the length field can express.
	MaxPayload = math.MaxUint32
)

// Header field offsets.
const (
	offVersion = 0
	offType    = 1
	offFlags   = 2
	offReserve = 3
	offEpoch   = 4
	offID      = 12
	offLength  = 20
	offHCRC    = 24 // CRC32C of bytes [0, 24)
	offFCRC    = 28 // CRC32C of bytes [0, 24) followed by the payload
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendFrame appends the wire encoding of f, as one frame whatever its
// size, to dst and returns the extended slice. It panics if the payload is
// longer than MaxPayload, which no length field can express; senders check
// their own, smaller, limit first.
func AppendFrame(dst []byte, f Frame) []byte {
	dst = append(appendHeader(dst, f), f.Payload...)
	for _, seg := range f.Tail {
		dst = append(dst, seg...)
	}
	return dst
}

// appendHeader appends the 32-byte header of f, whose frame checksum covers
// its payload (Payload and Tail), without the payload itself: the send
// queue computes some headers before taking its lock and writes large
// payloads from the caller's slices instead of copying them.
func appendHeader(dst []byte, f Frame) []byte {
	if len(f.Tail) == 0 {
		return appendHeaderOf(dst, f, f.Payload)
	}
	return appendHeaderOf(dst, f, f.segments()...)
}

// appendHeaderOf appends the header of a frame with f's fields whose
// payload is segs.
func appendHeaderOf(dst []byte, f Frame, segs ...[]byte) []byte {
	size := 0
	for _, s := range segs {
		size += len(s)
	}
	if uint64(size) > MaxPayload {
		panic(fmt.Sprintf("transport: payload of %d bytes does not fit a frame", size))
	}
	start := len(dst)
	dst = append(dst, Version, f.Type, f.Flags, 0)
	dst = binary.BigEndian.AppendUint64(dst, f.Epoch)
	dst = binary.BigEndian.AppendUint64(dst, f.ID)
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	hcrc := crc32.Checksum(dst[start:start+offHCRC], castagnoli)
	dst = binary.BigEndian.AppendUint32(dst, hcrc)
	fcrc := hcrc
	for _, s := range segs {
		fcrc = crc32.Update(fcrc, castagnoli, s)
	}
	return binary.BigEndian.AppendUint32(dst, fcrc)
}

// DecodeFrame decodes the frame at the start of buf and returns it with the
// number of bytes it occupies. The payload aliases buf. Errors:
//
//   - ErrShort: buf holds a valid prefix of a frame; read more and retry.
//   - ErrChecksum: a checksum does not match (corruption).
//   - ErrFrame: not a frame of this version, reserved bits set, or a
//     payload longer than maxPayload (refused before anything is allocated).
//
// maxPayload ≤ 0 means DefaultMaxPayload. The header checksum is verified
// before the length is trusted, so a corrupted length is reported as
// ErrChecksum at once instead of ErrShort (waiting for bytes that never come).
func DecodeFrame(buf []byte, maxPayload int) (f Frame, n int, err error) {
	if len(buf) > 0 && buf[0] != Version {
		return Frame{}, 0, badVersion(buf[0])
	}
	if len(buf) < HeaderSize {
		return Frame{}, 0, ErrShort
	}
	f, size, err := parseHeader(buf[:HeaderSize], maxPayload)
	if err != nil {
		return Frame{}, 0, err
	}
	end := HeaderSize + size
	if len(buf) < end {
		return Frame{}, 0, ErrShort
	}
	if size > 0 {
		f.Payload = buf[HeaderSize:end:end]
	}
	if err := checkPayload(buf[:HeaderSize], f.Payload); err != nil {
		return Frame{}, 0, err
	}
	return f, end, nil
}

// ReadFrame reads one frame from r into a freshly allocated payload. It
// returns io.EOF only if r ends cleanly between frames and
// io.ErrUnexpectedEOF if it ends inside one; corruption and malformed frames
// are reported as by DecodeFrame. maxPayload ≤ 0 means DefaultMaxPayload.
// A part of a larger message (FlagPart) is returned as it is; connections
// read whole messages (frameReader, parts.go).
func ReadFrame(r *bufio.Reader, maxPayload int) (Frame, error) {
	f, size, hdr, err := readHeader(r, maxPayload)
	if err != nil {
		return Frame{}, err
	}
	return readBody(r, f, size, &hdr)
}

// readHeader reads and checks one frame header from r and returns its
// fields, its payload length and the header's bytes.
func readHeader(r *bufio.Reader, maxPayload int) (f Frame, size int, hdr [HeaderSize]byte, err error) {
	if _, err := io.ReadFull(r, hdr[:1]); err != nil {
		return Frame{}, 0, hdr, err // io.EOF between frames
	}
	if hdr[0] != Version {
		return Frame{}, 0, hdr, badVersion(hdr[0])
	}
	if _, err := io.ReadFull(r, hdr[1:]); err != nil {
		return Frame{}, 0, hdr, unexpectedEOF(err)
	}
	f, size, err = parseHeader(hdr[:], maxPayload)
	return f, size, hdr, err
}

// readBody reads the size-byte payload of the frame whose header is hdr
// into a fresh slice and checks it.
func readBody(r *bufio.Reader, f Frame, size int, hdr *[HeaderSize]byte) (Frame, error) {
	if size > 0 {
		f.Payload = make([]byte, size)
		if _, err := io.ReadFull(r, f.Payload); err != nil {
			return Frame{}, unexpectedEOF(err)
		}
	}
	if err := checkPayload(hdr[:], f.Payload); err != nil {
		return Frame{}, err
	}
	return f, nil
}

// parseHeader checks a complete header and returns its fields and the
// payload length. The version byte has already been checked.
func parseHeader(hdr []byte, maxPayload int) (Frame, int, error) {
	want := binary.BigEndian.Uint32(hdr[offHCRC:])
	if got := crc32.Checksum(hdr[:offHCRC], castagnoli); got != want {
		return Frame{}, 0, fmt.Errorf("%w: header crc %08x, want %08x", ErrChecksum, got, want)
	}
	f := Frame{
		Type:  hdr[offType],
		Flags: hdr[offFlags],
		Epoch: binary.BigEndian.Uint64(hdr[offEpoch:]),
		ID:    binary.BigEndian.Uint64(hdr[offID:]),
	}
	if f.Flags&^knownFlags != 0 {
		return Frame{}, 0, fmt.Errorf("%w: unknown flag bits %#02x", ErrFrame, f.Flags&^knownFlags)
	}
	if hdr[offReserve] != 0 {
		return Frame{}, 0, fmt.Errorf("%w: reserved byte %#02x is not zero", ErrFrame, hdr[offReserve])
	}
	size := uint64(binary.BigEndian.Uint32(hdr[offLength:]))
	if size > uint64(payloadLimit(maxPayload)) {
		return Frame{}, 0, fmt.Errorf("%w: payload of %d bytes exceeds the limit of %d", ErrFrame, size, payloadLimit(maxPayload))
	}
	return f, int(size), nil
}

// checkPayload verifies the frame checksum, which continues the header
// checksum over the payload.
func checkPayload(hdr, payload []byte) error {
	hcrc := binary.BigEndian.Uint32(hdr[offHCRC:])
	want := binary.BigEndian.Uint32(hdr[offFCRC:])
	if got := crc32.Update(hcrc, castagnoli, payload); got != want {
		return fmt.Errorf("%w: frame crc %08x, want %08x", ErrChecksum, got, want)
	}
	return nil
}

// payloadLimit resolves a caller's maxPayload: ≤ 0 means the default, and
// nothing above MaxPayload can be expressed anyway.
func payloadLimit(maxPayload int) int {
	if maxPayload <= 0 {
		return DefaultMaxPayload
	}
	return int(min(uint64(maxPayload), MaxPayload))
}

func badVersion(b byte) error {
	return fmt.Errorf("%w: first byte %#02x, want version byte %#02x", ErrFrame, b, Version)
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
