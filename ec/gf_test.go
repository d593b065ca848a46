package ec

import "testing"

// The tables must agree with the definition of the field: carry-less
// multiplication modulo x^8+x^4+x^3+x^2+1, the field of klauspost/reedsolomon.
func TestGFTablesMatchPolynomialMultiplication(t *testing.T) {
	for a := range 256 {
		for b := range 256 {
			if got, want := gfMul(byte(a), byte(b)), byte(carrylessMulMod(a, b)); got != want {
				t.Fatalf("gfMul(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestGFGeneratorIsPrimitive(t *testing.T) {
	seen := map[byte]bool{}
	for i := range fieldOrder {
		seen[expTable[i]] = true
	}
	if len(seen) != fieldOrder || seen[0] {
		t.Fatalf("powers of %d cover %d non-zero elements, want %d", fieldGenerator, len(seen), fieldOrder)
	}
}

func TestGFInverseAndDivision(t *testing.T) {
	for a := 1; a < 256; a++ {
		if p := gfMul(byte(a), gfInv(byte(a))); p != 1 {
			t.Fatalf("%d · inv(%d) = %d, want 1", a, a, p)
		}
		for b := 1; b < 256; b++ {
			if q := gfDiv(byte(a), byte(b)); gfMul(q, byte(b)) != byte(a) {
				t.Fatalf("(%d / %d) · %d != %d", a, b, b, a)
			}
		}
	}
}

func TestGFInverseOfZeroPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("gfInv(0) did not panic")
		}
	}()
	gfInv(0)
}
