package reliability

import (
	"testing"
)

// The lumped chain (Ring A.2) takes the failed nodes of state i to be any
// i-set, equally likely. On memgest's ring that is not quite so: a rebuild
// empties a dangerous set as fast as a harmless one, but a set survives
// longer when its nodes are far apart. Where both chains run, the lumped
// one must stay within a small factor of the exact one, which is how far
// its figures can be trusted (docs/reliability.md).
func TestLumpedChainStaysNearTheExactOne(t *testing.T) {
	for _, tc := range []struct {
		c   Cluster
		s   Scheme
		max float64 // the largest ratio allowed either way
	}{
		// At realistic rates loss comes almost only through the fewest
		// failures that can lose data, whose share the lumped chain
		// counts exactly.
		{Cluster{Nodes: 12, NodeMTTF: 2160, Rebuild: 1}, Code("stripe", 4, 2), 1.01},
		{Cluster{Nodes: 10, NodeMTTF: 2160, Rebuild: 1}, Rep(3), 1.01},
		{Cluster{Nodes: 16, NodeMTTF: 2160, Rebuild: 1, ParallelRebuild: true}, Code("split", 6, 3), 1.01},
		{Cluster{Nodes: 6, NodeMTTF: 2160, Rebuild: 1}, Code("stripe", 4, 2), 1.0001},
		// Rebuilds a tenth of the MTTF long: deeper states matter, and
		// the assumption shows, by 1–2%.
		{Cluster{Nodes: 12, NodeMTTF: 100, Rebuild: 10}, Code("stripe", 4, 2), 1.05},
		{Cluster{Nodes: 12, NodeMTTF: 100, Rebuild: 10}, Hybrid(3, 3), 1.05},
	} {
		exact := mttdlOf(t, tc.c, Single(tc.s))
		ch, err := lumpedChain(tc.c, Single(tc.s), tc.s.Tolerance()+3)
		if err != nil {
			t.Fatal(err)
		}
		lumped, err := ch.mttdl()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s on %d nodes: exact %.4g h, lumped %.4g h (%d states)", tc.s.Name, tc.c.Nodes, exact, lumped, ch.transient())
		if r := lumped / exact; r > tc.max || r < 1/tc.max {
			t.Errorf("%s on %d nodes: lumped MTTDL %.4g h is %.3f× the exact %.4g h", tc.s.Name, tc.c.Nodes, lumped, r, exact)
		}
	}
}

// Gosper's hack walks every k-subset of n bits once, in order.
func TestNextCombinationEnumeratesEverySubset(t *testing.T) {
	seen := 0
	for set := uint64(1)<<3 - 1; set < 1<<7 && set != 0; set = nextCombination(set) {
		seen++
	}
	if seen != 35 { // C(7, 3)
		t.Errorf("%d 3-subsets of 7, want 35", seen)
	}
}

// On 64 nodes a 14-wide code needs the lumped chain; it answers, says so,
// and refuses host failures it cannot place.
func TestWideCodesOnLargeClustersUseTheLumpedChain(t *testing.T) {
	c := Cluster{Nodes: 64, NodeMTTF: 2160, Rebuild: 1}
	r, err := Evaluate(c, Single(Code("split", 10, 4)), HoursPerYear)
	if err != nil {
		t.Fatal(err)
	}
	if r.Chain != "lumped" || r.Nines < 5 {
		t.Errorf("split:10+4 on 64 nodes: %+v", r)
	}
	if r3, err := Evaluate(c, Single(Rep(3)), HoursPerYear); err != nil || r3.Chain != "exact" {
		t.Errorf("rep:3 on 64 nodes: %+v, %v; want the exact chain", r3, err)
	}
	c.Hosts = make([]int, 64)
	for i := range c.Hosts {
		c.Hosts[i] = i % 8
	}
	c.HostMTTF = HoursPerYear
	if _, err := Evaluate(c, Single(Code("split", 10, 4)), HoursPerYear); err == nil {
		t.Error("host failures were modelled on the lumped chain")
	}
}
