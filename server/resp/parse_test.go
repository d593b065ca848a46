package resp

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// forProto is what a reply becomes after a trip through protocol proto:
// RESP3 has a single null, RESP2 has no RESP3 types.
func forProto(r Reply, proto int) Reply {
	if proto == 2 {
		parsed, _, err := Parse(r.AppendTo(nil, 2))
		if err != nil {
			panic(err)
		}
		return parsed
	}
	if r.kind == KindNilArray {
		return Nil()
	}
	if len(r.items) > 0 {
		items := make([]Reply, len(r.items))
		for i, it := range r.items {
			items[i] = forProto(it, 3)
		}
		r.items = items
	}
	return r
}

func TestParseRenderCases(t *testing.T) {
	for _, c := range renderCases {
		if c.r.IsZero() {
			continue
		}
		for _, proto := range []int{2, 3} {
			wire := c.resp2
			if proto == 3 {
				wire = c.resp3
			}
			got, n, err := Parse([]byte(wire + "+next\r\n"))
			if err != nil {
				t.Errorf("%s RESP%d: %v", c.name, proto, err)
				continue
			}
			if n != len(wire) {
				t.Errorf("%s RESP%d: used %d bytes of %d", c.name, proto, n, len(wire))
			}
			if proto == 3 && !got.Equal(forProto(c.r, 3)) {
				t.Errorf("%s RESP3: parsed %v, want %v", c.name, got, c.r)
			}
			if again := string(got.AppendTo(nil, proto)); again != wire {
				t.Errorf("%s RESP%d: re-rendered %q, want %q", c.name, proto, again, wire)
			}
		}
	}
}

// Values made of RESP2 kinds survive RESP2 exactly, null arrays included.
func TestParseRoundTripRESP2(t *testing.T) {
	values := []Reply{
		OK(), Err("WRONGTYPE x"), Int(-5), BulkString(""), BulkString("\x00\r\n"), Nil(), NilArray(),
		Array(), Array(NilArray(), Nil(), Array(Int(1), Array(BulkString("deep")))),
	}
	for _, v := range values {
		got, _, err := Parse(v.AppendTo(nil, 2))
		if err != nil || !got.Equal(v) {
			t.Errorf("%v: got %v, %v", v, got, err)
		}
	}
}

