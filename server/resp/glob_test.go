package resp

import (
	"strings"
	"testing"
	"time"
)

var globCases = []struct {
	pattern, s string
	nocase     bool
	want       bool
}{
	// Empty strings: only the empty pattern matches the empty string.
	{"", "", false, true},
	{"", "a", false, false},
	{"a", "", false, false},
	{"*", "", false, false},
	{"**", "", false, false},
	// Literals, ? and *.
	{"hello", "hello", false, true},
	{"hello", "hell", false, false},
	{"hello", "helloo", false, false},
	{"h?llo", "hello", false, true},
	{"h?llo", "hllo", false, false},
	{"?", "", false, false},
	{"??", "a", false, false},
	{"*", "anything", false, true},
	{"**", "x", false, true},
	{"a*", "a", false, true},
	{"a**", "a", false, true},
	{"*a", "a", false, true},
	{"*a", "ba", false, true},
	{"*a", "ab", false, false},
	{"h*llo", "hllo", false, true},
	{"h*llo", "heeeello", false, true},
	{"a*b", "acbd", false, false},
	{"a*b*c", "aXbYc", false, true},
	{"a*b*c", "aXcYb", false, false},
	{"user:*:name", "user:42:name", false, true},
	{"user:*:name", "user:42:mail", false, false},
	{"*?", "a", false, true},
	{"*?*", "", false, false},
	// Classes.
	{"h[ae]llo", "hello", false, true},
	{"h[ae]llo", "hallo", false, true},
	{"h[ae]llo", "hillo", false, false},
	{"h[^e]llo", "hallo", false, true},
	{"h[^e]llo", "hello", false, false},
	{"h[a-b]llo", "hbllo", false, true},
	{"h[a-b]llo", "hcllo", false, false},
	{"[b-a]", "a", false, true}, // a reversed range is swapped
	{"[a-cx-z]", "y", false, true},
	{"[a-cx-z]", "m", false, false},
	{"[\\]]", "]", false, true},
	{"[\\-]", "-", false, true},
	{"[]]", "]", false, false}, // ']' closes the empty class at once...
	{"[]]", "]]", false, false},
	{"[a-]", "_", false, true}, // ...and "a-]" is the range ']'..'a'
	{"[a-]", "-", false, false},
	{"[abc", "a", false, true}, // an unterminated class runs to the end
	{"[abc", "d", false, false},
	{"[abc", "ab", false, false},
	{"[", "[", false, false},
	{"[^", "x", false, true},
	{"[^", "", false, false},
	{"x[", "x", false, false}, // the string ends before the class can match
	{"x[a", "xa", false, true},
	// Escapes.
	{"\\*", "*", false, true},
	{"\\*", "a", false, false},
	{"\\?", "?", false, true},
	{"\\[a]", "[a]", false, true},
	{"a\\", "a\\", false, true}, // a trailing backslash is literal
	{"a\\", "a", false, false},
	{"\\\\", "\\", false, true},
	// Case folding.
	{"HELLO", "hello", false, false},
	{"HELLO", "hello", true, true},
	{"h[A-Z]llo", "hello", true, true},
	{"h[A-Z]llo", "hello", false, false},
	{"h[E]llo", "hello", true, true},
	{"[\\E]", "e", true, false}, // escaped class members keep their case
	{"\\E", "e", true, true},    // escaped literals do not
	// C's signed chars: bytes from 0x80 sort below ASCII in ranges.
	{"[Z-a]", "_", false, true},
	{"[Z-a]", "b", true, false}, // bounds are ordered before folding: z..a is empty
	{"[a-\xff]", "b", false, false},
	{"[a-\xff]", "A", false, true},
	{"[a-\xff]", "\x00", false, true},
	{"[a-\xff]", "\x80", false, false},
	{"[\x80-\xff]", "\x90", false, true},
	{"\xe9t\xe9", "\xe9t\xe9", true, true},
}

func TestGlobMatch(t *testing.T) {
	for _, c := range globCases {
		if got := GlobMatch([]byte(c.pattern), []byte(c.s), c.nocase); got != c.want {
			t.Errorf("GlobMatch(%q, %q, %v) = %v, want %v", c.pattern, c.s, c.nocase, got, c.want)
		}
		if got := globRef([]byte(c.pattern), []byte(c.s), c.nocase); got != c.want {
			t.Errorf("globRef(%q, %q, %v) = %v, want %v", c.pattern, c.s, c.nocase, got, c.want)
		}
	}
}

