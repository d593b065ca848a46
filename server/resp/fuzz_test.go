package resp

import (
	"errors"
	"testing"
)

// FuzzParseReply checks that Parse never panics, that it fails only with
// ErrIncomplete or ErrProtocol, and that whatever it accepts survives a
// trip through RESP3 unchanged and renders stably in RESP2.
func FuzzParseReply(f *testing.F) {
	for _, c := range renderCases {
		f.Add([]byte(c.resp2))
		f.Add([]byte(c.resp3))
	}
	f.Add([]byte("*2\r\n$-1\r\n*-1\r\n"))
	f.Add([]byte("!10\r\nERR a\r\nb c\r\n"))
	f.Add([]byte(",0x1p-2\r\n"))
	f.Fuzz(func(t *testing.T, buf []byte) {
		r, n, err := Parse(buf)
		if err != nil {
			if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrProtocol) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if n <= 0 || n > len(buf) {
			t.Fatalf("used %d bytes of %d", n, len(buf))
		}
		wire3 := r.AppendTo(nil, 3)
		r3, n3, err := Parse(wire3)
		if err != nil || n3 != len(wire3) || !r3.Equal(forProto(r, 3)) {
			t.Fatalf("RESP3 trip of %v: %v (%d of %d bytes, %v)", r, r3, n3, len(wire3), err)
		}
		wire2 := r.AppendTo(nil, 2)
		if len(wire2) == 0 {
			t.Fatalf("%v rendered to nothing in RESP2", r)
		}
		r2, n2, err := Parse(wire2)
		if err != nil || n2 != len(wire2) {
			t.Fatalf("RESP2 form %q of %v does not parse: %v", wire2, r, err)
		}
		if again := r2.AppendTo(nil, 2); string(again) != string(wire2) {
			t.Fatalf("RESP2 form unstable: %q then %q", wire2, again)
		}
	})
}

// FuzzGlobMatch compares GlobMatch with globRef, a slow reference written
// from the semantics rather than from Redis's loop.
func FuzzGlobMatch(f *testing.F) {
	for _, c := range globCases {
		f.Add([]byte(c.pattern), []byte(c.s), c.nocase)
	}
	f.Fuzz(func(t *testing.T, pattern, s []byte, nocase bool) {
		if len(pattern) > 64 || len(s) > 64 {
			return // the reference is memoised but the 1000-star limit is not modelled
		}
		got := GlobMatch(pattern, s, nocase)
		if want := globRef(pattern, s, nocase); got != want {
			t.Fatalf("GlobMatch(%q, %q, %v) = %v, reference says %v", pattern, s, nocase, got, want)
		}
	})
}
