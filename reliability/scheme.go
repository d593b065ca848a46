package reliability

import (
	"fmt"
	"math/bits"
)

// Kind is how a scheme lays a key out on its reliability set.
type Kind int

const (
	// KindNone keeps one copy on the key's coordinator.
	KindNone Kind = iota
	// KindRep keeps R whole copies.
	KindRep
	// KindCode keeps K data and M parity pieces of a Reed-Solomon code:
	// split:K+M and stripe:K+M.
	KindCode
	// KindHybrid keeps K data pieces, M−1 parities of RS(K, M−1) and, on the
	// last position, a whole copy of every data piece (RE-Store's hybrid,
	// memgest decision 0008).
	KindHybrid
)

// Scheme is a scheme as the model sees it: which positions of a shard's
// placement it occupies and which failed positions it survives.
type Scheme struct {
	// Name labels the scheme in results, e.g. "stripe:4+2".
	Name string
	Kind Kind
	// R is the number of copies of KindRep; K and M the data and parity
	// counts of KindCode and KindHybrid.
	R, K, M int
}

// MaxWidth is the widest reliability set the model takes: a failed-position
// set is a 64-bit mask.
const MaxWidth = 64

// None is the scheme without redundancy.
func None() Scheme { return Scheme{Name: "none", Kind: KindNone} }

// Rep is r-way replication.
func Rep(r int) Scheme { return Scheme{Name: fmt.Sprintf("rep:%d", r), Kind: KindRep, R: r} }

// Code is a Reed-Solomon scheme named name ("split" or "stripe") with k
// data and m parity pieces on k+m nodes.
func Code(name string, k, m int) Scheme {
	return Scheme{Name: fmt.Sprintf("%s:%d+%d", name, k, m), Kind: KindCode, K: k, M: m}
}

// Hybrid is hybrid:K+M: k data pieces, m−1 parities and one replica holder.
func Hybrid(k, m int) Scheme {
	return Scheme{Name: fmt.Sprintf("hybrid:%d+%d", k, m), Kind: KindHybrid, K: k, M: m}
}

// Width is the number of nodes one key's pieces occupy: the first Width
// positions of its shard's placement.
func (s Scheme) Width() int {
	switch s.Kind {
	case KindRep:
		return s.R
	case KindCode, KindHybrid:
		return s.K + s.M
	}
	return 1
}

// Tolerance is the number of failed positions every key survives.
func (s Scheme) Tolerance() int {
	switch s.Kind {
	case KindRep:
		return s.R - 1
	case KindCode, KindHybrid:
		return s.M
	}
	return 0
}

// Overhead is stored bytes per logical byte: 1, R, (K+M)/K, (2K+M−1)/K.
func (s Scheme) Overhead() float64 {
	switch s.Kind {
	case KindRep:
		return float64(s.R)
	case KindCode:
		return float64(s.K+s.M) / float64(s.K)
	case KindHybrid:
		return float64(2*s.K+s.M-1) / float64(s.K)
	}
	return 1
}

// Survives reports whether a reliability set still holds all its data
// when the positions whose bits are set in failed are down. Bits at or
// beyond Width are ignored.
func (s Scheme) Survives(failed uint64) bool {
	w := s.Width()
	if w < 64 {
		failed &= 1<<w - 1
	}
	down := bits.OnesCount64(failed)
	switch s.Kind {
	case KindRep:
		return down < s.R
	case KindCode:
		return down <= s.M
	case KindHybrid:
		// The replica holder (last position) copies back any data piece;
		// without it, K data and M−1 parities are RS(K, M−1).
		if failed&(1<<(w-1)) == 0 {
			return true
		}
		return down-1 <= s.M-1
	}
	return failed == 0
}

// validate reports a scheme the model cannot take.
func (s Scheme) validate() error {
	switch s.Kind {
	case KindNone:
	case KindRep:
		if s.R < 1 {
			return fmt.Errorf("reliability: %s: need at least one copy", s.Name)
		}
	case KindCode, KindHybrid:
		if s.K < 1 || s.M < 0 || (s.Kind == KindHybrid && s.M < 1) {
			return fmt.Errorf("reliability: %s: bad K+M", s.Name)
		}
	default:
		return fmt.Errorf("reliability: %s: unknown kind %d", s.Name, s.Kind)
	}
	if s.Width() > MaxWidth {
		return fmt.Errorf("reliability: %s: %d positions, at most %d", s.Name, s.Width(), MaxWidth)
	}
	return nil
}
