package simcluster_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
)

// allPairs runs TestAnyTwoNodesMayFail on all 21 pairs of the seven
// nodes instead of three drawn from the seed.
var allPairs = flag.Bool("sim.allpairs", os.Getenv("SIMCLUSTER_ALL_PAIRS") != "",
	"simcluster: TestAnyTwoNodesMayFail kills every pair of nodes (also SIMCLUSTER_ALL_PAIRS=1)")

// pairNodes is the size of TestAnyTwoNodesMayFail's cluster.
const pairNodes = 7

// TestAnyTwoNodesMayFail is issue 43's item 4: a cluster must survive any
// failure its schemes tolerate, the control plane included. Seven nodes
// found a cluster with three Raft voters (--voters 3); once rep:3 and
// stripe:4+2 keys exist, which tolerate two failures, the leader has
// given two more nodes a vote (five voters survive two failures). Then a
// pair of nodes dies at once, voters included: their votes pass to the
// two live non-voters, every key answers its value (only TRYAGAIN while
// its shard recovers) and takes a new one, new keys are written, and
// after the rebuild five live nodes vote. Before, two voters of three
// dying left no leader: every key command answered CLUSTERDOWN for good.
//
// Each pair runs on a cluster of its own (the seed's, so it replays);
// `make test` kills three pairs drawn from the seed — two voters, a voter
// and a non-voter, the two non-voters — and -sim.allpairs (or
// SIMCLUSTER_ALL_PAIRS=1) every one of the 21.
func TestAnyTwoNodesMayFail(t *testing.T) {
	seed := simcluster.Seed(t)
	for _, p := range killedPairs(seed) {
		t.Run(fmt.Sprintf("n%d+n%d", p[0], p[1]), func(t *testing.T) {
			c := simcluster.Start(t, seed, simcluster.Options{Nodes: pairNodes})
			keys := pairLoad(t, c)
			requireVoterTarget(t, c, 5, "with rep:3 and stripe:4+2 keys")
			if v := voterIndexes(c); !slices.Equal(v, []int{0, 1, 2, 3, 4}) {
				t.Fatalf("voters %v, want the first five nodes to join", v)
			}
			c.Kill(p[0])
			c.Kill(p[1])
			c.FailOver(p[0], p[1])
			awaitReadable(t, c, keys)
			rewriteAll(t, c, keys)
			keys = append(keys, pairKeys(t, c, "after", 4)...)
			c.Settle("rebuilt after n" + fmt.Sprint(p[0]) + " and n" + fmt.Sprint(p[1]))
			requireVoterTarget(t, c, 5, "after the pair's failure")
			for _, w := range keys {
				expectValue(t, "GET "+w.key+" after the rebuild", c.Do(c.AnyLive(), "GET", w.key), w.value)
			}
		})
	}
}

// killedPairs are the pairs of node indexes TestAnyTwoNodesMayFail kills:
// every pair with -sim.allpairs, else one pair of each kind drawn from
// the seed. The voters are the first five nodes to join (nodes 0-2
// found the cluster as voters, and promotions go in join order).
func killedPairs(seed uint64) [][2]int {
	var voterPairs, mixed, others [][2]int
	for i := range pairNodes {
		for j := i + 1; j < pairNodes; j++ {
			switch p := [2]int{i, j}; {
			case j < 5:
				voterPairs = append(voterPairs, p)
			case i < 5:
				mixed = append(mixed, p)
			default:
				others = append(others, p)
			}
		}
	}
	if *allPairs {
		return slices.Concat(voterPairs, mixed, others)
	}
	r := int(seed)
	return [][2]int{voterPairs[r%len(voterPairs)], mixed[r/7%len(mixed)], others[0]}
}

// pairLoad writes rep:3 and stripe:4+2 keys coordinated by every node and
// waits until the cluster is at rest, its voters grown.
func pairLoad(t *testing.T, c *simcluster.Cluster) []*written {
	t.Helper()
	keys := pairKeys(t, c, "before", 3)
	c.Settle("loaded")
	return keys
}

// pairKeys writes perNode keys of rep:3 and of stripe:4+2 coordinated by
// each live node.
func pairKeys(t *testing.T, c *simcluster.Cluster, prefix string, perNode int) []*written {
	t.Helper()
	var out []*written
	for _, i := range c.LiveNodes() {
		for _, spec := range []string{"rep:3", "stripe:4+2"} {
			for j := range perNode {
				k := c.KeyOn(i, fmt.Sprintf("%s:%d:%s:%d:", prefix, i, spec, j))
				w := &written{key: k, spec: spec, value: value(c, spec, k)}
				expect(t, "SET "+k, c.Do(c.AnyLive(), "SET", k, w.value, "SCHEME", spec), "+OK")
				out = append(out, w)
			}
		}
	}
	return out
}

// requireVoterTarget fails the test unless every live node's map calls
// for want voters (cluster.VoterTarget) and has as many live ones.
func requireVoterTarget(t *testing.T, c *simcluster.Cluster, want int, when string) {
	t.Helper()
	for _, i := range c.LiveNodes() {
		m := c.Node(i).Map()
		live := 0
		for _, nd := range m.Nodes {
			if nd.Voter && nd.State != cluster.Failed {
				live++
			}
		}
		if got := cluster.VoterTarget(m); got != want || live != want {
			t.Fatalf("%s: node %d's map calls for %d voters and has %d live ones, want %d (%s)", when, i, got, live, want, c.States())
		}
	}
}

// voterIndexes lists the nodes the first live node's map has voting.
func voterIndexes(c *simcluster.Cluster) []int {
	var out []int
	for i := range c.Len() {
		if c.MapNode(i).Voter {
			out = append(out, i)
		}
	}
	return out
}
