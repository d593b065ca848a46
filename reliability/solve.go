package reliability

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// MaxExpStates is the largest chain whose transient probabilities are
// taken from the matrix exponential; larger chains use the exponential
// law of the time to loss (see lossWithin).
const MaxExpStates = 400

// mttdl is the mean time to absorption from "all up": τ solves
// −Q_TT·τ = 1 over the transient states.
//
// The system is solved by state reduction (Grassmann, Taksar and Heyman's
// variant of Gaussian elimination): eliminating state k folds its
// transitions into the others' as products and sums of rates, and each
// pivot is recomputed as the sum of its state's remaining exit rates
// instead of being updated by subtraction. No step cancels, so τ keeps its
// relative accuracy when loss is 10^15 times rarer than a rebuild, where
// an LU of −Q_TT (gonum's, too) reports the matrix singular (condition
// ~1e17 for split:3+3 on six nodes). gonum has no such solver; the tests
// check this one against gonum's LU where that is well conditioned.
func (ch *chain) mttdl() (float64, error) {
	n := ch.transient()
	// rate[i][j] for j < n is the rate i→j; rate[i][n] is i→FS.
	rate := make([][]float64, n)
	for i := range n {
		rate[i] = make([]float64, n+1)
		for j := range n + 1 {
			if j != i {
				rate[i][j] = ch.q.At(i, j)
			}
		}
	}
	exit := func(i int) float64 { // i's exit rates to the states left and FS
		sum := rate[i][n]
		for j := range n {
			if j != i {
				sum += rate[i][j]
			}
		}
		return sum
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = 1
	}
	pivot := make([]float64, n)
	for k := n - 1; k >= 0; k-- {
		// Eliminate state k from states 0..k−1, so that what remains of
		// state 0 is solved last and the others substitute forward.
		pivot[k] = exit(k)
		for i := 0; i < k; i++ {
			if rate[i][k] == 0 {
				continue
			}
			f := rate[i][k] / pivot[k]
			for j := 0; j < k; j++ {
				if j != i {
					rate[i][j] += f * rate[k][j]
				}
			}
			rate[i][n] += f * rate[k][n]
			b[i] += f * b[k]
			rate[i][k] = 0
		}
	}
	tau := make([]float64, n)
	for k := range n {
		sum := b[k]
		for j := 0; j < k; j++ {
			sum += rate[k][j] * tau[j]
		}
		tau[k] = sum / pivot[k]
	}
	if !(tau[0] > 0) || math.IsInf(tau[0], 0) {
		return 0, fmt.Errorf("reliability: MTTDL does not converge (%g)", tau[0])
	}
	return tau[0], nil
}

// expLoss is P(FS at t | all up at 0), the FS entry of exp(Q·t) (Ring
// A.1, eq. 7).
func (ch *chain) expLoss(t float64) float64 {
	var qt, e mat.Dense
	qt.Scale(t, ch.q)
	e.Exp(&qt)
	return e.At(0, ch.transient())
}

// Method names how a loss probability was computed.
type Method string

const (
	// MethodExp took it from the matrix exponential.
	MethodExp Method = "expm"
	// MethodMTTDL took it from the exponential law 1 − exp(−t/MTTDL).
	MethodMTTDL Method = "exp(-t/MTTDL)"
)

// lossWithin is the probability of data loss within t. The matrix
// exponential is exact but its absolute error is a few ulps of its largest
// entry, so for a probability below 1e-9 (and for chains too large for a
// dense exponential) it uses 1 − exp(−t/MTTDL): loss is rare next to
// rebuilds, so the chain forgets where it started long before it is lost
// and the time to loss is exponential to within (λ/μ)-small terms; the
// tests hold the two within 1% where both apply.
func (ch *chain) lossWithin(t, mttdl float64) (float64, Method) {
	law := -math.Expm1(-t / mttdl)
	if ch.transient()+1 > MaxExpStates {
		return law, MethodMTTDL
	}
	if p := ch.expLoss(t); p > 1e-9 {
		return p, MethodExp
	}
	return law, MethodMTTDL
}

// meanLoss is the loss probability averaged over (0, t], under the
// exponential law: 1 − (τ/t)(1 − exp(−t/τ)).
func meanLoss(t, mttdl float64) float64 {
	x := t / mttdl
	if x < 1e-6 {
		return x / 2
	}
	return 1 + math.Expm1(-x)/x
}

// MaxNines is the nines reported for a loss probability below 1e-300
// (or one that underflows): beyond any hardware's meaning, and finite so
// results encode as JSON.
const MaxNines = 300

// nines is −log10(p), at most MaxNines.
func nines(p float64) float64 {
	if p <= 1e-300 {
		return MaxNines
	}
	return -math.Log10(p)
}
