package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Parse errors. Errors other than ErrIncomplete wrap ErrProtocol.
var (
	// ErrIncomplete means buf ends before the reply does: read more and
	// call Parse again with the longer buffer.
	ErrIncomplete = errors.New("resp: incomplete reply")
	// ErrProtocol means buf does not hold a valid RESP2 or RESP3 reply.
	ErrProtocol = errors.New("resp: protocol error")
)

// Parser limits. Bulk strings follow Redis's default proto-max-bulk-len;
// nesting beyond maxDepth is refused rather than recursed into.
const (
	maxBulkLen      = 512 << 20
	maxAggregateLen = 1<<31 - 1
	maxDepth        = 128
)

// Parse reads one RESP2 or RESP3 reply from the start of buf and returns it
// with the number of bytes it used. It returns [ErrIncomplete] when buf
// holds only a prefix of a reply, and an error wrapping [ErrProtocol] when
// buf is malformed. It never panics and copies what it keeps, so buf may be
// reused afterwards.
//
// Simple strings and errors must not contain CR or LF; "$-1" parses to
// [Nil] and "*-1" to [NilArray]; a RESP3 blob error parses to an error
// reply; attributes parse to a reply of [KindAttribute] wrapping the value
// that follows them. Streamed RESP3 strings and aggregates ($?, *?), which
// Redis never sends, are refused.
func Parse(buf []byte) (r Reply, n int, err error) {
	return parse(buf, false)
}

// ParseOwned is Parse for a buffer the caller hands over: bulk strings
// are buf's own bytes, not copies (BulkOwned), so buf must never be
// modified again. A node relays a coordinator's 512 MiB reply this way.
func ParseOwned(buf []byte) (r Reply, n int, err error) {
	return parse(buf, true)
}

func parse(buf []byte, owned bool) (r Reply, n int, err error) {
	p := parser{buf: buf, owned: owned}
	r, err = p.reply(0)
	if err != nil {
		return Reply{}, 0, err
	}
	return r, p.pos, nil
}

type parser struct {
	buf   []byte
	pos   int
	owned bool // bulk strings keep buf's bytes (ParseOwned)
}

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

func (p *parser) reply(depth int) (Reply, error) {
	if depth > maxDepth {
		return Reply{}, protoErr("nesting deeper than %d", maxDepth)
	}
	if p.pos >= len(p.buf) {
		return Reply{}, ErrIncomplete
	}
	t := p.buf[p.pos]
	p.pos++
	line, err := p.line()
	if err != nil {
		return Reply{}, err
	}
	switch t {
	case '+', '-', ':', '_', ',', '#', '(':
		return scalar(t, line)
	case '$', '!', '=':
		return p.blob(t, line)
	case '*', '%', '~', '>', '|':
		return p.aggregate(t, line, depth)
	}
	return Reply{}, protoErr("unknown type byte %q", t)
}

// line returns the bytes up to the next CRLF and moves past it.
func (p *parser) line() ([]byte, error) {
	i := bytes.Index(p.buf[p.pos:], crlf)
	if i < 0 {
		return nil, ErrIncomplete
	}
	l := p.buf[p.pos : p.pos+i]
	p.pos += i + 2
	return l, nil
}

// scalar parses the single-line types.
func scalar(t byte, line []byte) (Reply, error) {
	switch t {
	case '+', '-':
		if bytes.ContainsAny(line, "\r\n") {
			return Reply{}, protoErr("CR or LF inside a simple string or error")
		}
		k := KindSimple
		if t == '-' {
			k = KindError
		}
		return Reply{kind: k, str: string(line)}, nil
	case ':':
		n, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil {
			return Reply{}, protoErr("bad integer %q", line)
		}
		return Int(n), nil
	case '_':
		if len(line) != 0 {
			return Reply{}, protoErr("bad null %q", line)
		}
		return Nil(), nil
	case ',':
		f, err := strconv.ParseFloat(string(line), 64)
		if err != nil {
			return Reply{}, protoErr("bad double %q", line)
		}
		return Double(f), nil
	case '#':
		if len(line) != 1 || (line[0] != 't' && line[0] != 'f') {
			return Reply{}, protoErr("bad boolean %q", line)
		}
		return Bool(line[0] == 't'), nil
	}
	if !isBigNumber(line) {
		return Reply{}, protoErr("bad big number %q", line)
	}
	return BigNumber(string(line)), nil
}

func isBigNumber(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// blob parses the length-prefixed types: bulk strings, blob errors and
// verbatim strings.
func (p *parser) blob(t byte, line []byte) (Reply, error) {
	if t == '$' && string(line) == "-1" {
		return Nil(), nil
	}
	n, ok := parseLen(line, maxBulkLen)
	if !ok {
		return Reply{}, protoErr("bad length %q", line)
	}
	if len(p.buf)-p.pos < n+2 {
		return Reply{}, ErrIncomplete
	}
	data := p.buf[p.pos : p.pos+n]
	if p.buf[p.pos+n] != '\r' || p.buf[p.pos+n+1] != '\n' {
		return Reply{}, protoErr("missing CRLF after %d bytes", n)
	}
	p.pos += n + 2
	switch t {
	case '!':
		return Reply{kind: KindError, str: string(data)}, nil
	case '=':
		if n < 4 || data[3] != ':' {
			return Reply{}, protoErr("verbatim string without a format")
		}
		return Reply{kind: KindVerbatim, str: string(data)}, nil
	}
	if p.owned {
		return BulkOwned(data), nil
	}
	return Bulk(data), nil
}

var aggregateKinds = map[byte]Kind{
	'*': KindArray, '%': KindMap, '~': KindSet, '>': KindPush, '|': KindAttribute,
}

// aggregate parses arrays, maps, sets, pushes and attributes. Maps and
// attributes count pairs; an attribute is followed by the value it
// annotates, kept as its last item.
func (p *parser) aggregate(t byte, line []byte, depth int) (Reply, error) {
	if t == '*' && string(line) == "-1" {
		return NilArray(), nil
	}
	n, ok := parseLen(line, maxAggregateLen)
	if !ok {
		return Reply{}, protoErr("bad length %q", line)
	}
	if t == '%' || t == '|' {
		n *= 2
	}
	total := n
	if t == '|' {
		total++
	}
	// Every item takes at least three bytes, which bounds the allocation
	// a short, hostile buffer can cause.
	items := make([]Reply, 0, min(total, (len(p.buf)-p.pos)/3+1))
	for range total {
		it, err := p.reply(depth + 1)
		if err != nil {
			return Reply{}, err
		}
		items = append(items, it)
	}
	return Reply{kind: aggregateKinds[t], items: items}, nil
}

// parseLen parses a non-negative decimal length no larger than limit.
func parseLen(b []byte, limit int) (int, bool) {
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= limit
}
