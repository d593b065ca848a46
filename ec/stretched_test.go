package ec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// stretchedRow is one row of an SRS(k, m, s) code held as the nodes hold it:
// data[n] are data node n's l/s blocks, parity[j] parity node j's l/k blocks.
type stretchedRow struct {
	layout Layout
	codec  *Codec
	data   [][][]byte
	parity [][][]byte
}

// newStretchedRow fills row 0 with random blocks and encodes every stripe
// with RS(k, m), placing blocks by the layout.
func newStretchedRow(t *testing.T, rng *rand.Rand, k, m, s, blockSize int) *stretchedRow {
	t.Helper()
	l, err := NewLayout(k, m, s)
	if err != nil {
		t.Fatal(err)
	}
	r := &stretchedRow{layout: l, codec: mustCodec(t, k, m)}
	r.data = make([][][]byte, s)
	for n := range r.data {
		r.data[n] = newShards(rng, l.DataBlocksPerNode(), 0, blockSize)
	}
	r.parity = make([][][]byte, m)
	for j := range r.parity {
		r.parity[j] = make([][]byte, l.StripesPerRow())
	}
	for stripe := range l.StripesPerRow() {
		shards := r.stripeShards(t, stripe, nil)
		for j := range m {
			shards[k+j] = make([]byte, blockSize)
		}
		if err := r.codec.Encode(shards); err != nil {
			t.Fatal(err)
		}
		for j := range m {
			r.parity[j][stripe] = shards[k+j]
		}
	}
	return r
}

// stripeShards gathers the k+m blocks of a stripe of row 0, leaving empty the
// blocks of failed nodes (numbered as in Layout.Survives).
func (r *stretchedRow) stripeShards(t *testing.T, stripe int, failed []int) [][]byte {
	t.Helper()
	l := r.layout
	shards := make([][]byte, l.K()+l.M())
	for pos := range l.K() {
		node, block, err := l.DataBlock(Addr{Row: 0, Stripe: stripe, Position: pos})
		if err != nil {
			t.Fatal(err)
		}
		if !contains(failed, node) {
			shards[pos] = bytes.Clone(r.data[node][block])
		}
	}
	for j := range l.M() {
		if !contains(failed, l.S()+j) && r.parity[j][stripe] != nil {
			shards[l.K()+j] = bytes.Clone(r.parity[j][stripe])
		}
	}
	return shards
}

// decodes reports whether every stripe reconstructs bit-exactly without the
// failed nodes; a stripe that cannot be decoded must say so with LostError.
func (r *stretchedRow) decodes(t *testing.T, failed []int) bool {
	t.Helper()
	for stripe := range r.layout.StripesPerRow() {
		want := r.stripeShards(t, stripe, nil)
		got := r.stripeShards(t, stripe, failed)
		err := r.codec.Reconstruct(got)
		if errors.Is(err, ErrTooManyLost) {
			return false
		}
		if err != nil {
			t.Fatalf("%s failed %v stripe %d: %v", r.layout, failed, stripe, err)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s failed %v stripe %d: block %d decoded wrong", r.layout, failed, stripe, i)
			}
		}
	}
	return true
}

// expandedMatrix builds H_exp = H ∘ E of Ring §3.3 equation (3): every entry
// h of H = [I; G] becomes the block h·I_{l/k}.
func expandedMatrix(k, m, s int) [][]byte {
	h := newRefCode(k, m).h
	l := k / gcd(k, s) * s
	b := l / k
	out := make([][]byte, len(h)*b)
	for row := range out {
		out[row] = make([]byte, k*b)
		for col := range out[row] {
			if row%b == col%b {
				out[row][col] = h[row/b][col/b]
			}
		}
	}
	return out
}

