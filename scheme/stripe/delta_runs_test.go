package stripe

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// Applying only the runs deltaRuns keeps gives the same bytes as applying
// the whole delta (MemEC §4.3's old ⊕ new), and the runs cover every
// changed byte and no more than deltaGap unchanged bytes between changes.
func TestDeltaRunsApplyAsTheWholeDelta(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 500 {
		old := make([]byte, 1+rng.IntN(3000))
		for i := range old {
			old[i] = byte(rng.Uint32())
		}
		next := bytes.Clone(old)
		for range rng.IntN(6) {
			at := rng.IntN(len(next))
			for i := at; i < min(len(next), at+rng.IntN(80)); i++ {
				next[i] = byte(rng.Uint32())
			}
		}
		delta := bytes.Clone(next)
		xorInto(delta, old)
		got := bytes.Clone(old)
		sent := 0
		for _, r := range deltaRuns(delta) {
			xorInto(got[r[0]:r[1]], delta[r[0]:r[1]])
			sent += r[1] - r[0]
			unchanged := bytes.Count(delta, []byte{0}) == len(delta)
			if !unchanged && (delta[r[0]] == 0 || delta[r[1]-1] == 0) {
				t.Fatalf("trial %d: run %v starts or ends on an unchanged byte", trial, r)
			}
		}
		if !bytes.Equal(got, next) {
			t.Fatalf("trial %d: the runs do not rebuild the new bytes", trial)
		}
		if changed := bytes.Count(delta, []byte{0}); sent > len(delta) || (changed == len(delta) && sent != 1) {
			t.Fatalf("trial %d: %d bytes sent of a %d-byte delta", trial, sent, len(delta))
		}
	}
}
