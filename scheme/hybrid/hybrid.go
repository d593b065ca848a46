// Package hybrid is the hybrid:K+M scheme kind: RE-Store's replica plus
// parity (RE(K, K, M−1), decision 0008). Small objects are packed into
// chunks as stripe:K+M packs them; each list of K data positions has M
// holders, of which the first M−1 keep Reed-Solomon parity RS(K, M−1) and
// the last keeps a whole copy of every data chunk of the list. One
// failure is then served and rebuilt by copying, any M by decoding, and a
// list stores (2K+M−1)/K bytes per data byte: 18–34% less than rep:M+1,
// which tolerates as many failures.
//
// The chunks, their update protocol, recovery and rebuild are the packed
// engine of package stripe, whose holders take the replica role from the
// spec. This package is the kind's registration and what is its own: the
// check that an entry is hybrid and SCHEME.INFO's replica figures.
package hybrid

import (
	"fmt"
	"strconv"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
)

// Kind is the scheme kind this package serves.
const Kind = scheme.Hybrid

// For returns the kind.Factory that binds hybrid entries to eng, the
// node's packed engine: the hybrid kind's registration line.
func For(eng *stripe.Engine) kind.Factory {
	return func(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) {
		if entry.Spec.Kind != Kind {
			return nil, fmt.Errorf("hybrid: scheme %s is not a hybrid scheme", entry.Name())
		}
		return &bound{Bound: stripe.Bind(eng, entry, env)}, nil
	}
}

// New binds a hybrid entry without an engine (a kind.Factory): properties
// only, for tests of properties. A node binds its schemes with For.
func New(entry cluster.SchemeEntry, env kind.Env) (kind.Scheme, error) { return For(nil)(entry, env) }

// bound is a hybrid scheme bound to a node: the packed engine's binding,
// with the kind's own SCHEME.INFO.
type bound struct {
	*stripe.Bound
}

// Info is SCHEME.INFO's breakdown (stripe.Info, whose formula takes the
// replica into account through the spec) with the replica holders' copies
// of sealed chunks (those of open chunks are buffered_bytes, as every
// holder's) and the memory the scheme saves against rep:M+1, the
// replication of the same tolerance (RE-Store §IV-A).
func (s *bound) Info(keys, logical int64, u *stripe.Usage) []kind.Detail {
	d := s.Bound.Info(keys, logical, u)
	var copies int64
	if u != nil {
		copies = u.Copies
	}
	return append(d,
		kind.Detail{Name: "replica_bytes", Value: copies},
		kind.Detail{Name: "saving_vs_replication", Value: strconv.FormatFloat(Saving(s.Entry().Spec), 'f', 3, 64)})
}

// Saving is the share of memory hybrid spec saves against rep:M+1, which
// tolerates as many failures: 1 − (2K+M−1)/(K(M+1)), the figure of
// RE-Store §IV-A (0.25 for hybrid:4+2).
func Saving(spec scheme.Spec) float64 {
	rep := scheme.Spec{Kind: scheme.Rep, R: spec.M + 1}
	return 1 - spec.Overhead()/rep.Overhead()
}
