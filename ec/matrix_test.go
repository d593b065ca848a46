package ec

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// MDS: any k rows of H = [I; G] must be independent, i.e. every choice of k
// surviving shards decodes. Checked for every subset, not sampled.
func TestGeneratorIsMDS(t *testing.T) {
	codes := [][2]int{{10, 4}, {6, 3}, {12, 4}}
	for k := 1; k <= 8; k++ {
		for m := 1; m <= 5; m++ {
			codes = append(codes, [2]int{k, m})
		}
	}
	for _, km := range codes {
		k, m := km[0], km[1]
		h := newRefCode(k, m).h
		checked := 0
		forEachSubset(k+m, m, func(lost []int) {
			if len(lost) != m {
				return
			}
			if _, ok := invert(survivingRows(h, lost)); !ok {
				t.Fatalf("RS(%d,%d): rows without %v are singular", k, m, lost)
			}
			checked++
		})
		if checked == 0 {
			t.Fatalf("RS(%d,%d): no subset checked", k, m)
		}
	}
}

func survivingRows(h [][]byte, lost []int) [][]byte {
	var rows [][]byte
	for i, row := range h {
		if !contains(lost, i) {
			rows = append(rows, row)
		}
	}
	return rows
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestGeneratorFirstRowAndColumnAreOnes(t *testing.T) {
	g := generatorMatrix(MaxShards-16, 16)
	for i, v := range g[0] {
		if v != 1 {
			t.Fatalf("G[0][%d] = %d, want 1 (single parity must be XOR)", i, v)
		}
	}
	for j := range g {
		if g[j][0] != 1 {
			t.Fatalf("G[%d][0] = %d, want 1", j, g[j][0])
		}
	}
}

// The extreme codes k+m = 255 still have only non-zero coefficients, which
// the Cauchy construction promises while x_j ⊕ y_i ≠ 0.
func TestGeneratorCoefficientsNonZeroAtLimits(t *testing.T) {
	for _, km := range [][2]int{{MaxShards - 1, 1}, {1, MaxShards - 1}, {128, 127}} {
		for j, row := range generatorMatrix(km[0], km[1]) {
			for i, v := range row {
				if v == 0 {
					t.Fatalf("RS(%d,%d): G[%d][%d] = 0", km[0], km[1], j, i)
				}
			}
		}
	}
}

// Stored parity must decode with every later build: pin the coefficients and
// the parity bytes of fixed input. Regenerate only for a deliberate format
// change, with -update.
func TestGeneratorGolden(t *testing.T) {
	var b strings.Builder
	b.WriteString("# G[j][i] for j < 8, i < 16 (hex); every RS(k,m) uses the top-left m×k block\n")
	for _, row := range generatorMatrix(16, 8) {
		fmt.Fprintf(&b, "%x\n", row)
	}
	b.WriteString("# sha256 of the parity of 64-byte shards with data[i][b] = 31·i + 7·b\n")
	for _, km := range [][2]int{{2, 1}, {3, 2}, {4, 2}, {10, 4}} {
		fmt.Fprintf(&b, "RS(%d,%d) %x\n", km[0], km[1], parityDigest(t, km[0], km[1]))
	}
	checkGolden(t, "generator.golden", b.String())
}

func parityDigest(t *testing.T, k, m int) []byte {
	t.Helper()
	c, err := New(k, m)
	if err != nil {
		t.Fatal(err)
	}
	shards := make([][]byte, k+m)
	for i := range shards {
		shards[i] = make([]byte, 64)
		for b := range shards[i] {
			if i < k {
				shards[i][b] = byte(31*i + 7*b)
			}
		}
	}
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, p := range shards[k:] {
		h.Write(p)
	}
	return h.Sum(nil)
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s changed:\n--- got\n%s--- want\n%s", path, got, want)
	}
}
