package server

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgest/memgest/internal/certs"
)

// A founding node makes the secret once, private to its owner, and reads it
// back on restart; a joining node must be given it.
func TestLoadSecret(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	first, path, created, err := loadSecret(cfg)
	if err != nil || !created || len(first) < 32 {
		t.Fatalf("founding node: %q %v %v", first, created, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %s: %v %v", path, fi.Mode(), err)
	}
	again, _, created, err := loadSecret(cfg)
	if err != nil || created || string(again) != string(first) {
		t.Fatalf("restart: %q %v %v, want the same secret", again, created, err)
	}

	joiner := DefaultConfig()
	joiner.DataDir, joiner.Join = t.TempDir(), "127.0.0.1:17001"
	if _, _, _, err := loadSecret(joiner); err == nil || !strings.Contains(err.Error(), "--cluster-secret-file") {
		t.Fatalf("joiner without a secret: %v", err)
	}
	joiner.ClusterSecretFile = path
	if got, _, _, err := loadSecret(joiner); err != nil || string(got) != string(first) {
		t.Fatalf("joiner given the file: %q %v", got, err)
	}
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	joiner.ClusterSecretFile = short
	if _, _, _, err := loadSecret(joiner); err == nil {
		t.Fatal("a 3-character secret was taken")
	}
}

// Peers accept each other's certificates when they chain to the CA,
// whatever names they carry, and refuse another CA's.
func TestPeerTLSChecksTheChainNotNames(t *testing.T) {
	ca, err := certs.NewAuthority("ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewAuthority("other")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	mine := issue(t, ca, "somewhere-else.example")
	srv, cli := peerTLS(mine, roots)
	if err := handshake(srv, cli); err != nil {
		t.Fatalf("two certificates of the CA: %v", err)
	}
	_, stranger := peerTLS(issue(t, other, "127.0.0.1"), roots)
	if err := handshake(srv, stranger); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	if err := handshake(srv, noCert); err == nil {
		t.Fatal("a peer without a certificate was accepted")
	}
}

func issue(t *testing.T, ca *certs.Authority, host string) tls.Certificate {
	t.Helper()
	c, k, err := ca.Issue("node", []string{host})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// handshake runs a TLS handshake between srv and cli over loopback TCP
// (buffered both ways, unlike net.Pipe, so a refusal's alert and the
// client's first write cannot block each other) and returns the server's
// error, or the client's.
func handshake(srv, cli *tls.Config) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		a, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer a.Close()
		s := tls.Server(a, srv)
		if err = s.Handshake(); err == nil {
			_, err = s.Read(make([]byte, 1)) // TLS 1.3: a refused client certificate shows here
		}
		done <- err
	}()
	b, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		return err
	}
	defer b.Close()
	c := tls.Client(b, cli)
	cerr := c.Handshake()
	if cerr == nil {
		_, cerr = c.Write([]byte{1})
	}
	if serr := <-done; serr != nil {
		return serr
	}
	return cerr
}
