package resp

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var testLimits = RequestLimits{MaxBulk: 1000, MaxArgs: 10}

// parseAll parses every request in stream and returns their arguments
// joined by '|', requests by ';'.
func parseAll(t *testing.T, stream string, lim RequestLimits) (string, error) {
	t.Helper()
	buf := []byte(stream)
	var out []string
	for len(buf) > 0 {
		args, n, need, err := ParseRequest(buf, lim, nil)
		if err != nil {
			return strings.Join(out, ";"), err
		}
		if n == 0 {
			t.Fatalf("%q: incomplete (need %d) with %d bytes left", stream, need, len(buf))
		}
		buf = buf[n:]
		if len(args) > 0 {
			out = append(out, string(bytes.Join(args, []byte("|"))))
		}
	}
	return strings.Join(out, ";"), nil
}

func TestParseRequestValidStream(t *testing.T) {
	stream := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n" + strings.Repeat("v", 1000) + "\r\n" +
		"PING\r\n" + "*0\r\n" + "*-1\r\n" + "\r\n" + "*1\r\n$4\r\nPING\r\n" + "*2\r\n$3\r\nGET\r\n$0\r\n\r\n"
	got, err := parseAll(t, stream, testLimits)
	want := "SET|k|" + strings.Repeat("v", 1000) + ";PING;PING;GET|"
	if err != nil || got != want {
		t.Fatalf("got %.40q, %v; want %.40q", got, err, want)
	}
}

// TestParseRequestPrefixes cuts each request at every length: a prefix is
// incomplete, with a need beyond the prefix and within the request.
func TestParseRequestPrefixes(t *testing.T) {
	for _, req := range []string{
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20\r\n" + strings.Repeat("v", 20) + "\r\n",
		"*1\r\n$0\r\n\r\n",
		"SET k \"a b\"\r\n",
	} {
		for k := 0; k < len(req); k++ {
			args, n, need, err := ParseRequest([]byte(req[:k]), testLimits, nil)
			if err != nil || n != 0 || len(args) != 0 || need <= k || need > len(req) {
				t.Fatalf("%q cut at %d: args %q n %d need %d err %v", req, k, args, n, need, err)
			}
		}
		if _, n, _, err := ParseRequest([]byte(req), testLimits, nil); n != len(req) || err != nil {
			t.Fatalf("%q whole: n %d err %v", req, n, err)
		}
	}
}

func TestParseRequestRefusesOverLimits(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"*11\r\n", "invalid multibulk length"},
		{"*2\r\n$1001\r\n", "invalid bulk length"},
		{"*1\r\n$-1\r\n", "invalid bulk length"},
		{"*1\r\n$abc\r\n", "invalid bulk length"},
		{"*1\r\n$01\r\nk\r\n", "invalid bulk length"}, // string2ll: no leading zero
		{"*+1\r\n", "invalid multibulk length"},
		{"*x\r\n", "invalid multibulk length"},
		{"*1\r\n+PING\r\n", "expected '$', got '+'"},
		{"*1\r\n$1\n", "invalid bulk length"},
		{"*1\r\n$1\r\nab\r\n", "invalid bulk length"}, // payload longer than declared
		{"*" + strings.Repeat("1", 40) + "\r\n", "invalid multibulk length"},
		{"*1\r\n$" + strings.Repeat("1", 40), "invalid bulk length"},
		{strings.Repeat("a", MaxInline+1), "too big inline request"},
		{"SET k \"abc\r\n", "unbalanced quotes in request"},
		{"SET k \"a\"b\r\n", "unbalanced quotes in request"},
		{"SET k 'a\r\n", "unbalanced quotes in request"},
	} {
		_, n, _, err := ParseRequest([]byte(tc.in), testLimits, nil)
		var bad *RequestError
		if !errors.As(err, &bad) || bad.Msg != tc.want || n != 0 {
			t.Errorf("%.50q: got n %d, %v; want %q", tc.in, n, err, tc.want)
		}
	}
}

