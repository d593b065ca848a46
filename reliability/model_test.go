package reliability

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// KVMD §5.1 eq. 2 approximates a reliability set's MTTDL by
// μ^(f−1) / ((N)(f−1) λ^f), (N)(f−1) = N(N−1)…(N−f+1), for μ ≫ λ. With
// μ/λ = 10⁵ the chain must agree to within (f·N·λ/μ)-small terms.
func TestKVMDEquation2(t *testing.T) {
	for _, tc := range []struct {
		s Scheme
		f int // object losses that lose data: r for rep, m+1 for codes
	}{{Rep(2), 2}, {Rep(3), 3}, {Code("split", 4, 2), 3}, {Code("stripe", 6, 3), 4}} {
		n := tc.s.Width()
		c := Cluster{Nodes: n, NodeMTTF: 1e5, Rebuild: 1}
		l, mu := 1/c.NodeMTTF, 1/c.Rebuild
		falling := 1.0
		for i := 0; i < tc.f; i++ {
			falling *= float64(n - i)
		}
		approx := math.Pow(mu, float64(tc.f-1)) / (falling * math.Pow(l, float64(tc.f)))
		within(t, tc.s.Name+" MTTDL vs KVMD eq. 2", mttdlOf(t, c, Single(tc.s)), approx, 1e-3)
	}
}

// KVMD Table 3 says one more parity raises MTTDL by orders of magnitude,
// which the chain confirms, and that halving MTTR does much more than
// doubling MTTF, which neither its own eq. 2 (MTTDL ∝ μ^(f−1)/λ^f: ×2^(f−1)
// against ×2^f) nor the chain supports: docs/reliability.md says so.
func TestKVMDTable3Factors(t *testing.T) {
	base := Cluster{Nodes: 6, NodeMTTF: 8766, Rebuild: 1}
	m1 := mttdlOf(t, base, Single(Code("stripe", 4, 1)))
	m2 := mttdlOf(t, base, Single(Code("stripe", 4, 2)))
	if m2/m1 < 1000 {
		t.Errorf("a second parity raised MTTDL %.0f×, want orders of magnitude", m2/m1)
	}
	s := Single(Code("stripe", 4, 2)) // f = 3
	halfMTTR, doubleMTTF := base, base
	halfMTTR.Rebuild /= 2
	doubleMTTF.NodeMTTF *= 2
	gainMTTR := mttdlOf(t, halfMTTR, s) / mttdlOf(t, base, s)
	gainMTTF := mttdlOf(t, doubleMTTF, s) / mttdlOf(t, base, s)
	within(t, "gain from halving MTTR", gainMTTR, 4, 0.01)
	within(t, "gain from doubling MTTF", gainMTTF, 8, 0.01)
}

// The chain merges failed-node sets that a rotation of the ring maps onto
// each other. Building it without merging must give the same MTTDL.
func TestSymmetryMergingIsExact(t *testing.T) {
	for _, tc := range []struct {
		c   Cluster
		mix Mix
	}{
		{Cluster{Nodes: 7, NodeMTTF: 500, Rebuild: 10}, Single(Code("stripe", 3, 2))},
		{Cluster{Nodes: 8, NodeMTTF: 500, Rebuild: 10, Hosts: []int{0, 0, 1, 1, 2, 2, 3, 3}, HostMTTF: 900}, Single(Rep(3))},
		{Cluster{Nodes: 9, NodeMTTF: 300, Rebuild: 10, ParallelRebuild: true},
			Mix{{Scheme: Hybrid(3, 2), Fraction: 0.3}, {Scheme: Rep(2), Fraction: 0.7}}},
	} {
		merged := newBuilder(tc.c, tc.mix, tc.c.Nodes)
		whole := newBuilder(tc.c, tc.mix, tc.c.Nodes)
		whole.step = tc.c.Nodes
		a, err := merged.build()
		if err != nil {
			t.Fatal(err)
		}
		b, err := whole.build()
		if err != nil {
			t.Fatal(err)
		}
		if a.transient() >= b.transient() {
			t.Errorf("%s: merging kept %d of %d states", tc.mix.Name(), a.transient(), b.transient())
		}
		ta, _ := a.mttdl()
		tb, _ := b.mttdl()
		within(t, tc.mix.Name()+" merged MTTDL", ta, tb, 1e-9)
	}
}