// Reference: Ring §3.3, "Example of building SRS(2, 1, 3)", equations (4)
// and (5): l = lcm(2, 3) = 6 blocks, two per data node, and
// P̃1 = D̃1⊕D̃4, P̃2 = D̃2⊕D̃5, P̃3 = D̃3⊕D̃6.
func TestSRSPaperExample(t *testing.T) {
	l, err := NewLayout(2, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if l.RowLen() != 6 || l.DataBlocksPerNode() != 2 || l.StripesPerRow() != 3 {
		t.Fatalf("SRS(2,1,3): l=%d, l/s=%d, l/k=%d; want 6, 2, 3", l.RowLen(), l.DataBlocksPerNode(), l.StripesPerRow())
	}

	// Equation (5): H_exp for RS(2,1) expanded with E_ij = I_3.
	eq5 := [][]byte{
		{1, 0, 0, 0, 0, 0},
		{0, 1, 0, 0, 0, 0},
		{0, 0, 1, 0, 0, 0},
		{0, 0, 0, 1, 0, 0},
		{0, 0, 0, 0, 1, 0},
		{0, 0, 0, 0, 0, 1},
		{1, 0, 0, 1, 0, 0},
		{0, 1, 0, 0, 1, 0},
		{0, 0, 1, 0, 0, 1},
	}
	if got := expandedMatrix(2, 1, 3); fmt.Sprint(got) != fmt.Sprint(eq5) {
		t.Fatalf("H_exp of SRS(2,1,3) = %v, want equation (5) %v", got, eq5)
	}

	// D_i = [D̃_{(i-1)l/s+1} .. D̃_{il/s}]: node 1 holds D̃1, D̃2; node 2 D̃3, D̃4;
	// node 3 D̃5, D̃6 (0-based below).
	r := newStretchedRow(t, testRNG(t), 2, 1, 3, 64)
	d := func(n int) []byte { return r.data[(n-1)/2][(n-1)%2] } // D̃n
	p := func(n int) []byte { return r.parity[0][n-1] }         // P̃n
	for _, eq := range [][3]int{{1, 1, 4}, {2, 2, 5}, {3, 3, 6}} {
		want := make([]byte, 64)
		if err := Delta(want, d(eq[1]), d(eq[2])); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p(eq[0]), want) {
			t.Errorf("P̃%d != D̃%d ⊕ D̃%d", eq[0], eq[1], eq[2])
		}
	}
}

// Ring §3.3 equation (2): encoding each stripe through the layout produces
// exactly H_exp · [D̃_1 .. D̃_l], for stretched and unstretched codes.
func TestSRSMatchesExpandedMatrix(t *testing.T) {
	rng := testRNG(t)
	for _, kms := range [][3]int{{2, 1, 3}, {2, 2, 4}, {3, 2, 4}, {3, 2, 6}, {4, 2, 6}, {3, 1, 5}, {4, 3, 4}} {
		k, m, s := kms[0], kms[1], kms[2]
		r := newStretchedRow(t, rng, k, m, s, 16)
		var row [][]byte // D̃_1..D̃_l in order
		for n := range s {
			row = append(row, r.data[n]...)
		}
		hexp := expandedMatrix(k, m, s)
		for j := range m {
			for stripe := range r.layout.StripesPerRow() {
				want := mulRow(hexp[len(row)+j*r.layout.StripesPerRow()+stripe], row)
				if !bytes.Equal(r.parity[j][stripe], want) {
					t.Fatalf("%s: parity node %d block %d != H_exp row", r.layout, j, stripe)
				}
			}
		}
	}
}

// "Note that SRS(k, m, k) is identical to RS(k, m)" (Ring §3.3): data node n's
// block t is position n of row t, and each row is one RS codeword.
func TestSRSWithoutStretchIsRS(t *testing.T) {
	for k := 1; k <= 6; k++ {
		l, err := NewLayout(k, 2, k)
		if err != nil {
			t.Fatal(err)
		}
		if l.StripesPerRow() != 1 || l.DataBlocksPerNode() != 1 {
			t.Fatalf("%s: %d stripes per row, %d blocks per node; want 1, 1", l, l.StripesPerRow(), l.DataBlocksPerNode())
		}
		for node := range k {
			for block := range 5 {
				a, err := l.Locate(node, block)
				if err != nil || a != (Addr{Row: block, Stripe: 0, Position: node}) {
					t.Fatalf("%s: Locate(%d, %d) = %+v, %v", l, node, block, a, err)
				}
			}
		}
		if p, _ := l.ParityBlock(7, 0); p != 7 {
			t.Fatalf("%s: parity of row 7 at block %d", l, p)
		}
	}
}

