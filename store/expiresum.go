package store

import "math/bits"

// expireSum is a 128-bit two's-complement sum of ExpireAt values, so
// that a shard's total never overflows whatever it holds; Stats divides
// it by the count for the mean expiry (INFO keyspace's avg_ttl).
type expireSum struct{ hi, lo uint64 }

// add adds sign (1 or −1) times at.
func (s *expireSum) add(at int64, sign int) {
	ext := uint64(at >> 63) // at sign-extended to the high word
	var c uint64
	if sign > 0 {
		s.lo, c = bits.Add64(s.lo, uint64(at), 0)
		s.hi += ext + c
	} else {
		s.lo, c = bits.Sub64(s.lo, uint64(at), 0)
		s.hi -= ext + c
	}
}

// plus is s + o.
func (s expireSum) plus(o expireSum) expireSum {
	lo, c := bits.Add64(s.lo, o.lo, 0)
	return expireSum{hi: s.hi + o.hi + c, lo: lo}
}

// mean is s / n, or 0 for n ≤ 0 or a negative sum (an ExpireAt before
// 1970, which no command stores).
func (s expireSum) mean(n int) int64 {
	if n <= 0 || int64(s.hi) < 0 || s.hi >= uint64(n) {
		return 0
	}
	q, _ := bits.Div64(s.hi, s.lo, uint64(n))
	return int64(q)
}
