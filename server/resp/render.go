package resp

import (
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/memgest/memgest/internal/bigcopy"
)

// AppendTo appends r's wire form for protocol version proto (3 for RESP3,
// anything else for RESP2) to dst and returns the extended slice.
//
// RESP2 gets RESP3 types the way Redis 7 sends them to RESP2 clients: null
// becomes $-1 (or *-1 for [NilArray]), maps flatten to arrays of 2N items,
// sets and pushes become arrays, doubles, verbatim strings and big numbers
// become bulk strings, booleans become :1 or :0, and attributes are dropped
// leaving their value. The zero Reply renders to nothing.
func (r Reply) AppendTo(dst []byte, proto int) []byte {
	resp3 := proto == 3
	switch r.kind {
	case KindNone:
		return dst
	case KindSimple:
		return appendLine(dst, '+', r.str)
	case KindError:
		return appendError(dst, r.str, resp3)
	case KindInt:
		return append(strconv.AppendInt(append(dst, ':'), r.num, 10), crlf...)
	case KindBulk:
		return appendBulk(dst, '$', r.str)
	case KindNil, KindNilArray:
		return appendNull(dst, r.kind, resp3)
	case KindArray:
		return r.appendAggregate(dst, '*', len(r.items), proto)
	}
	if resp3 {
		return r.appendResp3(dst)
	}
	return r.appendDegraded(dst)
}

var crlf = []byte("\r\n")

// appendResp3 renders the RESP3-only kinds natively.
func (r Reply) appendResp3(dst []byte) []byte {
	switch r.kind {
	case KindMap:
		return r.appendAggregate(dst, '%', len(r.items)/2, 3)
	case KindSet:
		return r.appendAggregate(dst, '~', len(r.items), 3)
	case KindPush:
		return r.appendAggregate(dst, '>', len(r.items), 3)
	case KindAttribute:
		return r.appendAggregate(dst, '|', len(r.items)/2, 3)
	case KindDouble:
		return appendLine(dst, ',', formatDouble(r.Float()))
	case KindBool:
		if r.num != 0 {
			return append(dst, "#t\r\n"...)
		}
		return append(dst, "#f\r\n"...)
	case KindVerbatim:
		return appendBulk(dst, '=', r.str)
	case KindBigNumber:
		return appendLine(dst, '(', r.str)
	}
	return dst
}

// appendDegraded renders the RESP3-only kinds for a RESP2 client.
func (r Reply) appendDegraded(dst []byte) []byte {
	switch r.kind {
	case KindMap, KindSet, KindPush:
		return r.appendAggregate(dst, '*', len(r.items), 2)
	case KindAttribute:
		return r.items[len(r.items)-1].AppendTo(dst, 2)
	case KindDouble:
		return appendBulk(dst, '$', formatDouble(r.Float()))
	case KindBool:
		return append(strconv.AppendInt(append(dst, ':'), r.num, 10), crlf...)
	case KindVerbatim:
		return appendBulk(dst, '$', r.str[4:])
	case KindBigNumber:
		return appendBulk(dst, '$', r.str)
	}
	return dst
}

// appendAggregate writes the header of an aggregate with n entries, then
// every item; an attribute writes its value after the pairs.
func (r Reply) appendAggregate(dst []byte, prefix byte, n int, proto int) []byte {
	dst = strconv.AppendInt(append(dst, prefix), int64(n), 10)
	dst = append(dst, crlf...)
	for _, it := range r.items {
		dst = it.AppendTo(dst, proto)
	}
	return dst
}

func appendLine(dst []byte, prefix byte, s string) []byte {
	dst = append(append(dst, prefix), s...)
	return append(dst, crlf...)
}

func appendBulk(dst []byte, prefix byte, s string) []byte {
	dst = strconv.AppendInt(append(dst, prefix), int64(len(s)), 10)
	dst = bigcopy.Append(append(dst, crlf...), stringBytes(s))
	return append(dst, crlf...)
}

// AppendHead is AppendTo for a reply written with writev, whose large
// bulk string is not copied: for a bulk string of more than inline bytes
// it appends only the header and returns the string's bytes as body, to
// be written after dst and followed by CRLF (BulkEnd); for any other
// reply it is AppendTo, and body is nil. body must not be modified.
func (r Reply) AppendHead(dst []byte, proto int, inline int) (out, body []byte) {
	if r.kind != KindBulk || len(r.str) <= inline {
		return r.AppendTo(dst, proto), nil
	}
	dst = strconv.AppendInt(append(dst, '$'), int64(len(r.str)), 10)
	return append(dst, crlf...), stringBytes(r.str)
}

// BulkEnd is what follows a bulk string's bytes.
const BulkEnd = "\r\n"

// stringBytes is s's bytes, for writing only.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// appendError writes a simple error. An error parsed from a RESP3 blob
// error may hold CR or LF: RESP3 gets it back as a blob error, RESP2 with
// the line breaks turned into spaces.
func appendError(dst []byte, msg string, resp3 bool) []byte {
	if !strings.ContainsAny(msg, "\r\n") {
		return appendLine(dst, '-', msg)
	}
	if resp3 {
		return appendBulk(dst, '!', msg)
	}
	return appendLine(dst, '-', noNewlines(msg))
}

func appendNull(dst []byte, k Kind, resp3 bool) []byte {
	switch {
	case resp3:
		return append(dst, "_\r\n"...)
	case k == KindNilArray:
		return append(dst, "*-1\r\n"...)
	default:
		return append(dst, "$-1\r\n"...)
	}
}

// formatDouble renders f as Redis 7.2's d2string does: "nan", "inf",
// "-inf", "0", "-0", integral values within ±2^62 as integers, and other
// values as the shortest digits that round-trip laid out like fpconv_dtoa
// (plain up to seven leading or trailing zeros, scientific beyond).
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		if math.Signbit(f) {
			return "-0"
		}
		return "0"
	case f == math.Trunc(f) && math.Abs(f) <= math.MaxInt64/2:
		return strconv.FormatInt(int64(f), 10)
	}
	return dtoa(f)
}

// dtoa lays out the shortest round-trip digits of f the way fpconv_dtoa
// does; k is the power of ten of the last digit.
func dtoa(f float64) string {
	e := strconv.FormatFloat(math.Abs(f), 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	nd := len(digits)
	k := x - nd + 1
	neg := ""
	if f < 0 {
		neg = "-"
	}
	absExp := x
	if absExp < 0 {
		absExp = -absExp
	}
	switch {
	case k >= 0 && absExp < nd+7:
		return neg + digits + strings.Repeat("0", k)
	case k < 0 && (k > -7 || absExp < 4):
		if off := nd + k; off > 0 {
			return neg + digits[:off] + "." + digits[off:]
		}
		return neg + "0." + strings.Repeat("0", -(nd+k)) + digits
	}
	// Shortest digits of a float64 never exceed 17, so fpconv's cut to
	// 18 digits never applies.
	s := neg + digits[:1]
	if nd > 1 {
		s += "." + digits[1:]
	}
	sign := "+"
	if x < 0 {
		sign = "-"
	}
	return s + "e" + sign + strconv.Itoa(absExp)
}