// Locate and DataBlock are inverse bijections, parity blocks likewise, and
// the k blocks of a stripe sit on k distinct data nodes.
func TestLayoutMappingsAreBijective(t *testing.T) {
	for k := 1; k <= 6; k++ {
		for s := k; s <= 8; s++ {
			l, err := NewLayout(k, 2, s)
			if err != nil {
				t.Fatal(err)
			}
			checkDataBijection(t, l)
			checkParityBijection(t, l)
			checkStripeNodesDistinct(t, l)
		}
	}
}

func checkDataBijection(t *testing.T, l Layout) {
	const rows = 3
	seen := map[Addr]bool{}
	for node := range l.S() {
		for block := range rows * l.DataBlocksPerNode() {
			a, err := l.Locate(node, block)
			if err != nil {
				t.Fatal(err)
			}
			if seen[a] {
				t.Fatalf("%s: two blocks map to %+v", l, a)
			}
			seen[a] = true
			n, b, err := l.DataBlock(a)
			if err != nil || n != node || b != block {
				t.Fatalf("%s: DataBlock(Locate(%d, %d)) = %d, %d, %v", l, node, block, n, b, err)
			}
		}
	}
	if len(seen) != rows*l.RowLen() {
		t.Fatalf("%s: %d addresses for %d blocks", l, len(seen), rows*l.RowLen())
	}
}

func checkParityBijection(t *testing.T, l Layout) {
	for block := range 3 * l.StripesPerRow() {
		row, stripe, err := l.ParityStripe(block)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := l.ParityBlock(row, stripe); err != nil || b != block {
			t.Fatalf("%s: ParityBlock(ParityStripe(%d)) = %d, %v", l, block, b, err)
		}
	}
}

func checkStripeNodesDistinct(t *testing.T, l Layout) {
	for stripe := range l.StripesPerRow() {
		nodes, err := l.StripeNodes(stripe)
		if err != nil {
			t.Fatal(err)
		}
		used := map[int]bool{}
		for pos, n := range nodes {
			if used[n] {
				t.Fatalf("%s: stripe %d uses node %d twice", l, stripe, n)
			}
			used[n] = true
			if a, _ := l.Locate(n, 0); a.Stripe == stripe && a.Position != pos {
				t.Fatalf("%s: StripeNodes and Locate disagree", l)
			}
		}
	}
}

func TestLayoutRejectsBadInput(t *testing.T) {
	for _, kms := range [][3]int{{3, 1, 2}, {0, 1, 3}, {2, -1, 3}, {2, 2, 254},
		{1, 1, math.MaxInt}, {1, math.MaxInt, 2}, {math.MaxInt, 1, math.MaxInt}, {1, 1, 0}} {
		_, err := NewLayout(kms[0], kms[1], kms[2])
		if !errors.Is(err, ErrParams) || !strings.Contains(err.Error(), "SRS(") {
			t.Errorf("NewLayout%v: got %v, want ErrParams naming an SRS code", kms, err)
		}
	}
	l, _ := NewLayout(2, 1, 3)
	checks := map[string]error{}
	_, checks["node"] = l.Locate(3, 0)
	_, checks["block"] = l.Locate(0, -1)
	_, _, checks["position"] = l.DataBlock(Addr{Position: 2})
	_, _, checks["stripe"] = l.DataBlock(Addr{Stripe: 3})
	_, _, checks["row"] = l.DataBlock(Addr{Row: -1})
	_, _, checks["huge row"] = l.DataBlock(Addr{Row: math.MaxInt / 2})
	_, checks["huge parity row"] = l.ParityBlock(math.MaxInt/3, 0)
	_, checks["parity stripe"] = l.ParityBlock(0, 3)
	_, _, checks["parity block"] = l.ParityStripe(-1)
	_, checks["stripe nodes"] = l.StripeNodes(-1)
	_, checks["huge block"] = l.Locate(0, math.MaxInt)
	_, _, checks["huge parity block"] = l.ParityStripe(math.MaxInt)
	one, _ := NewLayout(1, 1, 3) // l/k = s: the widest parity rows
	_, checks["parity block overflow"] = one.ParityBlock(math.MaxInt/3, 2)
	ok, err := l.Survives([]int{4})
	checks["failed node"] = err
	if ok {
		t.Error("Survives with an invalid node reported true")
	}
	for name, err := range checks {
		if !errors.Is(err, ErrIndex) {
			t.Errorf("%s: got %v, want ErrIndex", name, err)
		}
	}
}

