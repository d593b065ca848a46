package transport

import (
	"context"
	"net"
	"time"
)

// DialFunc opens a connection to addr. It is a plain connection maker: the
// Client writes the TagFrames byte itself, so a DialFunc works both for a
// Server behind a Mux and for one on its own listener.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

// Option configures a Client, a Pool (for each of its clients) or a Server.
// Options that do not apply to a component are ignored by it.
type Option func(*options)

// DefaultDialTimeout bounds connection set-up unless WithDialTimeout says
// otherwise.
const DefaultDialTimeout = 5 * time.Second

type options struct {
	dial        DialFunc      // client: how to connect
	dialTimeout time.Duration // client: bound on one connection attempt
	maxPayload  int           // both: largest payload sent or accepted
	guard       *Guard        // client, Mux, DialTag: the peer handshake
	refused     func(error)   // Mux: told of every connection the guard refused
}

func buildOptions(opts []Option) options {
	o := options{
		dial:        dialTCP,
		dialTimeout: DefaultDialTimeout,
		maxPayload:  DefaultMaxPayload,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// WithDialer makes clients connect with dial instead of TCP, e.g. with
// InmemNetwork.Dialer in tests. A nil dial restores TCP.
func WithDialer(dial DialFunc) Option {
	return func(o *options) {
		o.dial = dial
		if dial == nil {
			o.dial = dialTCP
		}
	}
}

// WithDialTimeout bounds each connection attempt of a client; d ≤ 0 restores
// DefaultDialTimeout.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) {
		o.dialTimeout = d
		if d <= 0 {
			o.dialTimeout = DefaultDialTimeout
		}
	}
}

// WithMaxPayload sets the largest payload a client sends and a client or
// server accepts; n ≤ 0 restores DefaultMaxPayload, and n is capped at
// MaxPayload. A frame over the limit breaks the connection that carries it,
// so peers should agree on it; a server whose reply is too large sends an
// error response instead.
func WithMaxPayload(n int) Option {
	return func(o *options) { o.maxPayload = payloadLimit(n) }
}

// WithGuard makes clients, DialTag and a Mux run g's handshake on every
// connection: a dialled one after connecting, an accepted one before its
// tag is read. A nil g means no handshake.
func WithGuard(g *Guard) Option {
	return func(o *options) { o.guard = g }
}

// WithRefused makes a Mux call f with the error of every connection its
// guard refused (to log and count them); f must not block.
func WithRefused(f func(error)) Option {
	return func(o *options) { o.refused = f }
}