func TestParseAccepts(t *testing.T) {
	cases := []struct {
		in   string
		want Reply
	}{
		{":+5\r\n", Int(5)},
		{":-0\r\n", Int(0)},
		{",1.5e3\r\n", Double(1500)},
		{",-inf\r\n", Double(mustInf(-1))},
		{"(-12\r\n", BigNumber("-12")},
		{"!5\r\nERR x\r\n", Err("ERR x")},
		{"=8\r\nmkd:*hi*\r\n", Verbatim("mkd", "*hi*")},
		{"|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n:1\r\n", WithAttributes(WithAttributes(Int(1), Simple("c"), Simple("d")), Simple("a"), Simple("b"))},
		{"*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", Array(WithAttributes(Int(1), Simple("a"), Simple("b")))},
	}
	for _, c := range cases {
		got, n, err := Parse([]byte(c.in))
		if err != nil || n != len(c.in) || !got.Equal(c.want) {
			t.Errorf("Parse(%q) = %v, %d, %v; want %v", c.in, got, n, err, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("*1\r\n", maxDepth+2) + ":1\r\n"
	cases := []struct {
		in   string
		want error
	}{
		{"", ErrIncomplete},
		{"+OK", ErrIncomplete},
		{"+OK\r", ErrIncomplete},
		{"$5\r\nhel", ErrIncomplete},
		{"$5\r\nhello\r", ErrIncomplete},
		{"*2\r\n:1\r\n", ErrIncomplete},
		{"%1\r\n+a\r\n", ErrIncomplete},
		{"|1\r\n+a\r\n+b\r\n", ErrIncomplete},
		{"$5\r\nhelloXX", ErrProtocol},
		{"?x\r\n", ErrProtocol},
		{"+a\nb\r\n", ErrProtocol},
		{"-a\rb\r\n", ErrProtocol},
		{":abc\r\n", ErrProtocol},
		{":99999999999999999999\r\n", ErrProtocol},
		{"$-2\r\n", ErrProtocol},
		{"$\r\n", ErrProtocol},
		{"$?\r\n", ErrProtocol},
		{"$99999999999\r\n", ErrProtocol},
		{"$536870913\r\n", ErrProtocol},
		{"*-2\r\n", ErrProtocol},
		{"*?\r\n", ErrProtocol},
		{"%-1\r\n", ErrProtocol},
		{"!-1\r\n", ErrProtocol},
		{"_x\r\n", ErrProtocol},
		{"#x\r\n", ErrProtocol},
		{",abc\r\n", ErrProtocol},
		{",1e999\r\n", ErrProtocol},
		{"(12a\r\n", ErrProtocol},
		{"(\r\n", ErrProtocol},
		{"(-\r\n", ErrProtocol},
		{"=3\r\nabc\r\n", ErrProtocol},
		{"=4\r\nabcd\r\n", ErrProtocol},
		{deep, ErrProtocol},
	}
	for _, c := range cases {
		r, n, err := Parse([]byte(c.in))
		if !errors.Is(err, c.want) {
			t.Errorf("Parse(%q) error %v, want %v", c.in, err, c.want)
		}
		if n != 0 || !r.IsZero() {
			t.Errorf("Parse(%q) returned %v, %d with an error", c.in, r, n)
		}
	}
}

// Every proper prefix of a reply is incomplete, never malformed.
func TestParsePrefixesIncomplete(t *testing.T) {
	for _, c := range renderCases {
		for _, wire := range []string{c.resp2, c.resp3} {
			for i := 0; i < len(wire); i++ {
				if _, _, err := Parse([]byte(wire[:i])); err != ErrIncomplete {
					t.Fatalf("%s: prefix %q: %v", c.name, wire[:i], err)
				}
			}
		}
	}
}

// A huge declared count with a short buffer must not allocate for it.
func TestParseHugeCountCheap(t *testing.T) {
	allocs := testing.AllocsPerRun(10, func() {
		Parse([]byte("*2147483647\r\n:1\r\n"))
	})
	if allocs > 5 {
		t.Errorf("%v allocations", allocs)
	}
}

func TestParseCopies(t *testing.T) {
	buf := []byte("$3\r\nabc\r\n")
	r, _, _ := Parse(buf)
	copy(buf, "xxxxxxxxx")
	if r.Text() != "abc" {
		t.Errorf("Parse kept a reference to its buffer: %q", r.Text())
	}
}

func mustInf(sign int) float64 {
	r, _, _ := Parse([]byte(",inf\r\n"))
	return r.Float() * float64(sign)
}

// randomReply builds a random reply tree; resp2Only limits it to the kinds
// RESP2 can carry.
func randomReply(rng *rand.Rand, depth int, resp2Only bool) Reply {
	texts := []string{"", "OK", "a b", "x\r\ny", "\x00\xff", strings.Repeat("z", 300)}
	text := func() string { return texts[rng.IntN(len(texts))] }
	kinds := 16
	if resp2Only {
		kinds = 8
	}
	if depth > 3 {
		kinds = min(kinds, 5)
	}
	items := func() []Reply {
		out := make([]Reply, rng.IntN(4))
		for i := range out {
			out[i] = randomReply(rng, depth+1, resp2Only)
		}
		return out
	}
	switch rng.IntN(kinds) {
	case 0:
		return Simple(text())
	case 1:
		return Err("ERR " + text())
	case 2:
		return Int(rng.Int64() - rng.Int64())
	case 3:
		return BulkString(text())
	case 4:
		return Nil()
	case 5:
		return NilArray()
	case 6, 7:
		return Array(items()...)
	case 8:
		kv := items()
		return Map(append(kv, kv...)...)
	case 9:
		return Set(items()...)
	case 10:
		return Push(items()...)
	case 11:
		return Double([]float64{0, 1.5, -1e300, 1e-9, math.Inf(1), math.NaN(), rng.NormFloat64()}[rng.IntN(7)])
	case 12:
		return Bool(rng.IntN(2) == 0)
	case 13:
		return Verbatim("txt", text())
	case 14:
		return BigNumber("-" + strconv.FormatUint(rng.Uint64(), 10) + "123456789012345678901234567890")
	}
	kv := items()
	return WithAttributes(randomReply(rng, depth+1, resp2Only), append(kv, kv...)...)
}

// Constructor-built values survive their protocol: any value through
// RESP3, RESP2-only values through RESP2.
func TestRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		r := randomReply(rng, 0, false)
		got, n, err := Parse(r.AppendTo(nil, 3))
		if err != nil || n != len(r.AppendTo(nil, 3)) || !got.Equal(forProto(r, 3)) {
			t.Fatalf("RESP3 trip of %v gave %v, %v", r, got, err)
		}
		r2 := randomReply(rng, 0, true)
		got, _, err = Parse(r2.AppendTo(nil, 2))
		if err != nil || !got.Equal(r2) {
			t.Fatalf("RESP2 trip of %v gave %v, %v", r2, got, err)
		}
	}
}
