package reliability

import (
	"math"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// within fails t unless got is within rel (relative) of want.
func within(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.6g, want %.6g (±%.2g%%)", what, got, want, 100*rel)
	}
}

// mttdlOf builds the uncut chain and returns its MTTDL.
func mttdlOf(t *testing.T, c Cluster, mix Mix) float64 {
	t.Helper()
	if err := c.validate(mix); err != nil {
		t.Fatal(err)
	}
	ch, err := buildChain(c, mix, c.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	tau, err := ch.mttdl()
	if err != nil {
		t.Fatal(err)
	}
	return tau
}

// A mirrored pair, rep:2 on two nodes, has MTTDL (3λ + μ) / (2λ²).
func TestMirroredPairClosedForm(t *testing.T) {
	for _, tc := range []struct{ mttf, rebuild float64 }{{1000, 10}, {8766, 1}, {8766, 0.01}, {50, 50}} {
		c := Cluster{Nodes: 2, NodeMTTF: tc.mttf, Rebuild: tc.rebuild}
		l, mu := 1/tc.mttf, 1/tc.rebuild
		within(t, "rep:2 MTTDL", mttdlOf(t, c, Single(Rep(2))), (3*l+mu)/(2*l*l), 1e-9)
	}
}

// birthDeathMTTDL is the mean time to absorption of a birth–death chain
// from state 0: failures at fail(i) from state i, repairs at repair(i)
// from i to i−1, absorption on a failure from state last. With
// π_0 = 1, π_j = Π fail(k−1)/repair(k), it is Σ_i (Σ_{j≤i} π_j)/(fail(i) π_i).
func birthDeathMTTDL(last int, fail, repair func(int) float64) float64 {
	pi := make([]float64, last+1)
	pi[0] = 1
	for j := 1; j <= last; j++ {
		pi[j] = pi[j-1] * fail(j-1) / repair(j)
	}
	total, prefix := 0.0, 0.0
	for i := 0; i <= last; i++ {
		prefix += pi[i]
		total += prefix / (fail(i) * pi[i])
	}
	return total
}

// RS(K, M) on K+M nodes with independent failures and one rebuild at a
// time is the birth–death chain of Ring Figure 14; with parallel rebuild
// state i repairs at iμ.
func TestReedSolomonClosedForm(t *testing.T) {
	for _, s := range []Scheme{Code("stripe", 2, 1), Code("stripe", 3, 2), Code("stripe", 4, 2), Code("split", 3, 3), Code("split", 6, 3), Rep(3), Rep(4)} {
		for _, parallel := range []bool{false, true} {
			n := s.Width()
			c := Cluster{Nodes: n, NodeMTTF: 2000, Rebuild: 4, Detection: 0.5, ParallelRebuild: parallel}
			l, mu := 1/c.NodeMTTF, 1/(c.Rebuild+c.Detection)
			want := birthDeathMTTDL(s.Tolerance(),
				func(i int) float64 { return float64(n-i) * l },
				func(i int) float64 {
					if parallel {
						return float64(i) * mu
					}
					return mu
				})
			within(t, s.Name+" MTTDL", mttdlOf(t, c, Single(s)), want, 1e-9)
		}
	}
}

// Ring appendix A.1 prints the generator of RS(3, 2) (five nodes, one
// rebuild at a time). stripe:3+2 on five nodes must give the same
// transient loss probability as that 4×4 matrix and the same MTTDL.
func TestRingAppendixRS32Matrix(t *testing.T) {
	const l, mu = 1.0 / 5000, 1.0 / 24
	ring := mat.NewDense(4, 4, []float64{
		-5 * l, 5 * l, 0, 0,
		mu, -4*l - mu, 4 * l, 0,
		0, mu, -3*l - mu, 3 * l,
		0, 0, 0, 0,
	})
	c := Cluster{Nodes: 5, NodeMTTF: 1 / l, Rebuild: 1 / mu}
	ch, err := buildChain(c, Single(Code("stripe", 3, 2)), 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, hours := range []float64{24, 720, HoursPerYear, 10 * HoursPerYear} {
		var at, e mat.Dense
		at.Scale(hours, ring)
		e.Exp(&at)
		within(t, "P(FS) at "+fmtHours(hours), ch.expLoss(hours), e.At(0, 3), 1e-6)
	}
	// The MTTDL of Ring's chain: the birth–death form of its matrix.
	want := birthDeathMTTDL(2, func(i int) float64 { return float64(5-i) * l }, func(int) float64 { return mu })
	tau, err := ch.mttdl()
	if err != nil {
		t.Fatal(err)
	}
	within(t, "MTTDL", tau, want, 1e-9)
}

func fmtHours(h float64) string { return strconv.FormatFloat(h, 'g', -1, 64) + "h" }
