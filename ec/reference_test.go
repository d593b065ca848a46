package ec

import (
	"errors"
	"math/bits"
)

// refCode is a slow RS(k, m) built only on the table arithmetic of gf.go: a
// matrix-vector product to encode and Gauss-Jordan inversion to decode. The
// fast path (klauspost's SIMD kernels) is checked against it.
type refCode struct {
	k, m int
	h    [][]byte // (k+m)×k: identity over the generator
}

func newRefCode(k, m int) refCode {
	h := make([][]byte, 0, k+m)
	for i := range k {
		row := make([]byte, k)
		row[i] = 1
		h = append(h, row)
	}
	return refCode{k: k, m: m, h: append(h, generatorMatrix(k, m)...)}
}

// encode returns the m parity shards of the data.
func (r refCode) encode(data [][]byte) [][]byte {
	parity := make([][]byte, r.m)
	for j := range parity {
		parity[j] = mulRow(r.h[r.k+j], data)
	}
	return parity
}

// decode returns the k data shards from a shard set in which empty shards
// are missing.
func (r refCode) decode(shards [][]byte) ([][]byte, error) {
	var rows [][]byte
	var present [][]byte
	for i, s := range shards {
		if len(s) > 0 && len(rows) < r.k {
			rows = append(rows, r.h[i])
			present = append(present, s)
		}
	}
	if len(rows) < r.k {
		return nil, errors.New("ref: fewer than k shards")
	}
	inv, ok := invert(rows)
	if !ok {
		return nil, errors.New("ref: singular submatrix")
	}
	data := make([][]byte, r.k)
	for i := range data {
		data[i] = mulRow(inv[i], present)
	}
	return data, nil
}

// mulRow returns Σ_t row[t]·shards[t], byte by byte.
func mulRow(row []byte, shards [][]byte) []byte {
	out := make([]byte, len(shards[0]))
	for t, coef := range row {
		for b, v := range shards[t] {
			out[b] ^= gfMul(coef, v)
		}
	}
	return out
}

// invert returns the inverse of a square matrix by Gauss-Jordan elimination,
// or false if it is singular.
func invert(a [][]byte) ([][]byte, bool) {
	n := len(a)
	work := make([][]byte, n)
	for i := range work {
		work[i] = make([]byte, 2*n)
		copy(work[i], a[i])
		work[i][n+i] = 1
	}
	for col := range n {
		pivot := col
		for pivot < n && work[pivot][col] == 0 {
			pivot++
		}
		if pivot == n {
			return nil, false
		}
		work[col], work[pivot] = work[pivot], work[col]
		scale := gfInv(work[col][col])
		for c := range work[col] {
			work[col][c] = gfMul(work[col][c], scale)
		}
		for r := range n {
			if f := work[r][col]; r != col && f != 0 {
				for c := range work[r] {
					work[r][c] ^= gfMul(f, work[col][c])
				}
			}
		}
	}
	inv := make([][]byte, n)
	for i := range inv {
		inv[i] = work[i][n:]
	}
	return inv, true
}

// forEachSubset calls fn with every subset of {0..n-1} of at most maxSize
// elements, as a sorted index list.
func forEachSubset(n, maxSize int, fn func([]int)) {
	for mask := uint64(0); mask < 1<<n; mask++ {
		if bits.OnesCount64(mask) > maxSize {
			continue
		}
		var set []int
		for i := range n {
			if mask&(1<<i) != 0 {
				set = append(set, i)
			}
		}
		fn(set)
	}
}
