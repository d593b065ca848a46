package cluster

import (
	"errors"
	"strings"

	"github.com/memgest/memgest/scheme"
)

// Policy kinds (DESIGN.md §7b). A cluster has at most one policy at a time.
const (
	// PolicySize is KVMD's hybrid mode (§3): values smaller than Threshold
	// bytes go to Below, the others to Above.
	PolicySize = "size"
	// PolicyTemperature keeps keys written or read lately in Hot and lets
	// each node move those idle for IdleSeconds into Cold.
	PolicyTemperature = "temperature"
	// PolicyOff, only in SetPolicy, removes the policy.
	PolicyOff = "off"
)

// Bounds of a policy's parameters.
const (
	// MaxPolicyThreshold bounds a size policy's threshold (1 TiB: past any
	// value a node accepts, so "everything below" is expressible).
	MaxPolicyThreshold = 1 << 40
	// MinIdleSeconds and MaxIdleSeconds bound a temperature policy's idle
	// time: a second is the clock's resolution for access times; 30 days
	// is longer than a node's access clock keeps (server/core/access.go).
	MinIdleSeconds = 1
	MaxIdleSeconds = 30 * 24 * 3600
)

// Policy picks the scheme of a key written without an explicit SCHEME
// (KVMD's custom mode: an explicit one always wins). It names schemes by
// id, which are never reused, and DropScheme refuses a scheme it names. It
// manages only keys in its own schemes: a key that lives in any other (put
// there by an explicit SCHEME, or before the policy was set) stays there
// (docs/decisions/0010-scheme-policies.md). A Policy in a published map is
// never modified.
type Policy struct {
	Kind string `json:"kind"` // PolicySize or PolicyTemperature
	// Threshold, Below, Above: PolicySize's parameters.
	Threshold int64  `json:"threshold,omitempty"`
	Below     uint16 `json:"below,omitempty"`
	Above     uint16 `json:"above,omitempty"`
	// Hot, Cold, IdleSeconds: PolicyTemperature's parameters.
	Hot         uint16 `json:"hot,omitempty"`
	Cold        uint16 `json:"cold,omitempty"`
	IdleSeconds int64  `json:"idle_seconds,omitempty"`
}

// Pick returns the scheme id the policy gives a key written without a
// SCHEME: cur and exists are the key's scheme now, size the length of the
// value written. ok is false when the policy does not decide: no policy,
// or a key that exists in a scheme the policy does not name (it stays
// there). A temperature policy sends every write to Hot, moving a cold key
// back. p may be nil.
func (p *Policy) Pick(cur uint16, exists bool, size int) (id uint16, ok bool) {
	if p == nil || exists && !p.Names(cur) {
		return 0, false
	}
	switch p.Kind {
	case PolicySize:
		if int64(size) < p.Threshold {
			return p.Below, true
		}
		return p.Above, true
	case PolicyTemperature:
		return p.Hot, true
	}
	return 0, false
}

// Names says whether the policy names scheme id. p may be nil.
func (p *Policy) Names(id uint16) bool {
	if p == nil {
		return false
	}
	switch p.Kind {
	case PolicySize:
		return id == p.Below || id == p.Above
	case PolicyTemperature:
		return id == p.Hot || id == p.Cold
	}
	return false
}

// Temperature returns the policy if it is a temperature policy, else nil.
// p may be nil.
func (p *Policy) Temperature() *Policy {
	if p == nil || p.Kind != PolicyTemperature {
		return nil
	}
	return p
}

func (c SetPolicy) apply(m *Map) (*Map, error) {
	if c.Kind == PolicyOff {
		if m.Policy == nil {
			return m, nil
		}
		next := m.Clone()
		next.Policy = nil
		return next, nil
	}
	next := m.Clone()
	p := &Policy{Kind: c.Kind, Threshold: c.Threshold, IdleSeconds: c.IdleSeconds}
	var names []string
	var ids []*uint16
	switch c.Kind {
	case PolicySize:
		names, ids = []string{c.Below, c.Above}, []*uint16{&p.Below, &p.Above}
	case PolicyTemperature:
		names, ids = []string{c.Hot, c.Cold}, []*uint16{&p.Hot, &p.Cold}
	default:
		return nil, errorf(ErrBadCommand, "unknown policy %q (size, temperature or off)", c.Kind)
	}
	for i, name := range names {
		e, err := next.schemeOrRegister(name)
		if err != nil {
			return nil, err
		}
		*ids[i] = e.ID
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	if m.Policy != nil && *m.Policy == *p && len(next.Schemes) == len(m.Schemes) {
		return m, nil
	}
	next.Policy = p
	return next, nil
}

// schemeOrRegister finds the scheme called name in m, a Clone being
// edited, registering a spec not there yet as a bare entry.
func (m *Map) schemeOrRegister(name string) (SchemeEntry, error) {
	if e, ok := m.Scheme(name); ok {
		return e, nil
	}
	sp, err := scheme.Parse(name)
	if err != nil {
		if errors.Is(err, scheme.ErrSpec) && strings.Contains(name, ":") {
			return SchemeEntry{}, wrapf(ErrBadCommand, err, "%s", trimScheme(err))
		}
		return SchemeEntry{}, m.noScheme(name)
	}
	grown, err := CreateScheme{Spec: sp}.apply(m)
	if err != nil {
		return SchemeEntry{}, err
	}
	*m = *grown // grown is a clone of m with one more entry
	e, _ := m.named(sp.String())
	return e, nil
}

// check refuses parameters out of bounds and a policy whose two schemes
// are one.
func (p *Policy) check() *Error {
	switch p.Kind {
	case PolicySize:
		if p.Threshold < 1 || p.Threshold > MaxPolicyThreshold {
			return errorf(ErrBadCommand, "policy threshold must be 1..%d bytes, got %d", int64(MaxPolicyThreshold), p.Threshold)
		}
		if p.Below == p.Above {
			return errorf(ErrBadCommand, "a size policy needs two different schemes")
		}
	case PolicyTemperature:
		if p.IdleSeconds < MinIdleSeconds || p.IdleSeconds > MaxIdleSeconds {
			return errorf(ErrBadCommand, "policy idle time must be %d..%d seconds, got %d", MinIdleSeconds, MaxIdleSeconds, p.IdleSeconds)
		}
		if p.Hot == p.Cold {
			return errorf(ErrBadCommand, "a temperature policy needs two different schemes")
		}
	default:
		return errorf(ErrBadCommand, "unknown policy %q", p.Kind)
	}
	return nil
}

// validatePolicy checks a decoded map's policy: its parameters, and that
// the catalogue has every scheme it names.
func (m *Map) validatePolicy() error {
	p := m.Policy
	if p == nil {
		return nil
	}
	if err := p.check(); err != nil {
		return &Error{Kind: ErrBadMap, Msg: err.Msg}
	}
	for _, id := range p.ids() {
		if _, ok := m.SchemeByID(id); !ok {
			return errorf(ErrBadMap, "policy names scheme %d, which is not in the catalogue", id)
		}
	}
	return nil
}

// ids are the scheme ids the policy names.
func (p *Policy) ids() []uint16 {
	if p.Kind == PolicySize {
		return []uint16{p.Below, p.Above}
	}
	return []uint16{p.Hot, p.Cold}
}
