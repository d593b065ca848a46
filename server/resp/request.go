package resp

import (
	"bytes"
	"slices"
)

// Request limits. Clients that have not authenticated may send only small
// requests, as in Redis 7, so that an unauthenticated peer cannot make the
// node buffer large commands it will refuse anyway.
const (
	// MaxInline is the longest inline request line (Redis's
	// PROTO_INLINE_MAX_SIZE).
	MaxInline = 64 << 10
	// maxHeaderLine bounds a "*<count>" or "$<len>" line after its type
	// byte: room for 18 digits, a sign and CRLF.
	maxHeaderLine = 32
	// PreAuthMaxArgs and PreAuthMaxBulk are the limits before AUTH.
	PreAuthMaxArgs = 10
	PreAuthMaxBulk = 16 << 10
)

// RequestLimits bound what a client request may declare. They are checked
// as soon as a header is read, before its payload arrives, so a client
// announcing a 10 GB bulk or a billion arguments is refused at once.
type RequestLimits struct {
	MaxBulk int64 // largest bulk argument (proto-max-bulk-len)
	MaxArgs int64 // most arguments in one multibulk request
	PreAuth bool  // the client has not authenticated: the smaller limits apply
}

// RequestError is a malformed or over-limit request. Redis answers it with
// "-ERR Protocol error: <Msg>" and closes the connection.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return "Protocol error: " + e.Msg }

var (
	errInvalidMultibulk = &RequestError{"invalid multibulk length"}
	errInvalidBulk      = &RequestError{"invalid bulk length"}
	errUnauthMultibulk  = &RequestError{"unauthenticated multibulk length"}
	errUnauthBulk       = &RequestError{"unauthenticated bulk length"}
	errTooBigInline     = &RequestError{"too big inline request"}
	errUnbalancedQuotes = &RequestError{"unbalanced quotes in request"}
)

// ParseRequest reads one client request from the start of buf: a RESP
// multibulk ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") or an inline line ("GET k\r\n")
// split the way Redis splits it (sdssplitargs: double quotes with \xHH and
// \n-style escapes, single quotes with \', a closing quote followed by a
// space or the end of the line).
//
// It appends the request's arguments to args and returns them with the
// number of bytes used. A blank inline line and "*0" or "*-1" are requests
// with no arguments, which callers skip. When buf holds only a prefix of a
// request, n is 0 and need is a lower bound on the length of the whole
// request, as far as its headers tell. A malformed or over-limit request
// returns a *[RequestError], as soon as the bytes that break the rule are
// in buf.
//
// The arguments alias buf: multibulk arguments are slices of it, and
// inline arguments are unescaped in place within their line. The caller
// owns buf and must not overwrite it while arguments are in use.
//
// ParseRequest starts afresh on every call; a reader whose requests arrive
// in pieces uses a [RequestParser], which resumes where it stopped.
func ParseRequest(buf []byte, lim RequestLimits, args [][]byte) (out [][]byte, n, need int, err error) {
	var p RequestParser
	out, n, need, err = p.Next(buf, lim, args)
	if need > 0 {
		return args, 0, n + need, nil
	}
	return out, n, need, err
}

// RequestParser parses a stream of requests that arrives in pieces, as
// [ParseRequest] parses one, but keeps what it found in a request cut short
// by the end of its input: a multibulk request's arguments so far and how
// many are left, or how far an inline line was searched for its end. Each
// call goes on from there, so every byte of the stream is parsed once
// however the stream is cut. (Parsing a request again from its start after
// every read made a request of n small arguments cost O(n²): a
// million-argument MGET took more than five minutes, issue 23.)
//
// The zero value is ready for the first request.
type RequestParser struct {
	left    int64 // bulks still to read of the multibulk request begun; 0 when none is
	first   int   // where that request's arguments start in args
	scanned int   // bytes of an inline line searched without finding its end
}

// Next parses from the start of buf, which must continue the stream where
// the previous call stopped: after the n bytes that call used. It appends a
// request's arguments to args and returns args, the bytes used and need.
//
// need is 0 when the request is complete (or err is set). need > 0 means
// that it is not: out then holds its arguments found so far, which the
// next call must get back as args, and need is a lower bound on the
// length of the next call's buf, as far as the headers tell. The bytes used
// by an incomplete request hold those arguments: the caller must not
// overwrite them while the arguments are in use, but it may move the rest
// of buf elsewhere before adding to it.
//
// A malformed or over-limit request returns a *[RequestError] (as soon as
// the bytes that break the rule are in buf) and args without the request's
// arguments; the parser is then ready for a new stream.
func (p *RequestParser) Next(buf []byte, lim RequestLimits, args [][]byte) (out [][]byte, n, need int, err error) {
	switch {
	case p.left > 0:
		return p.bulks(buf, 0, lim, args)
	case len(buf) == 0:
		return args, 0, 1, nil
	case buf[0] == '*':
		return p.multibulk(buf, lim, args)
	}
	return p.inline(buf, args)
}

// multibulk parses "*<count>" then as many of its count bulks as buf holds.
func (p *RequestParser) multibulk(buf []byte, lim RequestLimits, args [][]byte) ([][]byte, int, int, error) {
	count, pos, err := headerLine(buf, 0, errInvalidMultibulk)
	switch {
	case err != nil:
		return args, 0, 0, err
	case pos == 0:
		return args, 0, len(buf) + 1, nil
	case count > lim.MaxArgs:
		return args, 0, 0, errInvalidMultibulk
	case count > PreAuthMaxArgs && lim.PreAuth:
		return args, 0, 0, errUnauthMultibulk
	case count <= 0:
		return args, pos, 0, nil // Redis ignores empty multibulks
	}
	p.left, p.first = count, len(args)
	return p.bulks(buf, pos, lim, args)
}

