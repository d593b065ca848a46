package reliability

import (
	"math"
	"math/rand/v2"
	"testing"
)

// This file checks the chain against a discrete-event simulation written
// without any of the model's code: nodes on a ring fail and come back,
// hosts take their nodes down together, and a run ends when some shard's
// window has lost more pieces than its scheme survives.

// simScheme is a scheme as the simulation sees it.
type simScheme struct {
	width, tolerance int
	replicaLast      bool // hybrid: the last position holds a whole copy
}

// simCluster is one simulated configuration.
type simCluster struct {
	nodes      int
	nodeRate   float64 // failures per hour of one node
	hosts      []int   // host of each node; nil: none fail as a whole
	hostRate   float64
	repairRate float64 // completions per hour of one node's rebuild
	parallel   bool
	schemes    []simScheme
}

// lost reports whether some shard of some scheme lost data.
func (c simCluster) lost(down []bool) bool {
	for first := 0; first < c.nodes; first++ {
		for _, s := range c.schemes {
			failed := 0
			for p := 0; p < s.width; p++ {
				if down[(first+p)%c.nodes] {
					failed++
				}
			}
			replicaUp := s.replicaLast && !down[(first+s.width-1)%c.nodes]
			if failed > s.tolerance && !replicaUp {
				return true
			}
		}
	}
	return false
}

// timeToLoss runs the cluster from all up until it loses data.
func (c simCluster) timeToLoss(rng *rand.Rand) float64 {
	down := make([]bool, c.nodes)
	hostIDs := map[int]bool{}
	for _, h := range c.hosts {
		hostIDs[h] = true
	}
	now := 0.0
	for {
		var downNodes []int
		for i, d := range down {
			if d {
				downNodes = append(downNodes, i)
			}
		}
		up := c.nodes - len(downNodes)
		var hostsUp []int
		for h := range hostIDs {
			for i, hh := range c.hosts {
				if hh == h && !down[i] {
					hostsUp = append(hostsUp, h)
					break
				}
			}
		}
		repair := 0.0
		if len(downNodes) > 0 {
			repair = c.repairRate
			if c.parallel {
				repair *= float64(len(downNodes))
			}
		}
		fail := float64(up) * c.nodeRate
		hostFail := float64(len(hostsUp)) * c.hostRate
		total := fail + hostFail + repair
		now += rng.ExpFloat64() / total
		switch x := rng.Float64() * total; {
		case x < fail:
			k := rng.IntN(up)
			for i := range down {
				if !down[i] {
					if k == 0 {
						down[i] = true
						break
					}
					k--
				}
			}
		case x < fail+hostFail:
			h := hostsUp[rng.IntN(len(hostsUp))]
			for i, hh := range c.hosts {
				if hh == h {
					down[i] = true
				}
			}
		default:
			down[downNodes[rng.IntN(len(downNodes))]] = false
		}
		if c.lost(down) {
			return now
		}
	}
}

func TestMonteCarloAgreesWithChain(t *testing.T) {
	code := func(k, m int) simScheme { return simScheme{width: k + m, tolerance: m} }
	rep := func(r int) simScheme { return simScheme{width: r, tolerance: r - 1} }
	cases := []struct {
		name    string
		cluster Cluster
		mix     Mix
		sim     []simScheme
	}{
		{"rep:2 on 4", Cluster{Nodes: 4, NodeMTTF: 100, Rebuild: 4, Detection: 1}, Single(Rep(2)), []simScheme{rep(2)}},
		{"stripe:2+1 on 5", Cluster{Nodes: 5, NodeMTTF: 100, Rebuild: 5}, Single(Code("stripe", 2, 1)), []simScheme{code(2, 1)}},
		{"stripe:3+2 on 7, parallel", Cluster{Nodes: 7, NodeMTTF: 50, Rebuild: 10, ParallelRebuild: true}, Single(Code("stripe", 3, 2)), []simScheme{code(3, 2)}},
		{"hybrid:2+2 on 6", Cluster{Nodes: 6, NodeMTTF: 60, Rebuild: 10}, Single(Hybrid(2, 2)), []simScheme{{width: 4, tolerance: 2, replicaLast: true}}},
		{"rep:3 on 8", Cluster{Nodes: 8, NodeMTTF: 40, Rebuild: 10}, Single(Rep(3)), []simScheme{rep(3)}},
		{"rep:2 + stripe:3+1 on 6", Cluster{Nodes: 6, NodeMTTF: 100, Rebuild: 5},
			Mix{{Scheme: Rep(2), Fraction: 0.5}, {Scheme: Code("stripe", 3, 1), Fraction: 0.5}}, []simScheme{rep(2), code(3, 1)}},
		{"rep:2 on 6, hosts of 2 in blocks", Cluster{Nodes: 6, NodeMTTF: 100, Rebuild: 5, Hosts: []int{0, 0, 1, 1, 2, 2}, HostMTTF: 300},
			Single(Rep(2)), []simScheme{rep(2)}},
		{"stripe:2+2 on 6, hosts of 2 interleaved", Cluster{Nodes: 6, NodeMTTF: 100, Rebuild: 5, Hosts: []int{0, 1, 2, 0, 1, 2}, HostMTTF: 200},
			Single(Code("stripe", 2, 2)), []simScheme{code(2, 2)}},
	}
	const runs = 4000
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := mttdlOf(t, tc.cluster, tc.mix)
			sim := simCluster{
				nodes: tc.cluster.Nodes, nodeRate: 1 / tc.cluster.NodeMTTF,
				hosts: tc.cluster.Hosts, repairRate: 1 / (tc.cluster.Rebuild + tc.cluster.Detection),
				parallel: tc.cluster.ParallelRebuild, schemes: tc.sim,
			}
			if tc.cluster.HostMTTF > 0 {
				sim.hostRate = 1 / tc.cluster.HostMTTF
			}
			rng := rand.New(rand.NewPCG(uint64(i)+1, 27))
			sum, sumSq := 0.0, 0.0
			for range runs {
				x := sim.timeToLoss(rng)
				sum += x
				sumSq += x * x
			}
			mean := sum / runs
			stderr := math.Sqrt((sumSq/runs - mean*mean) / runs)
			t.Logf("chain %.1f h, simulation %.1f ± %.1f h", want, mean, stderr)
			if math.Abs(mean-want) > 4*stderr {
				t.Errorf("chain MTTDL %.1f h, simulation %.1f ± %.1f h (seed %d)", want, mean, stderr, i+1)
			}
		})
	}
}
