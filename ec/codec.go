package ec

import (
	"crypto/subtle"
	"fmt"
	"slices"
	"sync"

	"github.com/klauspost/reedsolomon"
)

// MaxShards is the largest k+m a code may have. The Cauchy construction over
// GF(2^8) would allow 256; stopping at 255 keeps every shard index in a byte
// with one value left over, which wire formats use to mean "no shard".
const MaxShards = 255

// Codec encodes and decodes RS(k, m) over GF(2^8) with the generator matrix
// described in the package documentation. A Codec is immutable and safe for
// concurrent use.
//
// Shard slices passed to its methods hold k data shards followed by m parity
// shards, all of one size. Reconstruct marks a missing shard by a zero
// length, and writes the rebuilt shard into its capacity if large enough: a
// missing shard must not be a truncation of a buffer that holds anything
// else still in use. Parity indices j run from 0 to m−1, data indices i from
// 0 to k−1. The zero Codec is not usable; get one from New.
type Codec struct {
	k, m int
	coef []byte // G row-major: coef[j*k+i] is G[j][i]; flat for the delta path
	enc  reedsolomon.Encoder
}

// codecs caches one Codec per (k, m); the encoder set-up (matrix, inversion
// cache, kernel choice) is worth sharing.
var codecs sync.Map // map[int]*Codec keyed by k<<8 | m

// New returns the RS(k, m) codec, creating it on first use. It requires
// 1 ≤ k, 0 ≤ m and k+m ≤ MaxShards.
func New(k, m int) (*Codec, error) {
	if err := validateCode(k, m); err != nil {
		return nil, err
	}
	key := k<<8 | m
	if c, ok := codecs.Load(key); ok {
		return c.(*Codec), nil
	}
	c, err := newCodec(k, m)
	if err != nil {
		return nil, err
	}
	actual, _ := codecs.LoadOrStore(key, c)
	return actual.(*Codec), nil
}

func validateCode(k, m int) error {
	switch {
	case k < 1:
		return &ParamError{K: k, M: m, Reason: "need at least one data shard"}
	case m < 0:
		return &ParamError{K: k, M: m, Reason: "parity shards cannot be negative"}
	case k > MaxShards || m > MaxShards-k: // k+m > MaxShards, without overflow
		return &ParamError{K: k, M: m, Reason: fmt.Sprintf("k+m must be at most %d", MaxShards)}
	}
	return nil
}

func newCodec(k, m int) (*Codec, error) {
	g := generatorMatrix(k, m)
	enc, err := reedsolomon.New(k, m, reedsolomon.WithCustomMatrix(g),
		reedsolomon.WithInversionCache(inversionCacheBytes(k, m) <= maxInversionCacheBytes))
	if err != nil {
		return nil, fmt.Errorf("ec: creating RS(%d,%d) encoder: %w", k, m, err)
	}
	return &Codec{k: k, m: m, coef: slices.Concat(g...), enc: enc}, nil
}

// maxInversionCacheBytes bounds the decode-matrix cache of one codec.
// klauspost keeps one k×k inverse per loss pattern it has decoded and never
// evicts; for small codes every pattern fits, for large ones it is disabled
// and each decode inverts afresh (microseconds, against a shard's decode).
const maxInversionCacheBytes = 4 << 20

// inversionCacheBytes returns the most the decode-matrix cache of RS(k, m)
// can hold: k² bytes for each non-empty loss pattern of at most m shards. It
// stops counting once past the limit.
func inversionCacheBytes(k, m int) int {
	total, patterns := 0, 1 // patterns = C(k+m, t)
	for t := 1; t <= m && total <= maxInversionCacheBytes; t++ {
		patterns = patterns * (k + m - t + 1) / t
		total += patterns * k * k
	}
	return total
}

// K returns the number of data shards.
func (c *Codec) K() int { return c.k }

// M returns the number of parity shards, which is also the number of lost
// shards the code tolerates.
func (c *Codec) M() int { return c.m }

