package transport

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/internal/certs"
)

// refusals records the errors a Mux's guard refused connections with.
type refusals struct {
	mu   sync.Mutex
	errs []error
}

func (r *refusals) add(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

// wait returns the refusals once there are at least n, or fails.
func (r *refusals) wait(t *testing.T, n int) []error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := append([]error(nil), r.errs...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals, want %d", len(got), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newTestGuard(t *testing.T, secret string, srv, cli *tls.Config) *Guard {
	t.Helper()
	g, err := NewGuard(GuardConfig{Secret: []byte(secret), ServerTLS: srv, ClientTLS: cli, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

const testSecret = "a cluster secret of some length"

// counting wraps a handler and counts the requests it served.
func counting(n *atomic.Int64) Handler {
	return func(req Frame, reply func(Frame)) {
		n.Add(1)
		echo(req, reply)
	}
}

// Members holding the secret talk, over frames and over a Raft-tagged
// stream; the handshake is mutual, so neither side needs to trust the
// other first.
func TestGuardAdmitsMembers(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		g := newTestGuard(t, testSecret, nil, nil)
		l := tn.listen(t, "")
		var refused refusals
		startMux(t, l, echo, WithGuard(g), WithRefused(refused.add))
		c := tn.client(t, l.Addr().String(), WithGuard(g))
		ctx := ctxTimeout(t, 5*time.Second)
		if resp, err := c.Call(ctx, Frame{Payload: []byte("member")}); err != nil || string(resp.Payload) != "member" {
			t.Fatalf("guarded call: %v %q", err, resp.Payload)
		}
		raft, err := DialTag(ctx, l.Addr().String(), TagRaft, time.Second, append(tn.opts, WithGuard(g))...)
		if err != nil {
			t.Fatal(err)
		}
		defer raft.Close()
		raft.Write([]byte("ping"))
		got := make([]byte, 4)
		raft.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(raft, got); err != nil || string(got) != "ping" {
			t.Fatalf("guarded raft stream: %v %q", err, got)
		}
		if len(refused.errs) != 0 {
			t.Fatalf("members refused: %v", refused.errs)
		}
	})
}

// A dialer with another secret, or none at all, gets no frame served and is
// counted; a stranger's raw frame never reaches the handler.
func TestGuardRefusesStrangers(t *testing.T) {
	forEachNet(t, func(t *testing.T, tn *testNet) {
		l := tn.listen(t, "")
		var served atomic.Int64
		var refused refusals
		startMux(t, l, counting(&served), WithGuard(newTestGuard(t, testSecret, nil, nil)), WithRefused(refused.add))
		ctx := ctxTimeout(t, 10*time.Second)

		wrong := tn.client(t, l.Addr().String(), WithGuard(newTestGuard(t, "another secret of some length", nil, nil)))
		if _, err := wrong.Call(ctx, Frame{Payload: []byte("x")}); !errors.Is(err, ErrRefused) {
			t.Fatalf("call with the wrong secret: %v, want ErrRefused", err)
		}
		plain := tn.client(t, l.Addr().String())
		if _, err := plain.Call(ctx, Frame{Payload: []byte("x")}); err == nil {
			t.Fatal("call without a guard was served")
		}
		raw, err := tn.dial(ctx, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(append([]byte{TagFrames}, AppendFrame(nil, Frame{Type: 7, Payload: []byte("forged")})...))
		raw.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := io.ReadAll(raw); len(b) > 0 || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("raw frame: read %q, %v; want a hang-up", b, err)
		}
		raw.Close()
		for _, err := range refused.wait(t, 3) {
			if !errors.Is(err, ErrRefused) {
				t.Errorf("refusal %v does not match ErrRefused", err)
			}
		}
		if served.Load() != 0 {
			t.Fatalf("%d frames of strangers served", served.Load())
		}
	})
}

// A guarded dialer sends nothing to a peer that cannot prove the secret:
// an impostor listening on a member's address learns no frame.
func TestGuardDialerRefusesImpostor(t *testing.T) {
	l := tcpNet().listen(t, "")
	var got bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		hello := make([]byte, len(guardMagic)+nonceLen)
		io.ReadFull(c, hello)
		c.Write(make([]byte, nonceLen+macLen)) // a challenge without the secret
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(&got, c)
	}()
	c := Dial(l.Addr().String(), WithGuard(newTestGuard(t, testSecret, nil, nil)))
	defer c.Close()
	_, err := c.Call(ctxTimeout(t, 5*time.Second), Frame{Payload: []byte("secret data")})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("call to an impostor: %v, want ErrRefused", err)
	}
	<-done
	if got.Len() != 0 {
		t.Fatalf("the impostor received %q after its challenge", got.Bytes())
	}
}

// A dialer that says nothing is dropped after the guard's timeout.
func TestGuardTimesOutSilentDialers(t *testing.T) {
	l := tcpNet().listen(t, "")
	g, err := NewGuard(GuardConfig{Secret: []byte(testSecret), Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var refused refusals
	startMux(t, l, echo, WithGuard(g), WithRefused(refused.add))
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	refused.wait(t, 1)
}

// With TLS configs the guard runs mutual TLS first: a dialer needs both a
// certificate of the CA and the secret.
func TestGuardTLS(t *testing.T) {
	ca := newCA(t)
	other := newCA(t)
	srv, cli := tlsPair(t, ca)
	_, strangerCli := tlsPair(t, other)
	l := tcpNet().listen(t, "")
	var served atomic.Int64
	var refused refusals
	g := newTestGuard(t, testSecret, srv, cli)
	if !g.TLS() {
		t.Fatal("guard with TLS configs says it has no TLS")
	}
	startMux(t, l, counting(&served), WithGuard(g), WithRefused(refused.add))
	ctx := ctxTimeout(t, 10*time.Second)
	member := Dial(l.Addr().String(), WithGuard(g))
	defer member.Close()
	if _, err := member.Call(ctx, Frame{Payload: []byte("x")}); err != nil {
		t.Fatalf("member over TLS: %v", err)
	}
	for name, dialer := range map[string]*Guard{
		"no TLS":           newTestGuard(t, testSecret, nil, nil),
		"another CA":       newTestGuard(t, testSecret, srv, strangerCli),
		"the wrong secret": newTestGuard(t, "another secret of some length", srv, cli),
	} {
		c := Dial(l.Addr().String(), WithGuard(dialer))
		if _, err := c.Call(ctx, Frame{Payload: []byte("x")}); err == nil {
			t.Errorf("%s: call served", name)
		}
		c.Close()
	}
	refused.wait(t, 3)
	if served.Load() != 1 {
		t.Fatalf("served %d frames, want only the member's", served.Load())
	}
}

func TestNewGuardChecksConfig(t *testing.T) {
	if _, err := NewGuard(GuardConfig{Secret: []byte("short")}); err == nil {
		t.Error("a 5-byte secret was taken")
	}
	if _, err := NewGuard(GuardConfig{Secret: []byte(testSecret), ServerTLS: &tls.Config{}}); err == nil {
		t.Error("a guard with one TLS config was made")
	}
}

func newCA(t *testing.T) *certs.Authority {
	t.Helper()
	ca, err := certs.NewAuthority("test CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// tlsPair is a node's TLS configs for ca: each side presents a certificate
// of ca and requires one of the other.
func tlsPair(t *testing.T, ca *certs.Authority) (server, client *tls.Config) {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("node", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	server = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: roots, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
	return server, client
}
