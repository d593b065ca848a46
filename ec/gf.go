package ec

// GF(2^8) arithmetic with log/antilog tables.
//
// This is the slow, obviously-correct arithmetic of the package: it builds
// the generator matrix, answers Coefficient, and is the reference against
// which the SIMD kernels of klauspost/reedsolomon are checked in tests. The
// field is the one klauspost/reedsolomon (and most RS libraries) use:
// polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d) with generator 2. The tables
// are computed at init from those two constants, not pasted in.

const (
	// fieldPoly is the primitive polynomial of the field, with the x^8 term.
	fieldPoly = 0x11d
	// fieldGenerator is the primitive element whose powers fill expTable.
	fieldGenerator = 2
	// fieldOrder is the number of non-zero field elements.
	fieldOrder = 255
)

var (
	// expTable[i] = generator^i. It is doubled in length so that
	// expTable[logA+logB] needs no modulo.
	expTable [2 * fieldOrder]byte
	// logTable[a] = i such that generator^i = a, for a != 0.
	logTable [256]int
)

func init() {
	x := 1
	for i := range fieldOrder {
		expTable[i] = byte(x)
		expTable[i+fieldOrder] = byte(x)
		logTable[x] = i
		x = carrylessMulMod(x, fieldGenerator)
	}
}

// carrylessMulMod multiplies a and b as polynomials over GF(2) and reduces the
// product modulo fieldPoly. It is the textbook definition, used to build the
// tables and, in tests, to check them.
func carrylessMulMod(a, b int) int {
	product := 0
	for b > 0 {
		if b&1 != 0 {
			product ^= a
		}
		b >>= 1
		a <<= 1
		if a&0x100 != 0 {
			a ^= fieldPoly
		}
	}
	return product
}

// gfMul returns a·b in GF(2^8).
func gfMul(a, b byte) byte {
	if a == 0 || b == 0 {
		return 0
	}
	return expTable[logTable[a]+logTable[b]]
}

// gfInv returns the multiplicative inverse of a; a must not be zero.
func gfInv(a byte) byte {
	if a == 0 {
		panic("ec: inverse of zero in GF(2^8)")
	}
	return expTable[fieldOrder-logTable[a]]
}

// gfDiv returns a/b in GF(2^8); b must not be zero.
func gfDiv(a, b byte) byte {
	return gfMul(a, gfInv(b))
}