// bulks reads the bulks "$<len>" <payload> left of the request begun,
// from buf[pos:].
func (p *RequestParser) bulks(buf []byte, pos int, lim RequestLimits, args [][]byte) ([][]byte, int, int, error) {
	for ; p.left > 0; p.left-- {
		if pos >= len(buf) {
			return args, pos, 1, nil // the next byte may already be wrong
		}
		if buf[pos] != '$' {
			return p.fail(args, &RequestError{"expected '$', got '" + string(buf[pos]) + "'"})
		}
		size, next, err := headerLine(buf, pos, errInvalidBulk)
		if err != nil {
			return p.fail(args, err)
		}
		if next == 0 {
			return args, pos, len(buf) - pos + 1, nil
		}
		if err := checkBulk(size, lim); err != nil {
			return p.fail(args, err)
		}
		end := next + int(size)
		if end+2 > len(buf) {
			return args, pos, end + 2 - pos, nil
		}
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return p.fail(args, errInvalidBulk)
		}
		if len(args) == cap(args) {
			args = growArgs(args, p.left)
		}
		args = append(args, buf[next:end:end])
		pos = end + 2
	}
	return args, pos, 0, nil
}

// growArgs doubles the room in args, up to the left arguments a request
// still declares. Doubling, where append grows a large slice by a quarter,
// halves the bytes a request of a million arguments allocates and clears
// for its vector; and a count is only allocated as its arguments arrive.
func growArgs(args [][]byte, left int64) [][]byte {
	return slices.Grow(args, int(min(left, int64(max(cap(args), 8)))))
}

// fail drops the arguments of the request begun and resets the parser.
func (p *RequestParser) fail(args [][]byte, err error) ([][]byte, int, int, error) {
	first := p.first
	*p = RequestParser{}
	return args[:first], 0, 0, err
}

func checkBulk(size int64, lim RequestLimits) error {
	switch {
	case size < 0 || size > lim.MaxBulk:
		return errInvalidBulk
	case size > PreAuthMaxBulk && lim.PreAuth:
		return errUnauthBulk
	}
	return nil
}

// headerLine reads the decimal after the type byte at buf[at] up to CRLF.
// It returns the value and the offset after the line; next is 0 when the
// line is not complete yet. A line that is too long, lacks its CR or is not
// an integer by ParseInt's rules (no '+', no leading zero) is refused with
// invalid.
func headerLine(buf []byte, at int, invalid error) (v int64, next int, err error) {
	line := buf[at+1 : min(len(buf), at+1+maxHeaderLine)]
	i := bytes.IndexByte(line, '\n')
	if i < 0 {
		if len(line) == maxHeaderLine {
			return 0, 0, invalid
		}
		return 0, 0, nil
	}
	if i == 0 || line[i-1] != '\r' {
		return 0, 0, invalid
	}
	v, ok := ParseInt(line[:i-1]) // string2ll, as Redis reads these lines
	if !ok {
		return 0, 0, invalid
	}
	return v, at + 1 + i + 1, nil
}

// inline splits one inline request line, searching for its end from where
// the previous call stopped.
func (p *RequestParser) inline(buf []byte, args [][]byte) ([][]byte, int, int, error) {
	limit := min(len(buf), MaxInline)
	from := min(p.scanned, limit)
	i := bytes.IndexByte(buf[from:limit], '\n')
	if i < 0 {
		if len(buf) >= MaxInline {
			p.scanned = 0
			return args, 0, 0, errTooBigInline
		}
		p.scanned = limit
		return args, 0, len(buf) + 1, nil
	}
	p.scanned = 0
	i += from
	line := buf[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	out, err := splitInline(line, args)
	if err != nil {
		return args, 0, 0, err
	}
	return out, i + 1, 0, nil
}

// splitInline splits line into arguments as Redis's sdssplitargs does,
// writing each unescaped argument over the line (an argument never grows
// when unescaped, so the write position never passes the read position).
func splitInline(line []byte, args [][]byte) ([][]byte, error) {
	first := len(args)
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return args, nil
		}
		start, w := p, p
		var err error
		p, w, err = inlineArg(line, p, w)
		if err != nil {
			return args[:first], err
		}
		args = append(args, line[start:w:w])
	}
}

// inlineArg reads one argument starting at line[p], writing its bytes from
// line[w], and returns the read and write positions after it.
func inlineArg(line []byte, p, w int) (int, int, error) {
	var quote byte // '"' or '\'' while inside quotes
	for p < len(line) {
		c := line[p]
		switch {
		case quote == '"' && c == '\\' && p+3 < len(line) && line[p+1] == 'x' && isHex(line[p+2]) && isHex(line[p+3]):
			c = hexVal(line[p+2])<<4 | hexVal(line[p+3])
			p += 3
		case quote == '"' && c == '\\' && p+1 < len(line):
			p++
			c = unescape(line[p])
		case quote == '\'' && c == '\\' && p+1 < len(line) && line[p+1] == '\'':
			p++
			c = '\''
		case quote != 0 && c == quote:
			if p+1 < len(line) && !isSpace(line[p+1]) {
				return 0, 0, errUnbalancedQuotes // closing quote must end the argument
			}
			return p + 1, w, nil
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
			p++
			continue
		case quote == 0 && isSpace(c):
			return p, w, nil
		}
		line[w] = c
		w++
		p++
	}
	if quote != 0 {
		return 0, 0, errUnbalancedQuotes
	}
	return p, w, nil
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
