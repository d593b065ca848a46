package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

const fuzzMax = 1 << 16

func addFrameSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{Version})
	var stream []byte
	for _, fr := range sampleFrames()[:4] {
		one := AppendFrame(nil, fr)
		f.Add(one)
		f.Add(one[:len(one)-1])
		stream = append(stream, one...)
	}
	f.Add(stream)
}

// FuzzDecodeFrame: arbitrary bytes never panic, and whatever decodes
// re-encodes to exactly the bytes it was decoded from. Random bytes almost
// never carry valid checksums, so each input is also decoded with its
// checksums fixed up, which lets the fuzzer explore the header fields.
func FuzzDecodeFrame(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		if sealed, ok := resealDeclared(data); ok {
			if err := checkDecode(t, sealed); errors.Is(err, ErrChecksum) {
				t.Fatalf("resealed frame fails its checksum: %v", err)
			}
		}
	})
}

func checkDecode(t *testing.T, data []byte) error {
	fr, n, err := DecodeFrame(data, fuzzMax)
	if err != nil {
		if n != 0 {
			t.Fatalf("error %v with n=%d", err, n)
		}
		if !errors.Is(err, ErrShort) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrFrame) {
			t.Fatalf("unexpected error class: %v", err)
		}
		return err
	}
	if re := AppendFrame(nil, fr); !bytes.Equal(re, data[:n]) {
		t.Fatalf("re-encoding differs:\n got %x\nfrom %x", re, data[:n])
	}
	return nil
}

// resealDeclared returns a copy of data with both checksums made valid for
// the payload length its header declares, if data is long enough to hold it.
func resealDeclared(data []byte) ([]byte, bool) {
	if len(data) < HeaderSize {
		return nil, false
	}
	end := HeaderSize + int(binary.BigEndian.Uint32(data[offLength:]))
	if end > len(data) {
		return nil, false
	}
	return reseal(bytes.Clone(data[:end])), true
}

// FuzzReadFrame reads arbitrary bytes as a stream with ReadFrame and checks
// it against DecodeFrame over the same bytes: the same frames in the same
// order, then the same failure (ErrShort in the buffer is an unexpected EOF
// in the stream).
func FuzzReadFrame(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(data), 16) // small buffer: many refills
		rest := data
		for {
			want, n, derr := DecodeFrame(rest, fuzzMax)
			got, rerr := ReadFrame(r, fuzzMax)
			if derr == nil {
				if rerr != nil || !sameFrame(got, want) {
					t.Fatalf("DecodeFrame gave a frame, ReadFrame: %v", rerr)
				}
				rest = rest[n:]
				continue
			}
			switch {
			case len(rest) == 0:
				if rerr != io.EOF {
					t.Fatalf("at the end: %v, want io.EOF", rerr)
				}
			case errors.Is(derr, ErrShort):
				if rerr != io.ErrUnexpectedEOF {
					t.Fatalf("DecodeFrame: ErrShort, ReadFrame: %v", rerr)
				}
			case errors.Is(derr, ErrChecksum):
				if !errors.Is(rerr, ErrChecksum) {
					t.Fatalf("DecodeFrame: %v, ReadFrame: %v", derr, rerr)
				}
			case errors.Is(derr, ErrFrame):
				if !errors.Is(rerr, ErrFrame) {
					t.Fatalf("DecodeFrame: %v, ReadFrame: %v", derr, rerr)
				}
			default:
				t.Fatalf("unexpected DecodeFrame error %v", derr)
			}
			return
		}
	})
}
