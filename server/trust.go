package server

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/memgest/memgest/transport"
)

// This file is whom a node trusts (DESIGN.md §7c): the cluster secret every
// peer connection proves (transport.Guard), TLS on the client, peer and
// HTTP ports, and the password of the HTTP port. Clients' AUTH is in
// server/commands/connection.go and the cluster-wide password in the map
// (server/commands/auth.go).

// secretFileName is where a founding node keeps the cluster secret it
// generated, in its data directory.
const secretFileName = "cluster-secret"

// trust holds what a node checks strangers with.
type trust struct {
	guard      *transport.Guard
	secretPath string      // where the secret was read from
	clientTLS  *tls.Config // the client port's, nil without TLS
	httpTLS    *tls.Config // the HTTP port's, nil without TLS
}

// loadTrust reads the cluster secret (generating it on a founding node
// that has none) and the TLS files.
func loadTrust(cfg Config) (trust, bool, error) {
	secret, path, created, err := loadSecret(cfg)
	if err != nil {
		return trust{}, false, err
	}
	t := trust{secretPath: path}
	gc := transport.GuardConfig{Secret: secret, Timeout: cfg.PeerTimeout}
	if cfg.TLSOn() {
		cert, roots, err := loadTLSFiles(cfg)
		if err != nil {
			return trust{}, false, err
		}
		t.clientTLS = clientPortTLS(cert, roots, cfg.TLSAuthClients)
		t.httpTLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		if cfg.TLSCluster {
			gc.ServerTLS, gc.ClientTLS = peerTLS(cert, roots)
		}
	}
	if t.guard, err = transport.NewGuard(gc); err != nil {
		return trust{}, false, fmt.Errorf("server: cluster secret %s: %w", path, err)
	}
	return t, created, nil
}

// loadSecret finds the cluster secret: an in-memory node's own, else
// --cluster-secret-file, else the one in the data directory, else (a
// founding node only) a new one written there. created says it was just
// made.
func loadSecret(cfg Config) (secret []byte, path string, created bool, err error) {
	if cfg.InMemory != nil {
		return cfg.InMemory.Secret, "(in memory)", false, nil
	}
	path = cfg.ClusterSecretFile
	if path == "" {
		path = filepath.Join(cfg.DataDir, secretFileName)
		if _, statErr := os.Stat(path); errors.Is(statErr, os.ErrNotExist) {
			if cfg.Join != "" {
				return nil, "", false, errors.New("server: --join needs the cluster's secret: give --cluster-secret-file " +
					"(the founding node wrote it to " + secretFileName + " in its data directory)")
			}
			secret, err = newSecret(path)
			return secret, path, err == nil, err
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", false, fmt.Errorf("server: cluster secret: %w", err)
	}
	secret = []byte(strings.TrimSpace(string(b)))
	if len(secret) < transport.MinSecretLen {
		return nil, "", false, fmt.Errorf("server: cluster secret %s: needs at least %d characters, has %d",
			path, transport.MinSecretLen, len(secret))
	}
	return secret, path, false, nil
}

// newSecret writes a random secret (32 bytes, hex) to path, readable by
// the owner only, and returns it.
func newSecret(path string) ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("server: cluster secret: %w", err)
	}
	secret := []byte(hex.EncodeToString(raw))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("server: cluster secret: %w", err)
	}
	if err := os.WriteFile(path, append(secret, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("server: cluster secret: %w", err)
	}
	return secret, nil
}

// loadTLSFiles reads the node's certificate and key and the CA that signs
// clients' and peers' certificates.
func loadTLSFiles(cfg Config) (tls.Certificate, *x509.CertPool, error) {
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("server: tls-cert-file/tls-key-file: %w", err)
	}
	pem, err := os.ReadFile(cfg.TLSCACertFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("server: tls-ca-cert-file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return tls.Certificate{}, nil, fmt.Errorf("server: tls-ca-cert-file %s holds no PEM certificate", cfg.TLSCACertFile)
	}
	return cert, roots, nil
}

// clientPortTLS is the client port's TLS: clients must present a
// certificate of the CA with auth "yes" (Redis's default), may with
// "optional", need not with "no".
func clientPortTLS(cert tls.Certificate, roots *x509.CertPool, auth string) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientCAs: roots}
	switch auth {
	case "yes":
		c.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		c.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		c.ClientAuth = tls.NoClientCert
	}
	return c
}

// peerTLS is mutual TLS between nodes: each side presents the node
// certificate and accepts the other's if it chains to the CA. Names are not
// checked (a node is dialled by whatever address the map holds, and one
// certificate may serve every node); membership is what the cluster secret
// proves inside the TLS session.
func peerTLS(cert tls.Certificate, roots *x509.CertPool) (server, client *tls.Config) {
	verify := func(cs tls.ConnectionState) error { return verifyChain(cs, roots) }
	server = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAnyClientCert, VerifyConnection: verify}
	client = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
		InsecureSkipVerify: true, VerifyConnection: verify} // the chain is checked by verify, without names
	return server, client
}

// verifyChain checks that the peer's certificate chains to roots.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("server: the peer presented no certificate")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("server: the peer's certificate: %w", err)
	}
	return nil
}
