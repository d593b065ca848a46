package resp

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/memgest/memgest/internal/bigcopy"
)

// Kind is the type of a [Reply].
type Kind uint8

// Reply kinds. The zero Kind marks the zero Reply, which argument parsers
// return for "no error" and which renders to nothing.
const (
	KindNone      Kind = iota // zero Reply: nothing to send
	KindSimple                // +OK
	KindError                 // -ERR message (RESP3 blob errors parse to this too)
	KindInt                   // :42
	KindBulk                  // $5 hello
	KindNil                   // $-1 in RESP2, _ in RESP3
	KindNilArray              // *-1 in RESP2, _ in RESP3
	KindArray                 // *N
	KindMap                   // %N in RESP3, flat *2N in RESP2
	KindSet                   // ~N in RESP3, *N in RESP2
	KindPush                  // >N in RESP3, *N in RESP2
	KindDouble                // ,1.5 in RESP3, bulk string in RESP2
	KindBool                  // #t in RESP3, :1 in RESP2
	KindVerbatim              // =15 txt:... in RESP3, bulk string in RESP2
	KindBigNumber             // (123 in RESP3, bulk string in RESP2
	KindAttribute             // |N attributes wrapping a value; RESP2 sends the value only
)

var kindNames = [...]string{
	"none", "simple", "error", "int", "bulk", "nil", "nil-array", "array",
	"map", "set", "push", "double", "bool", "verbatim", "big-number", "attribute",
}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Reply is one RESP reply value. The zero Reply is "no reply" ([KindNone]):
// it renders to nothing, so it must not be put inside an aggregate.
// Replies are immutable values; the constructors copy what they are given
// except the items of aggregates, which they keep.
type Reply struct {
	kind  Kind
	num   int64   // KindInt, KindBool (0/1), KindDouble (float bits)
	str   string  // text of simple, error, bulk, verbatim ("txt:..."), big number
	items []Reply // aggregates; maps and attributes hold key, value, key, value...
}

// OK is the +OK simple string.
func OK() Reply { return Reply{kind: KindSimple, str: "OK"} }

// Simple is a simple (status) string. CR and LF, which the protocol cannot
// carry in a simple string, become spaces.
func Simple(s string) Reply { return Reply{kind: KindSimple, str: noNewlines(s)} }

// Err is an error reply. msg carries the error code, as in "ERR syntax
// error", "WRONGTYPE ..." or "MOVED 3999 127.0.0.1:7002"; CR and LF become
// spaces as Redis does for errors.
func Err(msg string) Reply { return Reply{kind: KindError, str: noNewlines(msg)} }

// Errorf formats an error reply; see [Err].
func Errorf(format string, args ...any) Reply { return Err(fmt.Sprintf(format, args...)) }

// Int is an integer reply.
func Int(n int64) Reply { return Reply{kind: KindInt, num: n} }

// Bulk is a bulk string holding a copy of b. Bulk(nil) is the empty string,
// not null; use [Nil] for null.
func Bulk(b []byte) Reply {
	if len(b) > bigcopy.Step {
		return BulkOwned(bigcopy.Append(nil, b))
	}
	return Reply{kind: KindBulk, str: string(b)}
}

// BulkOwned is a bulk string of b itself, not a copy: the caller hands b
// over and must never modify it again. A GET of a 512 MiB value replies
// with the stored bytes this way; a copy would cost a tenth of a second
// and as much memory again.
func BulkOwned(b []byte) Reply {
	return Reply{kind: KindBulk, str: unsafe.String(unsafe.SliceData(b), len(b))}
}

// BulkString is a bulk string.
func BulkString(s string) Reply { return Reply{kind: KindBulk, str: s} }

// BulkStrings is an array of bulk strings.
func BulkStrings(ss ...string) Reply {
	items := make([]Reply, len(ss))
	for i, s := range ss {
		items[i] = BulkString(s)
	}
	return Array(items...)
}

// Nil is the null reply: $-1 in RESP2 and _ in RESP3 (GET of a missing key).
func Nil() Reply { return Reply{kind: KindNil} }

// NilArray is the null array: *-1 in RESP2 and _ in RESP3 (as Redis sends
// for, e.g., a timed-out BLPOP).
func NilArray() Reply { return Reply{kind: KindNilArray} }

// Array is an array of items; Array() is the empty array.
func Array(items ...Reply) Reply { return Reply{kind: KindArray, items: items} }

// Map is a RESP3 map of key, value, key, value... It renders as a flat
// array in RESP2. It panics on an odd number of items.
func Map(kv ...Reply) Reply {
	if len(kv)%2 != 0 {
		panic("resp: Map needs an even number of items")
	}
	return Reply{kind: KindMap, items: kv}
}

// Set is a RESP3 set; it renders as an array in RESP2.
func Set(items ...Reply) Reply { return Reply{kind: KindSet, items: items} }

// Push is a RESP3 out-of-band push (pub/sub, tracking); it renders as an
// array in RESP2.
func Push(items ...Reply) Reply { return Reply{kind: KindPush, items: items} }

