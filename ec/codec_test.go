package ec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// testRNG returns a seeded generator and logs the seed, so a failure can be
// replayed by pinning it.
func testRNG(t testing.TB) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// newShards returns k random data shards followed by m zeroed parity shards.
func newShards(rng *rand.Rand, k, m, size int) [][]byte {
	shards := make([][]byte, k+m)
	for i := range shards {
		shards[i] = make([]byte, size)
		if i < k {
			fillRandom(rng, shards[i])
		}
	}
	return shards
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

func cloneShards(shards [][]byte) [][]byte {
	out := make([][]byte, len(shards))
	for i, s := range shards {
		out[i] = bytes.Clone(s)
	}
	return out
}

func mustCodec(t testing.TB, k, m int) *Codec {
	t.Helper()
	c, err := New(k, m)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sizes around the SIMD kernels' block boundaries (16, 32, 64 bytes) and
// beyond klauspost's goroutine split threshold.
var shardSizes = []int{1, 15, 16, 17, 31, 33, 63, 64, 65, 100, 1000, 4096, 4096 + 7, 70000}

func TestEncodeMatchesReference(t *testing.T) {
	rng := testRNG(t)
	for _, km := range [][2]int{{1, 1}, {1, 3}, {2, 1}, {3, 2}, {4, 2}, {6, 3}, {10, 4}, {17, 5}, {32, 8}} {
		c, ref := mustCodec(t, km[0], km[1]), newRefCode(km[0], km[1])
		for _, size := range shardSizes {
			shards := newShards(rng, c.K(), c.M(), size)
			if err := c.Encode(shards); err != nil {
				t.Fatalf("%s size %d: %v", c, size, err)
			}
			for j, want := range ref.encode(shards[:c.K()]) {
				if !bytes.Equal(shards[c.K()+j], want) {
					t.Fatalf("%s size %d: parity %d differs from reference", c, size, j)
				}
			}
		}
	}
}

func TestSingleParityIsXOR(t *testing.T) {
	rng := testRNG(t)
	c := mustCodec(t, 5, 1)
	shards := newShards(rng, 5, 1, 333)
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 333)
	for _, d := range shards[:5] {
		for b := range want {
			want[b] ^= d[b]
		}
	}
	if !bytes.Equal(shards[5], want) {
		t.Fatal("RS(5,1) parity is not the XOR of the data")
	}
}

func TestOneDataShardIsReplication(t *testing.T) {
	rng := testRNG(t)
	c := mustCodec(t, 1, 3)
	shards := newShards(rng, 1, 3, 129)
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	for j, p := range shards[1:] {
		if !bytes.Equal(p, shards[0]) {
			t.Fatalf("RS(1,3) parity %d is not a copy of the data", j)
		}
	}
}

// Invariant 3 of DESIGN.md: any k of the k+m shards reconstruct the data
// bit-exactly. Every loss pattern of up to m shards, for each code.
func TestReconstructEveryLossPattern(t *testing.T) {
	rng := testRNG(t)
	for _, km := range [][2]int{{1, 2}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {6, 3}, {10, 4}} {
		c, ref := mustCodec(t, km[0], km[1]), newRefCode(km[0], km[1])
		want := newShards(rng, c.K(), c.M(), 67)
		if err := c.Encode(want); err != nil {
			t.Fatal(err)
		}
		forEachSubset(c.K()+c.M(), c.M(), func(lost []int) {
			checkReconstruct(t, c, ref, want, lost)
		})
	}
}

func checkReconstruct(t *testing.T, c *Codec, ref refCode, want [][]byte, lost []int) {
	t.Helper()
	shards := cloneShards(want)
	for _, i := range lost {
		for b := range shards[i] {
			shards[i][b] = 0xaa // poison: the decoder must write every byte
		}
		shards[i] = shards[i][:0] // missing; capacity is reused
	}
	refData, err := ref.decode(shards)
	if err != nil {
		t.Fatalf("%s lost %v: reference: %v", c, lost, err)
	}
	if err := c.Reconstruct(shards); err != nil {
		t.Fatalf("%s lost %v: %v", c, lost, err)
	}
	for i := range want {
		if !bytes.Equal(shards[i], want[i]) {
			t.Fatalf("%s lost %v: shard %d wrong after reconstruct", c, lost, i)
		}
	}
	for i, d := range refData {
		if !bytes.Equal(d, want[i]) {
			t.Fatalf("%s lost %v: reference decoded data %d wrong", c, lost, i)
		}
	}
}

func TestReconstructDataLeavesParityMissing(t *testing.T) {
	rng := testRNG(t)
	c := mustCodec(t, 4, 2)
	want := newShards(rng, 4, 2, 4096)
	if err := c.Encode(want); err != nil {
		t.Fatal(err)
	}
	shards := cloneShards(want)
	shards[1], shards[5] = nil, nil
	if err := c.ReconstructData(shards); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(shards[1], want[1]) {
		t.Fatal("data shard 1 not reconstructed")
	}
	if shards[5] != nil {
		t.Fatal("ReconstructData filled a parity shard")
	}
}

func TestReconstructTooManyLost(t *testing.T) {
	c := mustCodec(t, 4, 2)
	shards := newShards(testRNG(t), 4, 2, 64)
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	before := cloneShards(shards)
	shards[0], shards[2], shards[5] = nil, nil, nil
	for name, fn := range map[string]func([][]byte) error{"Reconstruct": c.Reconstruct, "ReconstructData": c.ReconstructData} {
		err := fn(shards)
		var lost *LostError
		if !errors.As(err, &lost) || !errors.Is(err, ErrTooManyLost) {
			t.Fatalf("%s: got %v, want *LostError", name, err)
		}
		if len(lost.Lost) != 3 || lost.Lost[0] != 0 || lost.Lost[1] != 2 || lost.Lost[2] != 5 || lost.M != 2 {
			t.Fatalf("%s: LostError %+v, want lost [0 2 5] of RS(4,2)", name, lost)
		}
		for _, i := range []int{1, 3, 4} {
			if !bytes.Equal(shards[i], before[i]) {
				t.Fatalf("%s: a failed call changed shard %d", name, i)
			}
		}
	}
}

func TestBadParameters(t *testing.T) {
	for _, km := range [][2]int{{0, 1}, {-1, 2}, {3, -1}, {200, 56}, {255, 1}, {1, 255},
		{math.MaxInt, 1}, {1, math.MaxInt}, {math.MaxInt, math.MaxInt}} {
		_, err := New(km[0], km[1])
		var pe *ParamError
		if !errors.As(err, &pe) || !errors.Is(err, ErrParams) || pe.K != km[0] || pe.M != km[1] {
			t.Errorf("New(%d, %d): got %v, want *ParamError", km[0], km[1], err)
		}
	}
	for _, km := range [][2]int{{1, 0}, {254, 1}, {1, 254}, {128, 127}} {
		if _, err := New(km[0], km[1]); err != nil {
			t.Errorf("New(%d, %d): %v", km[0], km[1], err)
		}
	}
}

// Malformed shard sets get a typed error and leave every buffer untouched.
func TestMalformedShardSetsChangeNothing(t *testing.T) {
	c := mustCodec(t, 3, 2)
	cases := map[string]struct {
		shards [][]byte
		want   error
	}{
		"too few":     {[][]byte{{1}, {2}, {3}, {4}}, ErrShardCount},
		"too many":    {[][]byte{{1}, {2}, {3}, {4}, {5}, {6}}, ErrShardCount},
		"sizes":       {[][]byte{{1, 1}, {2}, {3, 3}, {0, 0}, {0, 0}}, ErrShardSize},
		"all empty":   {[][]byte{{}, {}, {}, {}, {}}, nil},
		"one missing": {[][]byte{{1}, {}, {3}, {0}, {0}}, nil},
	}
	for name, tc := range cases {
		before := cloneShards(tc.shards)
		err := c.Encode(tc.shards)
		if tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && !errors.Is(err, ErrShardSize) {
			t.Errorf("Encode %s: got %v", name, err)
		}
		if _, err := c.Verify(tc.shards); err == nil {
			t.Errorf("Verify %s: no error", name)
		}
		for i := range before {
			if !bytes.Equal(before[i], tc.shards[i]) {
				t.Errorf("%s: shard %d changed", name, i)
			}
		}
	}
	if err := c.Reconstruct([][]byte{{1, 1}, {}, {3}, {0, 0}, {0, 0}}); !errors.Is(err, ErrShardSize) {
		t.Errorf("Reconstruct with mixed sizes: got %v", err)
	}
}

func TestVerify(t *testing.T) {
	c := mustCodec(t, 4, 2)
	shards := newShards(testRNG(t), 4, 2, 100)
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Verify(shards); !ok || err != nil {
		t.Fatalf("Verify of fresh encode: %v %v", ok, err)
	}
	shards[2][50] ^= 0x40
	if ok, err := c.Verify(shards); ok || err != nil {
		t.Fatalf("Verify after corrupting data: %v %v, want false", ok, err)
	}
}

// A delta-updated parity equals a full re-encode (DESIGN.md invariant 3),
// after random sequences of partial updates and deletes to random shards.
func TestDeltaUpdatesEqualReencode(t *testing.T) {
	rng := testRNG(t)
	for _, km := range [][2]int{{2, 1}, {3, 2}, {4, 2}, {10, 4}} {
		c, ref := mustCodec(t, km[0], km[1]), newRefCode(km[0], km[1])
		const size = 777
		shards := newShards(rng, c.K(), c.M(), size)
		if err := c.Encode(shards); err != nil {
			t.Fatal(err)
		}
		for step := range 300 {
			applyRandomUpdate(t, rng, c, shards)
			if step%50 != 49 {
				continue
			}
			for j, want := range ref.encode(shards[:c.K()]) {
				if !bytes.Equal(shards[c.K()+j], want) {
					t.Fatalf("%s step %d: parity %d differs from re-encode", c, step, j)
				}
			}
		}
	}
}

// applyRandomUpdate overwrites (or, one time in four, zeroes: a delete) a
// random byte range of a random data shard and patches every parity from the
// delta alone, in random parity order.
func applyRandomUpdate(t *testing.T, rng *rand.Rand, c *Codec, shards [][]byte) {
	i := rng.IntN(c.K())
	lo := rng.IntN(len(shards[i]))
	hi := lo + 1 + rng.IntN(len(shards[i])-lo)
	next := make([]byte, hi-lo)
	if rng.IntN(4) != 0 {
		fillRandom(rng, next)
	}
	delta := make([]byte, hi-lo)
	if err := Delta(delta, shards[i][lo:hi], next); err != nil {
		t.Fatal(err)
	}
	copy(shards[i][lo:hi], next)
	for _, j := range rng.Perm(c.M()) {
		if err := c.UpdateParity(j, i, delta, shards[c.K()+j][lo:hi]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpdateParityRejectsBadInput(t *testing.T) {
	c := mustCodec(t, 3, 2)
	parity := []byte{9, 9, 9}
	for name, tc := range map[string]struct{ got, want error }{
		"parity index": {c.UpdateParity(2, 0, []byte{1, 2, 3}, parity), ErrIndex},
		"data index":   {c.UpdateParity(0, 3, []byte{1, 2, 3}, parity), ErrIndex},
		"negative":     {c.UpdateParity(-1, 0, []byte{1, 2, 3}, parity), ErrIndex},
		"length":       {c.UpdateParity(0, 0, []byte{1, 2}, parity), ErrShardSize},
	} {
		if !errors.Is(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", name, tc.got, tc.want)
		}
	}
	if !bytes.Equal(parity, []byte{9, 9, 9}) {
		t.Fatal("a rejected update changed the parity")
	}
	if _, err := c.Coefficient(2, 0); !errors.Is(err, ErrIndex) {
		t.Errorf("Coefficient(2, 0) of RS(3,2): got %v, want ErrIndex", err)
	}
	if err := Delta(make([]byte, 2), []byte{1, 2}, []byte{1}); !errors.Is(err, ErrShardSize) {
		t.Errorf("Delta of unequal lengths: got %v", err)
	}
}

func TestZeroParityCode(t *testing.T) {
	c := mustCodec(t, 3, 0)
	shards := [][]byte{{1}, {2}, {3}}
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconstruct(shards); err != nil {
		t.Fatal(err)
	}
	shards[1] = nil
	if err := c.Reconstruct(shards); !errors.Is(err, ErrTooManyLost) {
		t.Fatalf("RS(3,0) with a lost shard: got %v", err)
	}
}

// Goroutines racing to create the same, not yet cached, codec all get one
// instance, and use it concurrently.
func TestCodecCacheAndConcurrentUse(t *testing.T) {
	const k, m = 7, 3 // used by no other test, so creation itself races
	codecs := make([]*Codec, 4)
	var wg sync.WaitGroup
	for g := range codecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := New(k, m)
			if err != nil {
				t.Error(err)
				return
			}
			codecs[g] = c
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 50 {
				want := newShards(rng, k, m, 256)
				if err := c.Encode(want); err != nil {
					t.Error(err)
					return
				}
				got := cloneShards(want)
				got[rng.IntN(k)], got[k+rng.IntN(m)] = nil, nil
				if err := c.Reconstruct(got); err != nil {
					t.Error(err)
					return
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("goroutine %d: shard %d wrong", g, i)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range codecs[1:] {
		if c != codecs[0] {
			t.Fatalf("New(%d, %d) returned more than one codec", k, m)
		}
	}
}

// Deltas commute: updates made one after another, to the same or different
// data shards, may reach a parity node in any order (MemEC §2).
func TestDeltasApplyInAnyOrder(t *testing.T) {
	rng := testRNG(t)
	c, ref := mustCodec(t, 4, 2), newRefCode(4, 2)
	const size = 300
	shards := newShards(rng, 4, 2, size)
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	type update struct {
		i, lo int
		delta []byte
	}
	var pending []update
	for range 40 {
		i, lo := rng.IntN(4), rng.IntN(size)
		next := make([]byte, 1+rng.IntN(size-lo))
		fillRandom(rng, next)
		delta := make([]byte, len(next))
		if err := Delta(delta, shards[i][lo:lo+len(next)], next); err != nil {
			t.Fatal(err)
		}
		copy(shards[i][lo:], next)
		pending = append(pending, update{i, lo, delta})
	}
	for j := range 2 {
		for _, u := range rng.Perm(len(pending)) {
			p := pending[u]
			if err := c.UpdateParity(j, p.i, p.delta, shards[4+j][p.lo:p.lo+len(p.delta)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for j, want := range ref.encode(shards[:4]) {
		if !bytes.Equal(shards[4+j], want) {
			t.Fatalf("parity %d after out-of-order deltas differs from re-encode", j)
		}
	}
}

// A coefficient is the same in every code (matrix.go), so a code with fewer
// data shards is the larger code with the missing ones zero: the parities of
// RS(3,2) are the first two parities of RS(20,8) over the same data padded
// with zero shards (virtual zero padding). Checked through the encoders.
func TestSmallCodeIsZeroPaddedLargeCode(t *testing.T) {
	rng := testRNG(t)
	for _, km := range [][2]int{{1, 1}, {2, 1}, {3, 2}, {4, 2}, {10, 4}} {
		small, large := mustCodec(t, km[0], km[1]), mustCodec(t, 20, 8)
		s := newShards(rng, km[0], km[1], 100)
		l := newShards(rng, 20, 8, 100)
		for i := range l[:20] {
			l[i] = make([]byte, 100)
			if i < km[0] {
				copy(l[i], s[i])
			}
		}
		if err := small.Encode(s); err != nil {
			t.Fatal(err)
		}
		if err := large.Encode(l); err != nil {
			t.Fatal(err)
		}
		for j := range km[1] {
			if !bytes.Equal(s[km[0]+j], l[20+j]) {
				t.Fatalf("%s parity %d != RS(20,8) parity %d of zero-padded data", small, j, j)
			}
		}
	}
}

func TestInversionCacheIsBounded(t *testing.T) {
	// RS(10,4): 1470 loss patterns of at most 4 shards, 100 bytes each.
	if got := inversionCacheBytes(10, 4); got != 1470*100 {
		t.Fatalf("inversionCacheBytes(10, 4) = %d, want %d", got, 1470*100)
	}
	if got := inversionCacheBytes(20, 8); got <= maxInversionCacheBytes {
		t.Fatalf("inversionCacheBytes(20, 8) = %d, want above the %d limit", got, maxInversionCacheBytes)
	}
	if got := inversionCacheBytes(128, 127); got <= maxInversionCacheBytes {
		t.Fatalf("inversionCacheBytes(128, 127) = %d: overflowed?", got)
	}
	// A codec without the cache still decodes.
	rng := testRNG(t)
	c, ref := mustCodec(t, 32, 8), newRefCode(32, 8)
	want := newShards(rng, 32, 8, 40)
	if err := c.Encode(want); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		checkReconstruct(t, c, ref, want, rng.Perm(40)[:1+rng.IntN(8)])
	}
}

// Shards larger than a segment are coded segment by segment (the library's
// assembly cannot be preempted); the result is the library's on the whole
// shards, and reconstruction fills missing shards in full, in the room a
// caller gave when it was enough.
func TestLargeShardsCodedBySegment(t *testing.T) {
	c, err := New(4, 2)
	if err != nil {
		t.Fatal(err)
	}
	size := 2*codeSegment + 3
	shards := make([][]byte, 6)
	rng := rand.New(rand.NewPCG(4, 2))
	for i := range shards {
		shards[i] = make([]byte, size)
		if i < 4 {
			for j := range shards[i] {
				shards[i][j] = byte(rng.Uint32())
			}
		}
	}
	whole := make([][]byte, 6)
	for i := range shards {
		whole[i] = bytes.Clone(shards[i])
	}
	if err := c.Encode(shards); err != nil {
		t.Fatal(err)
	}
	if err := c.enc.Encode(whole); err != nil {
		t.Fatal(err)
	}
	for i := range shards {
		if !bytes.Equal(shards[i], whole[i]) {
			t.Fatalf("shard %d coded by segment differs from the library's whole", i)
		}
	}
	if ok, err := c.Verify(shards); !ok || err != nil {
		t.Fatalf("Verify: %v %v", ok, err)
	}
	room := make([]byte, 0, size)
	lost := slices.Clone(shards)
	lost[1], lost[4] = room, nil
	if err := c.Reconstruct(lost); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(lost[1], whole[1]) || !bytes.Equal(lost[4], whole[4]) || &lost[1][0] != &room[:1][0] {
		t.Fatal("Reconstruct: shards differ, or the room given was not used")
	}
	lost = slices.Clone(shards)
	lost[0], lost[5] = nil, nil
	if err := c.ReconstructData(lost); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(lost[0], whole[0]) || lost[5] != nil {
		t.Fatal("ReconstructData: the data shard differs, or the parity shard was filled")
	}
}
