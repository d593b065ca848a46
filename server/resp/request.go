package resp

import "bytes"

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
func ParseRequest(buf []byte, lim RequestLimits, args [][]byte) (out [][]byte, n, need int, err error) {
	if len(buf) == 0 {
		return args, 0, 1, nil
	}
	if buf[0] == '*' {
		return parseMultibulk(buf, lim, args)
	}
	return parseInline(buf, args)
}

// parseMultibulk parses "*<count>" then count bulks "$<len>" <payload>.
func parseMultibulk(buf []byte, lim RequestLimits, args [][]byte) ([][]byte, int, int, error) {
	count, pos, err := headerLine(buf, 0, errInvalidMultibulk)
	if pos == 0 || err != nil {
		return args, 0, len(buf) + 1, err
	}
	switch {
	case count > lim.MaxArgs:
		return args, 0, 0, errInvalidMultibulk
	case count > PreAuthMaxArgs && lim.PreAuth:
		return args, 0, 0, errUnauthMultibulk
	case count <= 0:
		return args, pos, 0, nil // Redis ignores empty multibulks
	}
	first := len(args)
	for range count {
		if pos >= len(buf) {
			return args[:first], 0, pos + 4, nil // "$0\r\n" at least
		}
		if buf[pos] != '$' {
			return args[:first], 0, 0, &RequestError{"expected '$', got '" + string(buf[pos]) + "'"}
		}
		size, next, err := headerLine(buf, pos, errInvalidBulk)
		if err != nil {
			return args[:first], 0, 0, err
		}
		if next == 0 {
			return args[:first], 0, len(buf) + 1, nil
		}
		if err := checkBulk(size, lim); err != nil {
			return args[:first], 0, 0, err
		}
		end := next + int(size)
		if end+2 > len(buf) {
			return args[:first], 0, end + 2, nil
		}
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return args[:first], 0, 0, errInvalidBulk
		}
		args = append(args, buf[next:end:end])
		pos = end + 2
	}
	return args, pos, 0, nil
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

// parseInline splits one inline request line.
func parseInline(buf []byte, args [][]byte) ([][]byte, int, int, error) {
	i := bytes.IndexByte(buf[:min(len(buf), MaxInline)], '\n')
	if i < 0 {
		if len(buf) >= MaxInline {
			return args, 0, 0, errTooBigInline
		}
		return args, 0, len(buf) + 1, nil
	}
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
