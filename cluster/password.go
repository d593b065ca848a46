package cluster

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
)

// Password is how the map holds the cluster's client password (requirepass):
// a random salt and the SHA-256 of salt and password, never the password
// itself. Every node checks AUTH against the map's, so a node cannot serve
// without it by accident of its own flags (DESIGN.md §7c). SHA-256, as Redis
// keeps ACL passwords: the map stays inside the cluster, and AUTH must stay
// cheap.
type Password struct {
	Salt   []byte `json:"salt"`
	Digest []byte `json:"digest"`
}

// passwordSaltLen is the length of a Password's salt.
const passwordSaltLen = 16

// NewPassword returns the Password of pass, with a fresh salt.
func NewPassword(pass string) (*Password, error) {
	salt := make([]byte, passwordSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("cluster: password salt: %w", err)
	}
	return &Password{Salt: salt, Digest: passwordDigest(salt, pass)}, nil
}

// Matches says, in time independent of where they differ, whether pass is
// the password.
func (p *Password) Matches(pass string) bool {
	return subtle.ConstantTimeCompare(passwordDigest(p.Salt, pass), p.Digest) == 1
}

func passwordDigest(salt []byte, pass string) []byte {
	h := sha256.New()
	h.Write(salt)
	h.Write([]byte(pass))
	return h.Sum(nil)
}

func (p *Password) valid() bool {
	return p == nil || (len(p.Salt) == passwordSaltLen && len(p.Digest) == sha256.Size)
}

// SetPassword replaces the cluster's client password (CONFIG SET
// requirepass); nil removes it.
type SetPassword struct {
	Password *Password `json:"password,omitempty"`
}

func (c SetPassword) apply(m *Map) (*Map, error) {
	if !c.Password.valid() {
		return nil, errorf(ErrBadCommand, "malformed password digest")
	}
	next := m.Clone()
	next.Password = c.Password
	return next, nil
}
