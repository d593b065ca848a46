package resp

// GlobMatch reports whether s matches the glob pattern as Redis's
// stringmatchlen does for KEYS, SCAN MATCH, CONFIG GET and COMMAND LIST:
//
//   - '*' matches any run of bytes, '?' any one byte;
//   - "[abc]", "[^abc]" and "[a-z]" match classes; a reversed range is
//     swapped; a backslash in a class escapes the next byte, compared
//     with case even under nocase; an unterminated class runs to the end
//     of the pattern;
//   - a backslash outside a class makes the next byte literal; a trailing
//     backslash matches itself;
//   - nocase folds ASCII letters only.
//
// Redis quirks are kept on purpose: an empty string matches only the empty
// pattern, so GlobMatch("*", "") is false (Redis never asks: KEYS * and
// SCAN MATCH * skip matching); range bounds compare as C's signed chars,
// so bytes from 0x80 sort below ASCII; and patterns nesting more than 1000
// stars match nothing.
func GlobMatch(pattern, s []byte, nocase bool) bool {
	skipLonger := false
	return globMatch(pattern, s, nocase, &skipLonger, 0)
}

// globMatch follows stringmatchlen_impl index for index. skipLonger is set
// once the rest of a pattern after a '*' matched no suffix of the string:
// an enclosing '*' trying a longer prefix cannot succeed either, which
// keeps pathological patterns linear rather than exponential.
func globMatch(pat, str []byte, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	p, s := 0, 0
	for p < len(pat) && s < len(str) {
		switch pat[p] {
		case '*':
			for p+1 < len(pat) && pat[p+1] == '*' {
				p++
			}
			if p == len(pat)-1 {
				return true
			}
			for ; s < len(str); s++ {
				if globMatch(pat[p+1:], str[s:], nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			*skipLonger = true
			return false
		case '?':
			s++
		case '[':
			var ok bool
			if p, ok = matchClass(pat, p+1, str[s], nocase); !ok {
				return false
			}
			s++
		case '\\':
			if len(pat)-p >= 2 {
				p++
			}
			fallthrough
		default:
			if !sameByte(pat[p], str[s], nocase) {
				return false
			}
			s++
		}
		p++
		if s == len(str) {
			for p < len(pat) && pat[p] == '*' {
				p++
			}
			break
		}
	}
	return p == len(pat) && s == len(str)
}

// matchClass matches c against the class starting at pat[p], just after
// '['. It returns the index of the class's last byte, its ']' or, when the
// class is unterminated, the pattern's last byte.
func matchClass(pat []byte, p int, c byte, nocase bool) (int, bool) {
	not := p < len(pat) && pat[p] == '^'
	if not {
		p++
	}
	match := false
	for ; ; p++ {
		n := len(pat) - p
		if n >= 2 && pat[p] == '\\' {
			p++
			match = match || pat[p] == c
		} else if n > 0 && pat[p] == ']' {
			break
		} else if n == 0 {
			p--
			break
		} else if n >= 3 && pat[p+1] == '-' {
			match = match || inRange(pat[p], pat[p+2], c, nocase)
			p += 2
		} else {
			match = match || sameByte(pat[p], c, nocase)
		}
	}
	return p, match != not
}

// inRange compares as C does with signed chars: bounds are swapped when
// reversed and folded to lower case under nocase.
func inRange(lo, hi, c byte, nocase bool) bool {
	a, b, x := int(int8(lo)), int(int8(hi)), int(int8(c))
	if a > b {
		a, b = b, a
	}
	if nocase {
		a, b, x = lowerInt(a), lowerInt(b), lowerInt(x)
	}
	return a <= x && x <= b
}

func lowerInt(c int) int {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func sameByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}