// String names the code, e.g. "RS(4,2)".
func (c *Codec) String() string { return fmt.Sprintf("RS(%d,%d)", c.k, c.m) }

// Coefficient returns the generator coefficient of data shard i in parity
// shard j: parity_j = Σ_i Coefficient(j, i)·data_i. It is the same number in
// every code that has such a j and i.
func (c *Codec) Coefficient(j, i int) (byte, error) {
	if err := c.checkPair(j, i); err != nil {
		return 0, err
	}
	return c.coef[j*c.k+i], nil
}

func (c *Codec) checkPair(j, i int) error {
	if j < 0 || j >= c.m {
		return indexError("parity shard", j, c.m)
	}
	if i < 0 || i >= c.k {
		return indexError("data shard", i, c.k)
	}
	return nil
}

// Encode computes the m parity shards from the k data shards. Every shard,
// parity included, must already have the common, non-zero size.
func (c *Codec) Encode(shards [][]byte) error {
	if err := c.checkComplete(shards); err != nil {
		return err
	}
	if c.m == 0 {
		return nil
	}
	return wrapLibrary(bySegment(shards, 0, c.enc.Encode))
}

// Verify reports whether the parity shards match the data shards. All shards
// must be present. A code without parity (m = 0) has nothing to check and
// always verifies.
func (c *Codec) Verify(shards [][]byte) (bool, error) {
	if err := c.checkComplete(shards); err != nil {
		return false, err
	}
	if c.m == 0 {
		return true, nil
	}
	ok := true
	err := bySegment(shards, 0, func(seg [][]byte) error {
		good, err := c.enc.Verify(seg)
		ok = ok && good
		return err
	})
	return ok, wrapLibrary(err)
}

// Reconstruct fills in every missing shard, data and parity, from any k
// present ones. It returns a *LostError if more than m are missing.
func (c *Codec) Reconstruct(shards [][]byte) error {
	if lost, err := c.checkPartial(shards); err != nil || lost == 0 {
		return err
	}
	return wrapLibrary(bySegment(shards, c.k+c.m, c.enc.Reconstruct))
}

// ReconstructData fills in the missing data shards only, leaving missing
// parity shards empty. It is the read path: cheaper when parity is not needed.
func (c *Codec) ReconstructData(shards [][]byte) error {
	if lost, err := c.checkPartial(shards); err != nil || lost == 0 {
		return err
	}
	return wrapLibrary(bySegment(shards, c.k, c.enc.ReconstructData))
}

// codeSegment bounds the bytes of each shard that one call into the
// library codes. Its assembly cannot be preempted: one Encode of 128 MiB
// shards (a 512 MiB split:4+2 value) kept its processor, and any
// stop-the-world that came meanwhile, for 200 ms (issue 23). Reed-Solomon
// codes each byte column on its own, so coding a shard set segment by
// segment is coding it whole.
const codeSegment = 1 << 20

// bySegment runs code on shards segment by segment. Missing (empty)
// shards with an index below fill are the ones code fills in: each is
// given room for all of it first (its own capacity if it has enough),
// which the library fills a segment at a time, and is set to its full
// length if code filled it.
func bySegment(shards [][]byte, fill int, code func([][]byte) error) error {
	size := 0
	for _, s := range shards {
		size = max(size, len(s))
	}
	if size <= codeSegment {
		return code(shards)
	}
	room := make([][]byte, len(shards))
	for i, s := range shards {
		if len(s) == 0 && i < fill {
			room[i] = s[:0]
			if cap(s) < size {
				room[i] = make([]byte, 0, size)
			}
		}
	}
	seg := make([][]byte, len(shards))
	filled := make([]bool, len(shards))
	for off := 0; off < size; off += codeSegment {
		end := min(off+codeSegment, size)
		for i, s := range shards {
			switch {
			case len(s) > 0:
				seg[i] = s[off:end]
			case room[i] != nil:
				seg[i] = room[i][off:off:end] // empty: the library fills it
			default:
				seg[i] = nil
			}
		}
		if err := code(seg); err != nil {
			return err
		}
		for i := range seg {
			filled[i] = filled[i] || len(shards[i]) == 0 && len(seg[i]) > 0
		}
	}
	for i, f := range filled {
		if f {
			shards[i] = room[i][:size]
		}
	}
	return nil
}

