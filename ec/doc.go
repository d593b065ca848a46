// Package ec is memgest's erasure-coding core: Reed-Solomon RS(k, m) over
// GF(2^8), parity updates from deltas, and the block layout of stretched
// Reed-Solomon SRS(k, m, s). Every scheme that is not plain replication (split,
// stripe, hybrid) encodes, decodes and updates through this package. It
// imports nothing from the rest of memgest.
//
// # Codes and shards
//
// New(k, m) returns the cached Codec for RS(k, m), 1 ≤ k, 0 ≤ m, k+m ≤ 255.
// Encode computes m parity shards from k data shards of equal size;
// Reconstruct rebuilds any m or fewer missing shards, data or parity, from
// the k or more that remain; ReconstructData rebuilds only missing data.
// Encoding and decoding run in github.com/klauspost/reedsolomon (SIMD
// kernels); this package fixes the matrix, validates input, and reports
// failures as typed errors (ParamError, LostError) matching the sentinel
// errors with errors.Is.
//
// # The generator matrix
//
// A codeword is H·D with H = [I; G]: the identity keeps data shards as they
// are, and the m×k generator G makes parity. memgest passes G to the library
// explicitly (reedsolomon.WithCustomMatrix) so that parity bytes are fixed by
// our code and not by a library default that might change between versions;
// parity written by one build must decode with the next. G is a normalized
// Cauchy matrix, G[j][i] = c(j,i)·c(0,0) / (c(0,i)·c(j,0)) with
// c(j,i) = 1/((255⊕j) ⊕ i):
//
//   - Every square submatrix of a Cauchy matrix is nonsingular, and scaling
//     rows and columns keeps it so: the code is MDS, any k of k+m shards decode.
//     (A plain Vandermonde G is not MDS for every k, m; tests check MDS
//     exhaustively for small codes.)
//   - Row 0 and column 0 are all ones: with m = 1 parity is the XOR of the
//     data, and RS(1, m) is m-way replication.
//   - G[j][i] depends only on j and i, never on k or m: the same coefficient
//     serves every code, and a stripe with fewer than k data shards encodes as
//     if the missing ones were zeros ("virtual zero padding").
//
// A test pins the coefficients and a parity digest, so a change to either is
// caught before it reaches stored data.
//
// # Updates by delta
//
// Parity is linear in the data: parity_j = Σ_i G[j][i]·data_i, with addition
// XOR. When data shard i changes from old to new, parity j changes by
// G[j][i]·(old ⊕ new) and by nothing else (MemEC §2; Ring §3.2 "Update"). So
// the node holding data computes delta = old ⊕ new (Delta) and sends it; each
// parity node applies it to its own parity alone with UpdateParity, without
// the other data shards. A delete is an update to zeros. By the same
// linearity deltas commute, even two for the same bytes: parity nodes may
// apply them in any order, but each exactly once (XOR undoes a repeat).
// klauspost's Encoder.Update is not used: it overwrites the caller's buffers
// and needs every parity at once.
//
// # Stretched Reed-Solomon
//
// Ring §3.3 stretches RS(k, m) over s ≥ k data nodes so that codes with
// different k share one key-to-node mapping, and a key moves between them
// without leaving its node. With l = lcm(k, s), each row of l data blocks
// forms l/k stripes of RS(k, m); data node n holds l/s consecutive blocks of
// each row and parity node j holds parity j of all l/k stripes (equations
// 2–5). Layout computes this mapping both ways as pure functions; it touches no
// bytes, callers encode each stripe with the RS(k, m) Codec. SRS(k, m, k) is
// RS(k, m). An SRS code tolerates any m node failures, and some larger sets
// when the failed data nodes hold blocks of different stripes (Layout.Survives).
//
// # What is hand-written
//
// The GF(2^8) log/antilog tables (to build the matrix and as the slow
// reference in tests) and the stretched layout, which no library provides.
// Everything that touches shard bytes at speed is klauspost/reedsolomon.
package ec
