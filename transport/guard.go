package transport

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// A Guard admits a peer connection only once the other side has proven that
// it holds the cluster's secret, and, when the guard has TLS configs, only
// over mutual TLS. Both ends prove themselves: a node never sends a frame
// to, or accepts one from, a process that lacks the secret. A Mux with a
// guard runs its accept side on every connection before reading the tag
// byte, so Raft and data frames are covered alike; a Client, Pool or
// DialTag with a guard runs its dial side after connecting.
//
// The proof is an HMAC-SHA256 challenge-response with fresh 32-byte nonces
// from both sides, so neither a recorded exchange nor a reflected one
// passes:
//
//	dialer   → acceptor  "MGA1" ‖ nonce_d
//	acceptor → dialer    nonce_a ‖ HMAC(secret, "memgest peer acceptor" ‖ nonce_d ‖ nonce_a)
//	dialer   → acceptor  HMAC(secret, "memgest peer dialer" ‖ nonce_d ‖ nonce_a)
//	acceptor → dialer    "K"
//
// Without TLS the secret is never sent and cannot be learnt from the
// exchange, but the bytes after it are not protected: an attacker on the
// path between two nodes could still alter or inject frames. TLS closes
// that too; docs/operations.md says when to use it. The handshake is built
// from crypto/hmac, crypto/sha256, crypto/rand and crypto/tls only.
type Guard struct {
	secret    []byte
	serverTLS *tls.Config
	clientTLS *tls.Config
	timeout   time.Duration
}

// GuardConfig configures a Guard.
type GuardConfig struct {
	// Secret is the cluster secret every member holds; at least
	// MinSecretLen bytes.
	Secret []byte
	// ServerTLS and ClientTLS, when set (both or neither), wrap every
	// connection in TLS before the proof: ServerTLS on accepted
	// connections, ClientTLS on dialled ones. ServerTLS should require a
	// client certificate.
	ServerTLS, ClientTLS *tls.Config
	// Timeout bounds a whole handshake; zero means DefaultHandshakeTimeout.
	Timeout time.Duration
}

// MinSecretLen is the shortest cluster secret a Guard takes.
const MinSecretLen = 16

// DefaultHandshakeTimeout bounds a guard's handshake unless its config
// says otherwise.
const DefaultHandshakeTimeout = 10 * time.Second

// ErrRefused matches the error of a handshake that failed: the other side
// does not hold the secret (or a certificate of the cluster's CA), spoke
// something else, or did not finish in time.
var ErrRefused = errors.New("transport: peer handshake refused")

const (
	guardMagic    = "MGA1"
	nonceLen      = 32
	macLen        = sha256.Size
	acceptorLabel = "memgest peer acceptor"
	dialerLabel   = "memgest peer dialer"
	guardAck      = 'K'
)

// NewGuard returns a guard for cfg.
func NewGuard(cfg GuardConfig) (*Guard, error) {
	if len(cfg.Secret) < MinSecretLen {
		return nil, fmt.Errorf("transport: a cluster secret needs at least %d bytes, got %d", MinSecretLen, len(cfg.Secret))
	}
	if (cfg.ServerTLS == nil) != (cfg.ClientTLS == nil) {
		return nil, errors.New("transport: a guard needs both TLS configs or neither")
	}
	g := &Guard{secret: append([]byte(nil), cfg.Secret...), serverTLS: cfg.ServerTLS, clientTLS: cfg.ClientTLS, timeout: cfg.Timeout}
	if g.timeout <= 0 {
		g.timeout = DefaultHandshakeTimeout
	}
	return g, nil
}

// TLS reports whether the guard wraps connections in TLS.
func (g *Guard) TLS() bool { return g.serverTLS != nil }

// Accept runs the acceptor's side of the handshake on c and returns the
// connection to use (c itself, or c inside TLS). On failure it closes c and
// returns an error matching ErrRefused.
func (g *Guard) Accept(c net.Conn) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	out, err := g.handshake(ctx, c, true)
	if err != nil {
		return nil, fmt.Errorf("%w: from %s: %w", ErrRefused, c.RemoteAddr(), err)
	}
	return out, nil
}