// UpdateParity applies a change of data shard i to parity shard j in place:
//
//	parity ^= Coefficient(j, i) · delta,   delta = old ⊕ new (see Delta)
//
// so that a parity node can follow an update knowing only the delta and its
// own parity. delta and parity must have the same length; to update a byte
// range of a shard, pass the same range of the parity.
func (c *Codec) UpdateParity(j, i int, delta, parity []byte) error {
	// One branch on the hot path: a 1 KiB delta takes ~80 ns, and the checks
	// and error formatting cost a tenth of that when done in line.
	if uint(j) >= uint(c.m) || uint(i) >= uint(c.k) || len(delta) != len(parity) {
		return c.updateError(j, i, delta, parity)
	}
	reedsolomon.LowLevel{}.GalMulSliceXor(c.coef[j*c.k+i], delta, parity)
	return nil
}

func (c *Codec) updateError(j, i int, delta, parity []byte) error {
	if err := c.checkPair(j, i); err != nil {
		return err
	}
	return fmt.Errorf("%w: delta has %d bytes, parity %d", ErrShardSize, len(delta), len(parity))
}

// Delta writes prev ⊕ next into dst, the delta that UpdateParity applies.
// All three must have the same length. dst may be prev or next itself but
// must not partially overlap either (crypto/subtle.XORBytes panics then).
func Delta(dst, prev, next []byte) error {
	if len(prev) != len(next) || len(dst) != len(prev) {
		return fmt.Errorf("%w: delta of %d and %d bytes into %d", ErrShardSize, len(prev), len(next), len(dst))
	}
	subtle.XORBytes(dst, prev, next)
	return nil
}

// checkComplete validates a shard set with every shard present.
func (c *Codec) checkComplete(shards [][]byte) error {
	if len(shards) != c.k+c.m {
		return fmt.Errorf("%w: got %d, %s needs %d", ErrShardCount, len(shards), c, c.k+c.m)
	}
	size := len(shards[0])
	if size == 0 {
		return fmt.Errorf("%w: shard 0 is empty", ErrShardSize)
	}
	for i, s := range shards {
		if len(s) != size {
			return fmt.Errorf("%w: shard %d has %d bytes, shard 0 has %d", ErrShardSize, i, len(s), size)
		}
	}
	return nil
}

// checkPartial validates a shard set where zero-length shards are missing,
// and returns how many are.
func (c *Codec) checkPartial(shards [][]byte) (lost int, err error) {
	if len(shards) != c.k+c.m {
		return 0, fmt.Errorf("%w: got %d, %s needs %d", ErrShardCount, len(shards), c, c.k+c.m)
	}
	size := 0
	for i, s := range shards {
		switch {
		case len(s) == 0:
			lost++
		case size == 0:
			size = len(s)
		case len(s) != size:
			return 0, fmt.Errorf("%w: shard %d has %d bytes, others %d", ErrShardSize, i, len(s), size)
		}
	}
	if lost > c.m {
		return lost, c.lostError(shards)
	}
	return lost, nil
}

func (c *Codec) lostError(shards [][]byte) error {
	e := &LostError{K: c.k, M: c.m}
	for i, s := range shards {
		if len(s) == 0 {
			e.Lost = append(e.Lost, i)
		}
	}
	return e
}

// wrapLibrary prefixes an error from klauspost/reedsolomon. Our own checks
// run first, so one reaching here is unexpected.
func wrapLibrary(err error) error {
	if err != nil {
		return fmt.Errorf("ec: reedsolomon: %w", err)
	}
	return nil
}
