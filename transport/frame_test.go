package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

func sampleFrames() []Frame {
	big := make([]byte, 1<<20+3)
	for i := range big {
		big[i] = byte(i * 7)
	}
	return []Frame{
		{},
		{Type: 1, Epoch: 1, ID: 1, Payload: []byte("x")},
		{Type: 0xff, Flags: FlagResponse | FlagError, Epoch: math.MaxUint64, ID: math.MaxUint64, Payload: []byte("boom")},
		{Type: 7, Flags: FlagResponse, Epoch: 42, ID: 1 << 40, Payload: bytes.Repeat([]byte{0}, 100)},
		{Type: 9, Epoch: 3, ID: 5, Payload: big},
	}
}

func sameFrame(a, b Frame) bool {
	return a.Type == b.Type && a.Flags == b.Flags && a.Epoch == b.Epoch && a.ID == b.ID &&
		bytes.Equal(a.Payload, b.Payload)
}

func TestFrameRoundTrip(t *testing.T) {
	for _, want := range sampleFrames() {
		buf := AppendFrame([]byte("prefix"), want)[len("prefix"):]
		if len(buf) != HeaderSize+len(want.Payload) {
			t.Fatalf("encoded %d bytes, want %d", len(buf), HeaderSize+len(want.Payload))
		}
		got, n, err := DecodeFrame(append(buf, "trailing"...), 0)
		if err != nil || n != len(buf) || !sameFrame(got, want) {
			t.Fatalf("DecodeFrame: n=%d err=%v, frame %+v differs", n, err, got.Type)
		}
		if len(want.Payload) == 0 && got.Payload != nil {
			t.Error("empty payload decoded as non-nil")
		}
		if cap(got.Payload) != len(got.Payload) {
			t.Error("decoded payload has spare capacity into the caller's buffer")
		}
		got, err = ReadFrame(bufio.NewReader(bytes.NewReader(buf)), 0)
		if err != nil || !sameFrame(got, want) {
			t.Fatalf("ReadFrame: err=%v or frame differs", err)
		}
	}
}

// A stream of frames read back with ReadFrame ends with a clean io.EOF.
func TestReadFrameStream(t *testing.T) {
	var buf []byte
	frames := sampleFrames()
	for _, f := range frames {
		buf = AppendFrame(buf, f)
	}
	r := bufio.NewReader(bytes.NewReader(buf))
	for i, want := range frames {
		got, err := ReadFrame(r, 0)
		if err != nil || !sameFrame(got, want) {
			t.Fatalf("frame %d: err=%v or frame differs", i, err)
		}
	}
	if _, err := ReadFrame(r, 0); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// Every single-bit flip anywhere in a frame is reported as corruption or as
// a malformed frame, by both decoders: never as a frame, and never as
// ErrShort (which would make a stream reader wait for bytes that never come).
func TestEveryBitFlipDetected(t *testing.T) {
	good := AppendFrame(nil, Frame{Type: 3, Flags: FlagResponse, Epoch: 77, ID: 12345, Payload: []byte("a value of some bytes")})
	for bit := range len(good) * 8 {
		bad := bytes.Clone(good)
		bad[bit/8] ^= 1 << (bit % 8)
		_, _, err := DecodeFrame(bad, 0)
		if !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrFrame) {
			t.Errorf("bit %d: DecodeFrame err=%v", bit, err)
		}
		_, err = ReadFrame(bufio.NewReader(bytes.NewReader(bad)), 0)
		if !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrFrame) {
			t.Errorf("bit %d: ReadFrame err=%v", bit, err)
		}
	}
}