// Evaluate cuts the chain at tolerance+3 failures at once; with hours-long
// rebuilds and year-long MTTFs the cut must not move the nines.
func TestDepthCutIsNegligible(t *testing.T) {
	c := Cluster{Nodes: 10, NodeMTTF: 8766, Rebuild: 2, Detection: 0.01}
	for _, s := range []Scheme{Rep(2), Code("stripe", 4, 2), Hybrid(4, 2)} {
		r, err := Evaluate(c, Single(s), HoursPerYear)
		if err != nil {
			t.Fatal(err)
		}
		if r.Depth != s.Tolerance()+DefaultDepthBeyondTolerance {
			t.Errorf("%s cut at depth %d", s.Name, r.Depth)
		}
		within(t, s.Name+" MTTDL at the default cut", r.MTTDLHours, mttdlOf(t, c, Single(s)), 1e-6)
	}
	// On 64 nodes the full chain would be far too large: the cut is made
	// shallower, never below tolerance, and reported.
	big := Cluster{Nodes: 64, NodeMTTF: 8766, Rebuild: 2}
	r, err := Evaluate(big, Single(Rep(3)), HoursPerYear)
	if err != nil {
		t.Fatal(err)
	}
	if r.Depth < 2 || r.Depth >= 5 || r.States > MaxStates {
		t.Errorf("64 nodes rep:3: depth %d, %d states", r.Depth, r.States)
	}
}

// The loss probability comes from exp(Qt) where it is accurate, and from
// 1 − exp(−t/MTTDL) below 1e-9; where both apply they must agree.
func TestMatrixExponentialAndExponentialLawAgree(t *testing.T) {
	for _, tc := range []struct {
		c Cluster
		s Scheme
	}{
		{Cluster{Nodes: 6, NodeMTTF: 8766, Rebuild: 24}, Rep(2)},
		{Cluster{Nodes: 6, NodeMTTF: 2000, Rebuild: 24}, Code("stripe", 4, 2)},
		{Cluster{Nodes: 8, NodeMTTF: 1000, Rebuild: 12, Hosts: []int{0, 1, 2, 3, 0, 1, 2, 3}, HostMTTF: 4000}, Rep(3)},
	} {
		ch, err := buildChain(tc.c, Single(tc.s), tc.c.Nodes)
		if err != nil {
			t.Fatal(err)
		}
		tau, _ := ch.mttdl()
		exact := ch.expLoss(HoursPerYear)
		if exact < 1e-8 || exact > 0.5 {
			t.Fatalf("%s: P(loss) %.3g is outside the range this test means to cover", tc.s.Name, exact)
		}
		within(t, tc.s.Name+" 1−exp(−t/MTTDL)", -math.Expm1(-HoursPerYear/tau), exact, 0.01)
	}
}

