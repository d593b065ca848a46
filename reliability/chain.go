package reliability

import (
	"errors"
	"math/bits"

	"gonum.org/v1/gonum/mat"
)

// MaxStates bounds the chain's transient states: the MTTDL solve is an LU
// of that size. A model that would need more is cut at a lower depth.
const MaxStates = 2000

// errTooManyStates tells build to cut the chain one failure shallower.
var errTooManyStates = errors.New("reliability: state space too large")

// chain is the generator of the Markov chain: states 0..n−1 are transient
// (state 0 has every node up), state n is FS. states[i] is a representative
// failed-node set of state i.
type chain struct {
	q      *mat.Dense
	states []uint64
	depth  int
	lumped bool // states count failed nodes (lumped.go)
}

// kind names the chain for Result.Chain.
func (ch *chain) kind() string {
	if ch.lumped {
		return "lumped"
	}
	return "exact"
}

// transient is the number of transient states.
func (ch *chain) transient() int { return len(ch.states) }

// builder explores the failed-node sets reachable from "all up".
type builder struct {
	nodes     int
	full      uint64
	windows   []windowCheck
	hostMasks []uint64
	step      int // the rotations by multiples of step are symmetries
	lambda    float64
	hostRate  float64
	mu        float64
	parallel  bool
	depth     int
	safe      map[uint64]bool
}

// windowCheck is one scheme's survival test on the first width positions
// of every shard's placement.
type windowCheck struct {
	scheme Scheme
	width  int
}

func newBuilder(c Cluster, mix Mix, depth int) *builder {
	b := &builder{
		nodes:    c.Nodes,
		full:     fullMask(c.Nodes),
		lambda:   1 / c.NodeMTTF,
		mu:       1 / (c.Rebuild + c.Detection),
		parallel: c.ParallelRebuild,
		depth:    depth,
		safe:     map[uint64]bool{},
	}
	for _, s := range mix {
		b.windows = append(b.windows, windowCheck{scheme: s.Scheme, width: s.Scheme.Width()})
	}
	if c.HostMTTF > 0 {
		b.hostRate = 1 / c.HostMTTF
		b.hostMasks = hostMasks(c.Hosts)
	}
	b.step = symmetryStep(c.Nodes, c.Hosts)
	return b
}

func fullMask(n int) uint64 {
	if n == 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// hostMasks groups nodes by host: one mask of nodes per host.
func hostMasks(hosts []int) []uint64 {
	index := map[int]int{}
	var masks []uint64
	for node, h := range hosts {
		i, ok := index[h]
		if !ok {
			i = len(masks)
			index[h] = i
			masks = append(masks, 0)
		}
		masks[i] |= 1 << node
	}
	return masks
}

// symmetryStep is the smallest rotation of the ring that maps every host's
// nodes onto one host's nodes; rotations by its multiples leave placement
// and hosts as they are, so sets they map onto each other behave the same.
func symmetryStep(n int, hosts []int) int {
	if len(hosts) == 0 {
		return 1
	}
	for step := 1; step < n; step++ {
		if n%step == 0 && rotationKeepsHosts(hosts, step) {
			return step
		}
	}
	return n
}

func rotationKeepsHosts(hosts []int, step int) bool {
	n := len(hosts)
	image := map[int]int{}
	for i, h := range hosts {
		to := hosts[(i+step)%n]
		if prev, ok := image[h]; ok && prev != to {
			return false
		}
		image[h] = to
	}
	return true
}

// rotate moves node i of set to node i−by (mod nodes).
func (b *builder) rotate(set uint64, by int) uint64 {
	if by == 0 {
		return set
	}
	return (set>>by | set<<(b.nodes-by)) & b.full
}

// canonical is the smallest rotation of set by a symmetry of the cluster.
func (b *builder) canonical(set uint64) uint64 {
	best := set
	for by := b.step; by < b.nodes; by += b.step {
		best = min(best, b.rotate(set, by))
	}
	return best
}

// survives reports whether every shard of every scheme keeps its data
// with the nodes of set down, remembering the answer.
func (b *builder) survives(set uint64) bool {
	ok, seen := b.safe[set]
	if !seen {
		ok = b.check(set)
		b.safe[set] = ok
	}
	return ok
}

// check is survives without the memory. Shard i's placement starts at
// node i.
func (b *builder) check(set uint64) bool {
	for i := 0; i < b.nodes; i++ {
		positions := b.rotate(set, i)
		for _, w := range b.windows {
			if !w.scheme.Survives(positions) {
				return false
			}
		}
	}
	return true
}

// transition is a move out of a state: to a failed-node set (or FS) at a
// rate.
type transition struct {
	to   uint64
	lost bool
	rate float64
}

// moves lists the transitions out of the failed-node set set.
func (b *builder) moves(set uint64) []transition {
	var out []transition
	add := func(to uint64, rate float64) {
		lost := !b.survives(to) || bits.OnesCount64(to) > b.depth
		out = append(out, transition{to: to, lost: lost, rate: rate})
	}
	for node := 0; node < b.nodes; node++ {
		if set&(1<<node) == 0 {
			add(set|1<<node, b.lambda)
		}
	}
	for _, host := range b.hostMasks {
		if host&^set != 0 {
			add(set|host, b.hostRate)
		}
	}
	down := bits.OnesCount64(set)
	for rest := set; rest != 0; rest &= rest - 1 {
		rate := b.mu
		if !b.parallel {
			rate /= float64(down)
		}
		add(set&^(rest&-rest), rate)
	}
	return out
}

// build explores the chain breadth first from "all up".
func (b *builder) build() (*chain, error) {
	index := map[uint64]int{0: 0}
	states := []uint64{0}
	type edge struct {
		from, to int // to = −1 is FS
		rate     float64
	}
	var edges []edge
	for i := 0; i < len(states); i++ {
		for _, t := range b.moves(states[i]) {
			if t.lost {
				edges = append(edges, edge{i, -1, t.rate})
				continue
			}
			rep := b.canonical(t.to)
			j, ok := index[rep]
			if !ok {
				if len(states) == MaxStates {
					return nil, errTooManyStates
				}
				j = len(states)
				index[rep] = j
				states = append(states, rep)
			}
			edges = append(edges, edge{i, j, t.rate})
		}
	}
	n := len(states)
	q := mat.NewDense(n+1, n+1, nil)
	for _, e := range edges {
		to := e.to
		if to < 0 {
			to = n
		}
		if to != e.from {
			q.Set(e.from, to, q.At(e.from, to)+e.rate)
			q.Set(e.from, e.from, q.At(e.from, e.from)-e.rate)
		}
	}
	return &chain{q: q, states: states, depth: b.depth}, nil
}

// buildChain builds the chain for c and mix cut at depth, or as deep as
// MaxStates allows; if that is short of tolerance+1 failures, it builds
// the lumped chain (lumped.go) instead, which sees further.
func buildChain(c Cluster, mix Mix, depth int) (*chain, error) {
	depth = min(depth, c.Nodes)
	for d := depth; d >= min(mix.Tolerance()+1, c.Nodes); d-- {
		ch, err := newBuilder(c, mix, d).build()
		if !errors.Is(err, errTooManyStates) {
			return ch, err
		}
	}
	return lumpedChain(c, mix, depth)
}