// Dial runs the dialer's side of the handshake on c, a fresh connection to
// a guarded peer, and returns the connection to use. On failure it closes c
// and returns an error matching ErrRefused.
func (g *Guard) Dial(ctx context.Context, c net.Conn) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	out, err := g.handshake(ctx, c, false)
	if err != nil {
		return nil, fmt.Errorf("%w: to %s: %w", ErrRefused, c.RemoteAddr(), err)
	}
	return out, nil
}

// handshake wraps c in TLS when the guard has TLS, then runs the
// acceptor's or the dialer's proof, all within ctx's deadline; it closes c
// on failure.
func (g *Guard) handshake(ctx context.Context, c net.Conn, acceptor bool) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	cfg, prove := g.clientTLS, g.proveDialer
	if acceptor {
		cfg, prove = g.serverTLS, g.proveAcceptor
	}
	conn, err := wrapTLS(ctx, c, cfg, acceptor)
	if err == nil {
		err = prove(conn)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return conn, nil
}

func wrapTLS(ctx context.Context, c net.Conn, cfg *tls.Config, server bool) (net.Conn, error) {
	if cfg == nil {
		return c, nil
	}
	var t *tls.Conn
	if server {
		t = tls.Server(c, cfg)
	} else {
		t = tls.Client(c, cfg)
	}
	if err := t.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return t, nil
}

// proveAcceptor is the acceptor's part of the proof.
func (g *Guard) proveAcceptor(c net.Conn) error {
	hello := make([]byte, len(guardMagic)+nonceLen)
	if _, err := io.ReadFull(c, hello); err != nil {
		return fmt.Errorf("reading the dialer's hello: %w", err)
	}
	if string(hello[:len(guardMagic)]) != guardMagic {
		return errors.New("the dialer does not speak the memgest peer handshake")
	}
	nonceD := hello[len(guardMagic):]
	nonceA, err := newNonce()
	if err != nil {
		return err
	}
	if _, err := c.Write(append(nonceA, g.mac(acceptorLabel, nonceD, nonceA)...)); err != nil {
		return fmt.Errorf("sending the challenge: %w", err)
	}
	proof := make([]byte, macLen)
	if _, err := io.ReadFull(c, proof); err != nil {
		return fmt.Errorf("reading the dialer's proof: %w", err)
	}
	if !hmac.Equal(proof, g.mac(dialerLabel, nonceD, nonceA)) {
		return errors.New("the dialer does not hold the cluster secret")
	}
	_, err = c.Write([]byte{guardAck})
	return err
}

// proveDialer is the dialer's part of the proof.
func (g *Guard) proveDialer(c net.Conn) error {
	nonceD, err := newNonce()
	if err != nil {
		return err
	}
	if _, err := c.Write(append([]byte(guardMagic), nonceD...)); err != nil {
		return fmt.Errorf("sending hello: %w", err)
	}
	challenge := make([]byte, nonceLen+macLen)
	if _, err := io.ReadFull(c, challenge); err != nil {
		return fmt.Errorf("reading the challenge (does the peer hold this cluster's secret?): %w", err)
	}
	nonceA, proof := challenge[:nonceLen], challenge[nonceLen:]
	if !hmac.Equal(proof, g.mac(acceptorLabel, nonceD, nonceA)) {
		return errors.New("the peer does not hold the cluster secret")
	}
	if _, err := c.Write(g.mac(dialerLabel, nonceD, nonceA)); err != nil {
		return fmt.Errorf("sending the proof: %w", err)
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil || ack[0] != guardAck {
		return fmt.Errorf("the peer refused this node's proof (is the cluster secret the same?): %v", err)
	}
	return nil
}

func (g *Guard) mac(label string, nonceD, nonceA []byte) []byte {
	h := hmac.New(sha256.New, g.secret)
	h.Write([]byte(label))
	h.Write(nonceD)
	h.Write(nonceA)
	return h.Sum(nil)
}

func newNonce() ([]byte, error) {
	b := make([]byte, nonceLen)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return b, nil
}