func TestParseRequestPreAuthLimits(t *testing.T) {
	pre := RequestLimits{MaxBulk: 1 << 20, MaxArgs: 100, PreAuth: true}
	if _, _, _, err := ParseRequest([]byte("*11\r\n"), pre, nil); err == nil || err.Error() != "Protocol error: unauthenticated multibulk length" {
		t.Fatalf("11 args before AUTH: %v", err)
	}
	if _, _, _, err := ParseRequest([]byte("*2\r\n$4\r\nAUTH\r\n$20000\r\n"), pre, nil); err == nil || err.Error() != "Protocol error: unauthenticated bulk length" {
		t.Fatalf("20000-byte bulk before AUTH: %v", err)
	}
	pre.PreAuth = false
	if _, n, need, err := ParseRequest([]byte("*11\r\n$1\r\na\r\n$20000\r\n"), pre, nil); err != nil || n != 0 || need < 20000 {
		t.Fatalf("after AUTH: n %d need %d err %v", n, need, err)
	}
}

func TestParseRequestInline(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"GET k\r\n", "GET|k"},
		{"GET k\n", "GET|k"},
		{"  SET \t k   v  \r\n", "SET|k|v"},
		{"SET k \"a b\"\r\n", "SET|k|a b"},
		{"SET k \"\\x41\\x7a\\n\\t\\\\\\\"\"\r\n", "SET|k|Az\n\t\\\""},
		{"SET k \"\\xZZ\"\r\n", "SET|k|xZZ"},
		{"SET k 'it\\'s \\n'\r\n", "SET|k|it's \\n"},
		{"SET k foo\"bar\"\r\n", "SET|k|foobar"},
		{"SET k \"\"\r\n", "SET|k|"},
		{"\r\n", ""},
	} {
		got, err := parseAll(t, tc.in, testLimits)
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestParseRequestAppendsToArgs checks that arguments are appended after
// those already in args and alias the buffer.
func TestParseRequestAppendsToArgs(t *testing.T) {
	buf := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	arena := make([][]byte, 1, 8)
	arena[0] = []byte("earlier")
	out, _, _, err := ParseRequest(buf, testLimits, arena)
	if err != nil || len(out) != 3 || string(out[0]) != "earlier" || string(out[2]) != "k" {
		t.Fatalf("got %q, %v", out, err)
	}
	buf[len(buf)-3] = 'z'
	if string(out[2]) != "z" {
		t.Fatalf("argument does not alias the buffer: %q", out[2])
	}
}

// FuzzParseRequest checks that ParseRequest never panics, refuses only
// with a RequestError, and agrees with itself on every prefix: a prefix of
// a complete request is incomplete with a need within the request, and a
// prefix of a refused one is incomplete or refused the same way. It also
// feeds the bytes to a RequestParser in pieces of the sizes cuts gives,
// which must find the same requests, end state and error as parsing the
// bytes whole.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), []byte{2})
	f.Add([]byte("*1\r\n$99999\r\n"), []byte{0})
	f.Add([]byte("SET k \"a\\x41\" 'b\\''\r\n"), []byte{5, 1})
	f.Add(splitStream()[:600], []byte{1, 5, 200})
	f.Add([]byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nPI"), []byte{3})
	f.Fuzz(func(t *testing.T, b, cuts []byte) {
		checkPrefixes(t, b)
		steps := []int{max(1, len(b))}
		if len(cuts) > 0 {
			steps = steps[:0]
			for _, c := range cuts {
				steps = append(steps, int(c)+1)
			}
		}
		wantReqs, wantCut, wantErr := parseWhole(b, testLimits)
		reqs, cut, err := parseInPieces(b, steps, testLimits)
		if !slices.Equal(reqs, wantReqs) || cut != wantCut || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("in pieces of %v: %q, cut %v, %v; whole: %q, cut %v, %v", steps, reqs, cut, err, wantReqs, wantCut, wantErr)
		}
	})
}

// checkPrefixes checks one request against ParseRequest of its prefixes.
func checkPrefixes(t *testing.T, b []byte) {
	_, n, need, err := ParseRequest(bytes.Clone(b), testLimits, nil)
	var bad *RequestError
	if err != nil && !errors.As(err, &bad) {
		t.Fatalf("error %v is not a RequestError", err)
	}
	if err == nil && n == 0 && need <= len(b) {
		t.Fatalf("incomplete with need %d of %d bytes", need, len(b))
	}
	for k := 0; k < len(b); k++ {
		_, pn, pneed, perr := ParseRequest(bytes.Clone(b[:k]), testLimits, nil)
		switch {
		case perr != nil && (err == nil || perr.Error() != err.Error()):
			t.Fatalf("prefix %d refused (%v), whole: %v", k, perr, err)
		case perr == nil && pn != 0 && (n != pn || err != nil):
			t.Fatalf("prefix %d complete at %d, whole at %d (%v)", k, pn, n, err)
		case perr == nil && pn == 0 && err == nil && n > 0 && pneed > n:
			t.Fatalf("prefix %d needs %d, the request is %d", k, pneed, n)
		}
	}
}

