package reliability

import (
	"errors"
	"math/big"
	"math/bits"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Where the failed-node sets are too many (wide schemes that tolerate
// many failures on large clusters), the chain falls back to Ring
// appendix A.2's: a state is the number i of nodes down, and a failure
// from state i is survived with probability f(i+1)/f(i), f(i) being the
// share of i-node sets that lose no data — counted over every i-set where
// they are few, estimated from seeded samples where they are not. It
// assumes the i failed nodes are any i-set, equally likely, which the
// exact chain does not need; the tests measure the difference where both
// run.

// lumpedSamples is how many random i-sets estimate f(i) when C(N, i) is
// larger than lumpedEnumerate.
const (
	lumpedSamples   = 20000
	lumpedEnumerate = 200000
)

// errHostsTooLarge refuses host failures on a cluster too large for the
// exact chain: the lumped chain cannot place them.
var errHostsTooLarge = errors.New("reliability: whole-host failures on this cluster and scheme need more states than the model takes; leave the hosts out or use fewer nodes")

// lumpedChain builds the chain by number of failed nodes, up to depth.
func lumpedChain(c Cluster, mix Mix, depth int) (*chain, error) {
	if c.HostMTTF > 0 {
		return nil, errHostsTooLarge
	}
	b := newBuilder(c, mix, c.Nodes)
	rng := rand.New(rand.NewPCG(uint64(c.Nodes), uint64(depth)))
	f := []float64{1}
	for i := 1; i <= depth; i++ {
		fi := b.survivingShare(i, rng)
		if fi == 0 {
			break
		}
		f = append(f, fi)
	}
	n := len(f) // states 0..n−1; FS is n
	q := mat.NewDense(n+1, n+1, nil)
	for i := range n {
		fail := float64(c.Nodes-i) * b.lambda
		survive := 0.0
		if i+1 < n {
			survive = f[i+1] / f[i]
			q.Set(i, i+1, fail*survive)
		}
		q.Set(i, n, fail*(1-survive))
		out := fail
		if i > 0 {
			rate := b.mu
			if b.parallel {
				rate *= float64(i)
			}
			q.Set(i, i-1, rate)
			out += rate
		}
		q.Set(i, i, -out)
	}
	return &chain{q: q, states: make([]uint64, n), depth: n - 1, lumped: true}, nil
}

// survivingShare is f(i): the share of i-node failure sets that lose no
// data.
func (b *builder) survivingShare(i int, rng *rand.Rand) float64 {
	total := new(big.Int).Binomial(int64(b.nodes), int64(i))
	if total.IsInt64() && total.Int64() <= lumpedEnumerate {
		safe := 0
		for set := uint64(1)<<i - 1; set <= b.full && set != 0; set = nextCombination(set) {
			if b.check(set) {
				safe++
			}
		}
		return float64(safe) / float64(total.Int64())
	}
	safe := 0
	for range lumpedSamples {
		if b.check(randomSet(rng, b.nodes, i)) {
			safe++
		}
	}
	return float64(safe) / lumpedSamples
}

// nextCombination is the next larger integer with as many bits set
// (Gosper's hack), or 0 past 64 bits.
func nextCombination(set uint64) uint64 {
	low := set & -set
	ripple := set + low
	if ripple == 0 {
		return 0
	}
	return ripple | ((set^ripple)>>2)/low
}

// randomSet is a uniformly random set of k of n nodes.
func randomSet(rng *rand.Rand, n, k int) uint64 {
	var set uint64
	for bits.OnesCount64(set) < k {
		set |= 1 << rng.IntN(n)
	}
	return set
}
