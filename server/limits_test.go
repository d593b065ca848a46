package server

import (
	"strings"
	"sync/atomic"
	"testing"
)

func newFraming() *framing { return &framing{maxBulk: 1000, maxArgs: 10} }

func TestFramingAcceptsValidStreams(t *testing.T) {
	stream := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n" + strings.Repeat("v", 1000) + "\r\n" +
		"PING\r\n" + "*0\r\n" + "*1\r\n$4\r\nPING\r\n" + "*2\r\n$3\r\nGET\r\n$0\r\n\r\n"
	for _, chunk := range []int{1, 2, 3, 7, len(stream)} {
		f := newFraming()
		for i := 0; i < len(stream); i += chunk {
			if msg := f.feed([]byte(stream[i:min(i+chunk, len(stream))])); msg != "" {
				t.Fatalf("chunk %d: refused valid stream at %d: %s", chunk, i, msg)
			}
		}
		if f.state != atCommand {
			t.Fatalf("chunk %d: stream ended in state %d", chunk, f.state)
		}
	}
}

func TestFramingPreAuthLimits(t *testing.T) {
	f := newFraming()
	f.maxBulk, f.maxArgs = 1<<20, 100
	var pre atomic.Bool
	pre.Store(true)
	f.preAuth = &pre
	if got := f.feed([]byte("*11\r\n")); got != "unauthenticated multibulk length" {
		t.Fatalf("11 args before AUTH: %q", got)
	}
	g := newFraming()
	g.maxBulk, g.preAuth = 1<<20, &pre
	if got := g.feed([]byte("*2\r\n$4\r\nAUTH\r\n$20000\r\n")); got != "unauthenticated bulk length" {
		t.Fatalf("20000-byte bulk before AUTH: %q", got)
	}
	pre.Store(false)
	h := newFraming()
	h.maxBulk, h.maxArgs, h.preAuth = 1<<20, 100, &pre
	if got := h.feed([]byte("*11\r\n$1\r\na\r\n$20000\r\n")); got != "" {
		t.Fatalf("after AUTH: %q", got)
	}
}

func TestFramingRefusesOverLimits(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"*11\r\n", "invalid multibulk length"},
		{"*2\r\n$1001\r\n", "invalid bulk length"},
		{"*1\r\n$-1\r\n", "invalid bulk length"},
		{"*1\r\n$abc\r\n", "invalid bulk length"},
		{"*x\r\n", "invalid multibulk length"},
		{"*1\r\n+PING\r\n", "expected '$', got '+'"},
		{"*1\r\n$1\n", "invalid bulk length"},
		{"*" + strings.Repeat("1", 40) + "\r\n", "invalid multibulk length"},
		{strings.Repeat("a", maxInline+1), "too big inline request"},
	} {
		if got := newFraming().feed([]byte(tc.in)); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzFraming feeds arbitrary bytes in arbitrary chunks: the tracker never
// panics, and its verdict does not depend on how the stream is chunked.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), uint8(3))
	f.Add([]byte("*1\r\n$99999\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		whole := newFraming().feed(b)
		step := int(chunk%16) + 1
		g := newFraming()
		var parts string
		for i := 0; i < len(b) && parts == ""; i += step {
			parts = g.feed(b[i:min(i+step, len(b))])
		}
		if whole != parts {
			t.Fatalf("whole %q vs chunked %q", whole, parts)
		}
	})
}