// parseWhole parses every request in stream at once with ParseRequest and
// returns them as parseAll does, with the error that stopped it and
// whether the stream ends inside a request.
func parseWhole(stream []byte, lim RequestLimits) (reqs []string, cut bool, err error) {
	buf := bytes.Clone(stream)
	for len(buf) > 0 {
		args, n, _, err := ParseRequest(buf, lim, nil)
		if err != nil || n == 0 {
			return reqs, err == nil, err
		}
		buf = buf[n:]
		if len(args) > 0 {
			reqs = append(reqs, string(bytes.Join(args, []byte("|"))))
		}
	}
	return reqs, false, nil
}

// parseInPieces feeds stream to a RequestParser in pieces of the sizes
// steps gives in turn, moving the unused bytes to a new buffer before each
// piece, as a reader moving to a new chunk does. It records each request
// only after the whole stream is parsed, so it also checks that no
// argument changed after it was found.
func parseInPieces(stream []byte, steps []int, lim RequestLimits) (reqs []string, cut bool, err error) {
	var p RequestParser
	var found [][][]byte
	var buf []byte
	var args [][]byte
	for i, pos := 0, 0; pos < len(stream); i++ {
		step := min(steps[i%len(steps)], len(stream)-pos)
		buf = append(bytes.Clone(buf), stream[pos:pos+step]...)
		pos += step
		for len(buf) > 0 {
			out, n, need, perr := p.Next(buf, lim, args)
			if perr != nil {
				err = perr
				break
			}
			buf, args = buf[n:], out
			if need > 0 {
				break
			}
			if len(out) > 0 {
				found = append(found, out)
			}
			args = nil
		}
		if err != nil {
			break
		}
	}
	for _, args := range found {
		reqs = append(reqs, string(bytes.Join(args, []byte("|"))))
	}
	return reqs, err == nil && (len(buf) > 0 || len(args) > 0 || p.left > 0), err
}

// splitStream is a stream of every kind of request: multibulks with
// small, empty and large arguments, inline lines with quotes and escapes,
// and empty requests.
func splitStream() []byte {
	var b bytes.Buffer
	for i := range 40 {
		v := strings.Repeat(string(rune('a'+i%26)), i*37%1000)
		b.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n")
		if i%3 == 0 {
			b.WriteString("SET k \"a \\x41\\n\" 'it\\'s'\r\n\r\n*0\r\n")
		}
		if i%5 == 0 {
			b.WriteString("*10\r\n" + strings.Repeat("$1\r\nx\r\n", 10) + "*-1\r\n*1\r\n$0\r\n\r\n")
		}
	}
	return b.Bytes()
}

// TestRequestParserPiecesAgreeWithWhole feeds a stream in pieces of many
// sizes and checks that the parser finds the same requests as when it is
// parsed whole, for a valid stream, one cut inside a request and one with
// a malformed request after valid ones.
func TestRequestParserPiecesAgreeWithWhole(t *testing.T) {
	valid := splitStream()
	for name, stream := range map[string][]byte{
		"valid":     valid,
		"cut":       valid[:len(valid)-5],
		"malformed": append(bytes.Clone(valid), "*2\r\n$3\r\nGET\r\n+k\r\n"...),
	} {
		wantReqs, wantCut, wantErr := parseWhole(stream, testLimits)
		if len(wantReqs) < 40 {
			t.Fatalf("%s: %d requests parsed whole (%v)", name, len(wantReqs), wantErr)
		}
		for _, steps := range [][]int{{1}, {2}, {3}, {7}, {64}, {1000}, {1, 999, 3, 4096, 17}} {
			reqs, cut, err := parseInPieces(stream, steps, testLimits)
			if !slices.Equal(reqs, wantReqs) || cut != wantCut || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("%s in pieces of %v: %d requests, cut %v, %v; whole: %d, cut %v, %v",
					name, steps, len(reqs), cut, err, len(wantReqs), wantCut, wantErr)
			}
		}
	}
}
