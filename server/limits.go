package server

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// redcon enforces no limits on declared lengths: a client announcing a
// 10 GB bulk or a billion arguments would make it buffer or spin. Every
// client connection is therefore wrapped in a streaming validator of the
// RESP request framing that refuses, with Redis's own error messages and
// before redcon sees the bytes, any multibulk count above max-args, any bulk
// above max-value-size (proto-max-bulk-len) and inline requests above 64 KiB.
// Hand-written: no library validates RESP incrementally.

const (
	maxInline     = 64 << 10 // Redis PROTO_INLINE_MAX_SIZE
	maxHeaderLine = 32       // "*<count>" or "$<len>" with room for digits
	// Before AUTH succeeds a client may send only small requests, as in
	// Redis 7, so that an unauthenticated peer cannot make the node buffer
	// large commands it will refuse anyway.
	preAuthMaxArgs = 10
	preAuthMaxBulk = 16 << 10
)

// limitListener wraps accepted connections in limitConn.
type limitListener struct {
	net.Listener
	maxBulk, maxArgs int64
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitConn{Conn: c}
	lc.t = framing{maxBulk: l.maxBulk, maxArgs: l.maxArgs, preAuth: &lc.preAuth}
	return lc, nil
}

// limitConn refuses requests whose framing exceeds the limits.
type limitConn struct {
	net.Conn
	mu      sync.Mutex
	t       framing
	bad     bool
	preAuth atomic.Bool // the client has not authenticated yet
}

var errProtocolLimit = errors.New("server: protocol limit exceeded")

func (c *limitConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bad {
		return 0, errProtocolLimit
	}
	n, err := c.Conn.Read(p)
	if msg := c.t.feed(p[:n]); msg != "" {
		c.bad = true
		_, _ = c.Conn.Write([]byte("-ERR Protocol error: " + msg + "\r\n"))
		return 0, errProtocolLimit
	}
	return n, err
}

// framing tracks where a request stream is: at the start of a command,
// inside an inline line, in a header line, or skipping bulk payload bytes.
type framing struct {
	maxBulk, maxArgs int64
	state            uint8
	line             []byte // current header line, without the type byte
	lineType         byte   // '*' or '$'
	argsLeft         int64  // bulks still expected in this multibulk
	skip             int64  // payload bytes (plus CRLF) still to pass
	inline           int    // bytes of the current inline request
	headerStart      bool   // a bulk header's '$' is still expected
	preAuth          *atomic.Bool
}

func (f *framing) unauthenticated() bool { return f.preAuth != nil && f.preAuth.Load() }

const (
	atCommand uint8 = iota
	inInline
	inHeader
	inPayload
)

// feed advances over b and returns a protocol error message, or "".
func (f *framing) feed(b []byte) string {
	for i := 0; i < len(b); i++ {
		var msg string
		switch f.state {
		case atCommand:
			msg = f.startCommand(b[i])
		case inInline:
			msg = f.inlineByte(b[i])
		case inHeader:
			msg = f.headerByte(b[i])
		case inPayload:
			adv := min(f.skip, int64(len(b)-i))
			f.skip -= adv
			i += int(adv) - 1
			if f.skip == 0 {
				f.nextArg()
			}
		}
		if msg != "" {
			return msg
		}
	}
	return ""
}

func (f *framing) startCommand(c byte) string {
	if c == '*' {
		f.state, f.lineType, f.line = inHeader, '*', f.line[:0]
		return ""
	}
	f.state, f.inline = inInline, 0
	return f.inlineByte(c)
}

func (f *framing) inlineByte(c byte) string {
	f.inline++
	if f.inline > maxInline {
		return "too big inline request"
	}
	if c == '\n' {
		f.state = atCommand
	}
	return ""
}

func (f *framing) headerByte(c byte) string {
	if f.headerStart {
		f.headerStart = false
		if c != '$' {
			return "expected '$', got '" + string(c) + "'"
		}
		return ""
	}
	if c != '\n' {
		if len(f.line) >= maxHeaderLine {
			return f.invalid()
		}
		f.line = append(f.line, c)
		return ""
	}
	line := f.line
	if len(line) == 0 || line[len(line)-1] != '\r' {
		return f.invalid()
	}
	v, ok := parseDecimal(line[:len(line)-1])
	if !ok {
		return f.invalid()
	}
	if f.lineType == '*' {
		return f.multibulk(v)
	}
	if v < 0 || v > f.maxBulk {
		return "invalid bulk length"
	}
	if v > preAuthMaxBulk && f.unauthenticated() {
		return "unauthenticated bulk length"
	}
	f.state, f.skip = inPayload, v+2
	return ""
}

func (f *framing) multibulk(n int64) string {
	if n > f.maxArgs {
		return "invalid multibulk length"
	}
	if n > preAuthMaxArgs && f.unauthenticated() {
		return "unauthenticated multibulk length"
	}
	if n <= 0 {
		f.state = atCommand
		return ""
	}
	f.argsLeft = n
	f.expectBulk()
	return ""
}

func (f *framing) expectBulk() {
	f.state, f.lineType, f.line = inHeader, '$', f.line[:0]
	f.headerStart = true
}

func (f *framing) nextArg() {
	f.argsLeft--
	if f.argsLeft == 0 {
		f.state = atCommand
		return
	}
	f.expectBulk()
}

func (f *framing) invalid() string {
	if f.lineType == '*' {
		return "invalid multibulk length"
	}
	return "invalid bulk length"
}

// parseDecimal reads an optional '-' and decimal digits (the '$' of a bulk
// header is checked by headerByte's caller).
func parseDecimal(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}