// Patterns that make naive backtracking exponential finish quickly.
func TestGlobMatchPathological(t *testing.T) {
	pat := []byte(strings.Repeat("a*", 40) + "b")
	s := []byte(strings.Repeat("a", 200))
	start := time.Now()
	if GlobMatch(pat, s, false) {
		t.Fatal("matched")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
}

// Redis gives up below 1000 nested stars: such a pattern matches nothing,
// even a string it would otherwise match.
func TestGlobMatchNestingLimit(t *testing.T) {
	pat := []byte(strings.Repeat("a*", 1001) + "a")
	s := []byte(strings.Repeat("a", 1002))
	if GlobMatch(pat, s, false) {
		t.Error("a pattern nesting 1001 stars matched")
	}
	pat = []byte(strings.Repeat("a*", 999) + "a")
	if !GlobMatch(pat, s, false) {
		t.Error("a pattern nesting 999 stars did not match")
	}
}

// globRef is the reference matcher: the semantics of GlobMatch restated as
// a memoised recursion over (pattern suffix, string suffix) with classes
// parsed up front, and no early cut-off.
func globRef(pat, str []byte, nocase bool) bool {
	memo := map[[2]int]bool{}
	var match func(p, s int) bool
	match = func(p, s int) bool {
		key := [2]int{p, s}
		if v, ok := memo[key]; ok {
			return v
		}
		v := refStep(pat, str, p, s, nocase, match)
		memo[key] = v
		return v
	}
	return match(0, 0)
}

// refStep decides a match of pat[p:] against str[s:]. A call on an empty
// string matches only an empty pattern; after a byte is consumed, the
// stars left when the string runs out match nothing and are skipped.
func refStep(pat, str []byte, p, s int, nocase bool, match func(p, s int) bool) bool {
	if s == len(str) {
		return p == len(pat)
	}
	if p == len(pat) {
		return false
	}
	if pat[p] == '*' {
		for p < len(pat) && pat[p] == '*' {
			p++
		}
		if p == len(pat) {
			return true
		}
		for i := s; i < len(str); i++ {
			if match(p, i) {
				return true
			}
		}
		return false
	}
	next, ok := refToken(pat, p, str[s], nocase)
	if !ok {
		return false
	}
	if s+1 == len(str) {
		for next < len(pat) && pat[next] == '*' {
			next++
		}
		return next == len(pat)
	}
	return match(next, s+1)
}

// refToken matches one non-star token at pat[p] against c and returns
// where the pattern continues.
func refToken(pat []byte, p int, c byte, nocase bool) (int, bool) {
	eq := func(a, b byte) bool {
		return a == b || nocase && asciiFold(int(a)) == asciiFold(int(b))
	}
	switch {
	case pat[p] == '?':
		return p + 1, true
	case pat[p] == '\\' && p+1 < len(pat):
		return p + 2, eq(pat[p+1], c)
	case pat[p] != '[':
		return p + 1, eq(pat[p], c)
	}
	body := pat[p+1:]
	negate := len(body) > 0 && body[0] == '^'
	if negate {
		body = body[1:]
	}
	end := len(pat) // unterminated: the class swallows the rest
	found := false
	for i := 0; i < len(body); {
		switch {
		case body[i] == '\\' && len(body)-i >= 2:
			found = found || body[i+1] == c
			i += 2
		case body[i] == ']':
			end = len(pat) - len(body) + i + 1
			i = len(body)
		case len(body)-i >= 3 && body[i+1] == '-':
			found = found || refRange(body[i], body[i+2], c, nocase)
			i += 3
		default:
			found = found || eq(body[i], c)
			i++
		}
	}
	return end, found != negate
}

// refRange compares as signed chars; the bounds are put in order and only
// then folded, so a folded range can come out empty.
func refRange(a, b, c byte, nocase bool) bool {
	lo, hi, x := int(int8(a)), int(int8(b)), int(int8(c))
	lo, hi = min(lo, hi), max(lo, hi)
	if nocase {
		lo, hi, x = asciiFold(lo), asciiFold(hi), asciiFold(x)
	}
	return lo <= x && x <= hi
}

func asciiFold(v int) int {
	if v >= 'A' && v <= 'Z' {
		return v + 32
	}
	return v
}
