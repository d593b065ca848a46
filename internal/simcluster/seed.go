package simcluster

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

// seedFlag replays one seed: go test ./pkg -run TestX -sim.seed=N (the
// package before the flag: go test hands the flags after it to the test).
var seedFlag = flag.Uint64("sim.seed", 0, "simcluster: replay this seed (0: a fresh seed per run)")

// Seed is the seed a test runs with: -sim.seed's when given, else a fresh
// one from the wall clock. On failure the test prints how to replay it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())%1_000_000 + 1
	}
	t.Logf("simcluster seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay: go test ./<this package> -run '%s' -sim.seed=%d", t.Name(), seed)
		}
	})
	return seed
}

// newRand is the seeded source every random choice of a run comes from.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x6d656d6765737421)) // "memgest!"
}