var stretchedCodes = [][3]int{
	{2, 1, 2}, {2, 1, 3}, {2, 1, 4}, {2, 2, 3}, {2, 2, 4}, {2, 2, 6},
	{3, 1, 3}, {3, 1, 4}, {3, 1, 6}, {3, 2, 3}, {3, 2, 4}, {3, 2, 6},
	{4, 1, 6}, {4, 2, 4}, {4, 2, 6},
}

// Ring §3.3, "Properties": SRS(k, m, s) tolerates any m failures among its
// s+m nodes. Decoded for real, every failure set.
func TestSRSDecodesAnyMFailures(t *testing.T) {
	rng := testRNG(t)
	for _, kms := range stretchedCodes {
		r := newStretchedRow(t, rng, kms[0], kms[1], kms[2], 8)
		forEachSubset(kms[2]+kms[1], kms[1], func(failed []int) {
			if ok, _ := r.layout.Survives(failed); !ok || !r.decodes(t, failed) {
				t.Fatalf("%s: cannot decode without nodes %v", r.layout, failed)
			}
		})
	}
}

// Ring §3.3: SRS "can tolerate at least m and sometimes more simultaneous
// failures", e.g. SRS(2,1,4) survives two failed data nodes that hold
// independent blocks. Survives must agree with real decoding on every set of
// m+1 and m+2 failures; the counts are written to testdata/srs-tolerance.golden.
func TestSRSExtraTolerance(t *testing.T) {
	rng := testRNG(t)
	var report strings.Builder
	report.WriteString("| code | nodes | m+1 failures survived | m+2 failures survived |\n|---|---|---|---|\n")
	for _, kms := range stretchedCodes {
		r := newStretchedRow(t, rng, kms[0], kms[1], kms[2], 8)
		n, m := kms[2]+kms[1], kms[1]
		var survived, total [2]int
		forEachSubset(n, m+2, func(failed []int) {
			extra := len(failed) - m - 1
			if extra < 0 {
				return
			}
			ok, _ := r.layout.Survives(failed)
			if ok != r.decodes(t, failed) {
				t.Fatalf("%s: Survives(%v) = %v disagrees with decoding", r.layout, failed, ok)
			}
			total[extra]++
			if ok {
				survived[extra]++
			}
		})
		if kms[0] == kms[2] && survived[0] != 0 {
			t.Errorf("%s is plain RS but survived %d sets of m+1 failures", r.layout, survived[0])
		}
		fmt.Fprintf(&report, "| %s | %d | %d / %d | %d / %d |\n", r.layout, n, survived[0], total[0], survived[1], total[1])
	}
	l, _ := NewLayout(2, 1, 4)
	if ok, _ := l.Survives([]int{0, 1}); !ok {
		t.Error("SRS(2,1,4) must survive data nodes 0 and 1 (blocks of different stripes)")
	}
	if ok, _ := l.Survives([]int{0, 2}); ok {
		t.Error("SRS(2,1,4) cannot survive data nodes 0 and 2 (both blocks of stripe 0)")
	}
	checkGolden(t, "srs-tolerance.golden", report.String())
}