// Random multi-byte corruption never yields a frame. (A CRC32C collision is
// possible in principle, at 2^-32 per trial; the seed is fixed.)
func TestRandomCorruptionDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	good := AppendFrame(nil, Frame{Type: 1, Epoch: 9, ID: 99, Payload: bytes.Repeat([]byte("memgest"), 20)})
	for trial := range 5000 {
		bad := bytes.Clone(good)
		for range 1 + rng.IntN(8) {
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
		}
		if bytes.Equal(bad, good) {
			continue
		}
		if f, _, err := DecodeFrame(bad, 0); err == nil || errors.Is(err, ErrShort) {
			t.Fatalf("trial %d: corrupted frame decoded: err=%v frame id %d", trial, err, f.ID)
		}
	}
}

func TestTruncationIsShort(t *testing.T) {
	good := AppendFrame(nil, Frame{Type: 2, Epoch: 5, ID: 6, Payload: []byte("payload")})
	for n := range len(good) {
		if _, _, err := DecodeFrame(good[:n], 0); err != ErrShort {
			t.Errorf("prefix of %d bytes: %v, want ErrShort", n, err)
		}
		_, err := ReadFrame(bufio.NewReader(bytes.NewReader(good[:n])), 0)
		want := io.ErrUnexpectedEOF
		if n == 0 {
			want = io.EOF
		}
		if err != want {
			t.Errorf("ReadFrame of a %d-byte prefix: %v, want %v", n, err, want)
		}
	}
}

// reseal recomputes both checksums of an encoded frame, so that tests can
// build frames that are well-formed except for what they mean to test.
func reseal(buf []byte) []byte {
	hcrc := crc32.Checksum(buf[:offHCRC], castagnoli)
	binary.BigEndian.PutUint32(buf[offHCRC:], hcrc)
	binary.BigEndian.PutUint32(buf[offFCRC:], crc32.Update(hcrc, castagnoli, buf[HeaderSize:]))
	return buf
}

func TestMalformedFramesRefused(t *testing.T) {
	good := AppendFrame(nil, Frame{Type: 1, ID: 2, Payload: []byte("abc")})
	cases := map[string]func(b []byte){
		"version":       func(b []byte) { b[offVersion] = 0xE2 },
		"flag bit 3":    func(b []byte) { b[offFlags] = 1 << 3 },
		"flag bit 7":    func(b []byte) { b[offFlags] = FlagResponse | 1<<7 },
		"reserved byte": func(b []byte) { b[offReserve] = 1 },
	}
	for name, mutate := range cases {
		bad := bytes.Clone(good)
		mutate(bad)
		reseal(bad)
		if _, _, err := DecodeFrame(bad, 0); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: DecodeFrame err=%v, want ErrFrame", name, err)
		}
		if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(bad)), 0); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: ReadFrame err=%v, want ErrFrame", name, err)
		}
	}
}

// A header announcing more than maxPayload is refused from the header alone,
// before the payload arrives and before anything of its size is allocated.
func TestOversizeRefusedWithoutAllocating(t *testing.T) {
	hdr := AppendFrame(nil, Frame{Type: 1, ID: 2})
	binary.BigEndian.PutUint32(hdr[offLength:], math.MaxUint32)
	reseal(hdr)
	if _, _, err := DecodeFrame(hdr, 0); !errors.Is(err, ErrFrame) {
		t.Fatalf("DecodeFrame of a 4 GiB header: %v, want ErrFrame", err)
	}
	ok := AppendFrame(nil, Frame{Payload: make([]byte, 101)})
	if _, _, err := DecodeFrame(ok, 100); !errors.Is(err, ErrFrame) {
		t.Fatalf("101-byte payload with limit 100: %v, want ErrFrame", err)
	}
	if _, _, err := DecodeFrame(ok, 101); err != nil {
		t.Fatalf("101-byte payload with limit 101: %v", err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		// Only the header is there: the reader must not wait for or
		// allocate the payload.
		if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(hdr)), 0); !errors.Is(err, ErrFrame) {
			t.Fatalf("ReadFrame of a 4 GiB header: %v, want ErrFrame", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing oversize frames allocated %d bytes", grew)
	}
}
