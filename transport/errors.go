package transport

import "errors"

// Sentinel errors. Errors the package returns match one of them (or a
// context, net or io error) with errors.Is.
var (
	// ErrShort reports a buffer holding only a prefix of a frame.
	ErrShort = errors.New("transport: incomplete frame")
	// ErrChecksum reports a frame whose header or payload checksum does not
	// match: the bytes were corrupted.
	ErrChecksum = errors.New("transport: frame checksum mismatch")
	// ErrFrame reports bytes that are not an acceptable frame: wrong version
	// byte, reserved bits set, or a payload over the size limit.
	ErrFrame = errors.New("transport: malformed frame")
	// ErrClosed reports a call on a closed client, pool or server, or on a
	// connection that broke; the error wraps the cause when there is one.
	ErrClosed = errors.New("transport: connection closed")
	// ErrNotSent reports a call that failed before its request left: no
	// connection could be made. The peer cannot have acted on it.
	ErrNotSent = errors.New("transport: request not sent")
)

// RemoteError is the error a handler returned: a response with FlagError,
// whose payload is the message.
type RemoteError struct {
	Msg string
}

func (e *RemoteError) Error() string { return "transport: remote error: " + e.Msg }