// Double is a RESP3 double; RESP2 gets it as a bulk string in the same
// text form Redis 7.2 uses.
func Double(f float64) Reply { return Reply{kind: KindDouble, num: int64(math.Float64bits(f))} }

// Bool is a RESP3 boolean; RESP2 gets :1 or :0 as Redis sends.
func Bool(b bool) Reply {
	r := Reply{kind: KindBool}
	if b {
		r.num = 1
	}
	return r
}

// Verbatim is a RESP3 verbatim string such as INFO's "txt" reply; RESP2
// gets the text as a bulk string. format must be three bytes; it is cut or
// padded with spaces otherwise.
func Verbatim(format, text string) Reply {
	f := (format + "   ")[:3]
	return Reply{kind: KindVerbatim, str: f + ":" + text}
}

// BigNumber is a RESP3 big number given in decimal, with an optional sign;
// RESP2 gets it as a bulk string.
func BigNumber(decimal string) Reply { return Reply{kind: KindBigNumber, str: decimal} }

// WithAttributes wraps value in RESP3 attributes (key, value, ...). RESP2
// renders only the value. It panics on an odd number of attribute items.
func WithAttributes(value Reply, kv ...Reply) Reply {
	if len(kv)%2 != 0 {
		panic("resp: WithAttributes needs an even number of items")
	}
	items := make([]Reply, 0, len(kv)+1)
	items = append(append(items, kv...), value)
	return Reply{kind: KindAttribute, items: items}
}

// Kind returns the reply's kind.
func (r Reply) Kind() Kind { return r.kind }

// IsZero reports whether r is the zero Reply.
func (r Reply) IsZero() bool { return r.kind == KindNone }

// IsError reports whether r is an error reply.
func (r Reply) IsError() bool { return r.kind == KindError }

// IsNil reports whether r is null of either flavour.
func (r Reply) IsNil() bool { return r.kind == KindNil || r.kind == KindNilArray }

// Text returns the text of a simple string, error, bulk string, verbatim
// string (without its format) or big number, and "" otherwise.
func (r Reply) Text() string {
	if r.kind == KindVerbatim {
		return r.str[4:]
	}
	return r.str
}

// Format returns the three-byte format of a verbatim string, "" otherwise.
func (r Reply) Format() string {
	if r.kind == KindVerbatim {
		return r.str[:3]
	}
	return ""
}

// Int returns the value of an integer or boolean (1 or 0) reply.
func (r Reply) Int() int64 { return r.num }

// Float returns the value of a double reply.
func (r Reply) Float() float64 {
	if r.kind != KindDouble {
		return 0
	}
	return math.Float64frombits(uint64(r.num))
}

// Bool returns the value of a boolean reply.
func (r Reply) Bool() bool { return r.kind == KindBool && r.num != 0 }

// Items returns the elements of an array, set or push, the flat key, value,
// ... list of a map, or the attribute pairs of an attribute reply. The
// slice is shared; do not modify it.
func (r Reply) Items() []Reply {
	if r.kind == KindAttribute {
		return r.items[:len(r.items)-1]
	}
	return r.items
}

// Unwrap returns the value an attribute reply carries, or r itself.
func (r Reply) Unwrap() Reply {
	if r.kind == KindAttribute {
		return r.items[len(r.items)-1]
	}
	return r
}

// Equal reports whether r and o are the same value: same kind, same text or
// number (doubles compare by value, NaN equal to NaN) and equal items.
func (r Reply) Equal(o Reply) bool {
	if r.kind != o.kind || r.str != o.str || len(r.items) != len(o.items) {
		return false
	}
	if r.kind == KindDouble {
		a, b := r.Float(), o.Float()
		if a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
			return false
		}
	} else if r.num != o.num {
		return false
	}
	for i := range r.items {
		if !r.items[i].Equal(o.items[i]) {
			return false
		}
	}
	return true
}

// String renders r for humans, in a redis-cli-like single-line form; it is
// meant for tests and logs, not the wire.
func (r Reply) String() string {
	var b strings.Builder
	r.describe(&b)
	return b.String()
}

func (r Reply) describe(b *strings.Builder) {
	switch r.kind {
	case KindSimple, KindBigNumber:
		b.WriteString(r.str)
	case KindError:
		b.WriteString("(error) " + r.str)
	case KindInt:
		b.WriteString("(integer) " + strconv.FormatInt(r.num, 10))
	case KindBool:
		b.WriteString("(bool) " + strconv.FormatBool(r.num != 0))
	case KindDouble:
		b.WriteString("(double) " + formatDouble(r.Float()))
	case KindBulk, KindVerbatim:
		b.WriteString(strconv.Quote(r.Text()))
	case KindNil, KindNilArray:
		b.WriteString("(nil)")
	case KindNone:
		b.WriteString("(none)")
	default:
		b.WriteString("(" + r.kind.String() + ")[")
		for i, it := range r.items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.describe(b)
		}
		b.WriteString("]")
	}
}

// noNewlines replaces CR and LF with spaces, as Redis does before sending
// an error built from user input.
func noNewlines(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Map(func(c rune) rune {
		if c == '\r' || c == '\n' {
			return ' '
		}
		return c
	}, s)
}