// The state-reduction solve must match gonum's LU where −Q_TT is well
// conditioned.
func TestStateReductionMatchesLU(t *testing.T) {
	c := Cluster{Nodes: 7, NodeMTTF: 200, Rebuild: 8, Hosts: []int{0, 0, 1, 1, 2, 2, 3}, HostMTTF: 600}
	ch, err := buildChain(c, Mix{{Scheme: Code("stripe", 3, 2), Fraction: 1}, {Scheme: Rep(2), Fraction: 1}}, c.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	n := ch.transient()
	var a mat.Dense
	a.Scale(-1, ch.q.Slice(0, n, 0, n))
	ones := mat.NewVecDense(n, nil)
	for i := range n {
		ones.SetVec(i, 1)
	}
	var tau mat.VecDense
	if err := tau.SolveVec(&a, ones); err != nil {
		t.Fatal(err)
	}
	got, err := ch.mttdl()
	if err != nil {
		t.Fatal(err)
	}
	within(t, "state reduction vs LU", got, tau.AtVec(0), 1e-9)
}

// Placement decides what a host failure costs: rep:2 whose two copies sit
// on consecutive nodes loses data with every host that holds two
// consecutive nodes, not when hosts alternate.
func TestHostsInBlocksCostNines(t *testing.T) {
	base := Cluster{Nodes: 6, NodeMTTF: 8766, Rebuild: 1, HostMTTF: 5 * 8766}
	blocks, alternate := base, base
	blocks.Hosts = []int{0, 0, 1, 1, 2, 2}
	alternate.Hosts = []int{0, 1, 2, 0, 1, 2}
	rb, err := Evaluate(blocks, Single(Rep(2)), HoursPerYear)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := Evaluate(alternate, Single(Rep(2)), HoursPerYear)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks: a host failure is a loss, at 3 hosts / 5 years ≈ 0.45 a year.
	within(t, "blocks: P(loss in a year)", rb.LossProbability, -math.Expm1(-3.0/5), 0.01)
	if ra.Nines < rb.Nines+2 {
		t.Errorf("alternating hosts %.2f nines, blocks %.2f: want two more", ra.Nines, rb.Nines)
	}
}

// Rotation placement makes hybrid's replica position no help against
// losing some key: any M+1 failures within one window also fill the
// window that ends at the last of them, whose replica is then down.
func TestHybridLosesLikeStripeUnderRotation(t *testing.T) {
	c := Cluster{Nodes: 12, NodeMTTF: 1000, Rebuild: 20}
	h := mttdlOf(t, c, Single(Hybrid(4, 2)))
	s := mttdlOf(t, c, Single(Code("stripe", 4, 2)))
	within(t, "hybrid:4+2 MTTDL", h, s, 1e-9)
}

func TestEvaluateRejectsBadInput(t *testing.T) {
	good := Cluster{Nodes: 6, NodeMTTF: 8766, Rebuild: 1}
	for _, tc := range []struct {
		name string
		c    Cluster
		mix  Mix
		want string
	}{
		{"no nodes", Cluster{NodeMTTF: 1, Rebuild: 1}, Single(Rep(2)), "nodes"},
		{"65 nodes", Cluster{Nodes: 65, NodeMTTF: 1, Rebuild: 1}, Single(Rep(2)), "nodes"},
		{"zero MTTF", Cluster{Nodes: 6, Rebuild: 1}, Single(Rep(2)), "MTTF"},
		{"NaN rebuild", Cluster{Nodes: 6, NodeMTTF: 1, Rebuild: math.NaN()}, Single(Rep(2)), "rebuild"},
		{"negative detection", Cluster{Nodes: 6, NodeMTTF: 1, Rebuild: 1, Detection: -1}, Single(Rep(2)), "detection"},
		{"hosts without MTTF length", Cluster{Nodes: 6, NodeMTTF: 1, Rebuild: 1, Hosts: []int{0, 1}}, Single(Rep(2)), "hosts"},
		{"host MTTF without hosts", Cluster{Nodes: 6, NodeMTTF: 1, Rebuild: 1, HostMTTF: 10}, Single(Rep(2)), "host"},
		{"too wide", good, Single(Code("stripe", 6, 2)), "needs 8 nodes"},
		{"no scheme", good, nil, "no scheme"},
		{"rep:0", good, Single(Rep(0)), "copy"},
		{"zero share", good, Mix{{Scheme: Rep(2)}}, "share"},
	} {
		_, err := Evaluate(tc.c, tc.mix, HoursPerYear)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := Evaluate(good, Single(Rep(2)), 0); err == nil {
		t.Error("a zero mission time was accepted")
	}
}

func TestCheapestAndSweep(t *testing.T) {
	c := Cluster{Nodes: 6, NodeMTTF: 8766, Rebuild: 1, Detection: 0.01}
	results, err := Compare(c, []Scheme{None(), Rep(2), Rep(3), Code("stripe", 4, 1), Code("stripe", 4, 2)}, HoursPerYear)
	if err != nil {
		t.Fatal(err)
	}
	best, ok := Cheapest(results, 5)
	if !ok || best.Scheme != "stripe:4+2" {
		t.Errorf("cheapest with 5 nines: %+v %v, want stripe:4+2", best, ok)
	}
	if _, ok := Cheapest(results, 40); ok {
		t.Error("a scheme reached 40 nines")
	}
	sweep, err := Sweep(c, Single(Code("stripe", 4, 2)), HoursPerYear, []float64{0.5, 2})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]float64{}
	for _, s := range sweep {
		by[s.Input] = append(by[s.Input], s.Nines)
	}
	if by["node-mttf"][1] <= by["node-mttf"][0] || by["rebuild"][1] >= by["rebuild"][0] {
		t.Errorf("sweep: more MTTF or less rebuild time must add nines: %+v", sweep)
	}
}
