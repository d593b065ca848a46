// Package reliability computes, for a scheme or a mix of schemes on an
// N-node memgest cluster, the mean time to data loss (MTTDL), the
// probability of losing data within a mission time, its nines, and the
// availability of a key, from node MTTF, the time to rebuild one node and
// the failure-detection time (DESIGN.md §7, docs/reliability.md).
//
// The model is the continuous-time Markov chain of Ring appendix A: states
// are the sets of nodes that are down, failures move forward, rebuilds move
// back, and a set that loses a reliability set's data is the absorbing
// failure state FS. The loss probability in a mission time is the FS entry
// of the matrix exponential exp(Qt) (Ring A.1, eq. 7); MTTDL is the mean
// time to absorption, the solution of −Q_TT·τ = 1 over the transient
// states (the quantity KVMD §5.1 approximates with its eq. 2).
//
// Where Ring lumps states by the number of failed nodes and estimates the
// chance of surviving one more failure by enumeration (A.2), this package
// keeps the failed-node sets themselves, merged only where the cluster's
// symmetry makes them equivalent (rotations of the placement ring that also
// map hosts onto hosts). That makes three things exact that the calculators
// in use today (Backblaze's, Ceph's, MinIO's) do not model:
//
//   - memgest's placement: shard i's pieces sit on the K+M (or R) nodes
//     i, i+1, ... of the ring (cluster.Place), so whether a set of failed
//     nodes loses data depends on which nodes they are, not only how many;
//   - correlated failures: a host of several nodes failing at once;
//   - a mix of schemes, whose data is lost as soon as any one scheme's is.
//
// The chain is cut at a depth (number of nodes down at once, by default
// tolerance+3, lowered when the state space would be too large), and a
// failure beyond it counts as a loss: the cut only ever understates
// reliability, and Result.Depth reports where it was made. Where even
// tolerance+1 would take too many states (wide codes on large clusters),
// the chain is Ring A.2's, lumped by the number of nodes down, with the
// share of surviving sets counted on memgest's placement (lumped.go);
// Result.Chain says which was built.
//
// The matrix exponential is gonum's (mat.Exp). The MTTDL solve is
// hand-written state reduction (solve.go): gonum's LU cancels and calls
// −Q_TT singular when loss is 10^15 times rarer than a rebuild, and gonum
// has no subtraction-free solver; the tests check it against gonum's LU
// where that is well conditioned. The package imports
// nothing from memgest: cmd/memgest turns scheme specs into Schemes.
package reliability
