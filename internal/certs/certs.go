// Package certs makes throwaway certificate authorities and certificates
// for development clusters and tests (`memgest dev --tls`, the TLS
// scenarios of the test suites). Keys live only in the files it writes;
// nothing here is meant for production, where an operator's own CA issues
// the certificates (docs/operations.md, "TLS").
//
// It is written on crypto/x509 and crypto/ecdsa alone: the standard
// library does everything a test CA needs.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Authority is a self-signed CA that issues certificates.
type Authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertPEM is the CA's certificate, to give to whoever verifies.
	CertPEM []byte
}

// validity is how long the certificates made here last.
const validity = 365 * 24 * time.Hour

// NewAuthority makes a CA called name.
func NewAuthority(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	tmpl, err := template(name)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	return &Authority{cert: cert, key: key, CertPEM: encodePEM("CERTIFICATE", der)}, nil
}

// Issue makes a certificate for name, valid for TLS servers and clients
// alike (a node uses one certificate both ways on the peer port), with
// hosts (IP addresses or DNS names) as its subject alternative names. It
// returns the certificate and its private key in PEM.
func (a *Authority) Issue(name string, hosts []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: %w", err)
	}
	tmpl, err := template(name)
	if err != nil {
		return nil, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: %w", err)
	}
	return encodePEM("CERTIFICATE", der), encodePEM("PRIVATE KEY", keyDER), nil
}

func template(name string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"memgest development"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
	}, nil
}

func encodePEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// Files names the files WriteDev wrote.
type Files struct {
	CA         string // the CA certificate (--tls-ca-cert-file, redis-cli --cacert)
	Cert, Key  string // the nodes' certificate and key (--tls-cert-file, --tls-key-file)
	ClientCert string // a client certificate (redis-cli --cert)
	ClientKey  string // its key (redis-cli --key)
}

// WriteDev makes a CA and writes it to dir (ca.crt) with one certificate
// for the nodes (node.crt, node.key; valid for hosts) and one for clients
// (client.crt, client.key). Keys are written readable by the owner only.
func WriteDev(dir string, hosts []string) (Files, error) {
	ca, err := NewAuthority("memgest dev CA")
	if err != nil {
		return Files{}, err
	}
	f := Files{
		CA:   filepath.Join(dir, "ca.crt"),
		Cert: filepath.Join(dir, "node.crt"), Key: filepath.Join(dir, "node.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	if err := os.WriteFile(f.CA, ca.CertPEM, 0o644); err != nil {
		return Files{}, fmt.Errorf("certs: %w", err)
	}
	if err := ca.write(f.Cert, f.Key, "memgest node", hosts); err != nil {
		return Files{}, err
	}
	if err := ca.write(f.ClientCert, f.ClientKey, "memgest client", nil); err != nil {
		return Files{}, err
	}
	return f, nil
}

func (a *Authority) write(certPath, keyPath, name string, hosts []string) error {
	cert, key, err := a.Issue(name, hosts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, cert, 0o644); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
