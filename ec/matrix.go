package ec

// The generator matrix G (m rows, k columns) below the identity in
// H = [I; G] is a normalized Cauchy matrix:
//
//	cauchy(j, i) = 1 / (x_j ⊕ y_i)   with x_j = 255 ⊕ j (parity j), y_i = i (data i)
//	G[j][i]      = cauchy(j, i) · cauchy(0, 0) / (cauchy(0, i) · cauchy(j, 0))
//
// Every square submatrix of a Cauchy matrix is nonsingular, and scaling rows
// and columns by non-zero constants keeps it so; hence any k rows of H are
// independent and the code is MDS for every k+m ≤ 256 (we allow 255). The
// scaling makes row 0 and column 0 all ones: a single parity is plain XOR,
// and the parities of data shard 0 are plain copies of its deltas.
//
// Because x_j and y_i depend only on j and i, G[j][i] is the same number in
// every RS(k, m) that has a parity j and a data shard i. Two consequences the
// rest of memgest may rely on: RS(1, m) is m-way replication, and a stripe with
// fewer than k data shards encodes exactly as one padded with zero shards.

// generatorCoefficient returns G[j][i], the coefficient with which data shard
// i contributes to parity shard j. The caller guarantees i+j < 255.
func generatorCoefficient(j, i int) byte {
	return gfDiv(
		gfMul(cauchy(j, i), cauchy(0, 0)),
		gfMul(cauchy(0, i), cauchy(j, 0)),
	)
}

// cauchy returns 1/(x_j ⊕ y_i) with x_j = 255 ⊕ j and y_i = i.
func cauchy(j, i int) byte {
	return gfInv(byte(fieldOrder^j) ^ byte(i))
}

// generatorMatrix returns the m×k matrix G of RS(k, m).
func generatorMatrix(k, m int) [][]byte {
	rows := make([][]byte, m)
	for j := range rows {
		rows[j] = make([]byte, k)
		for i := range rows[j] {
			rows[j][i] = generatorCoefficient(j, i)
		}
	}
	return rows
}
