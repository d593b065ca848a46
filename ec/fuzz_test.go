package ec

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReconstruct encodes fuzzer-chosen data with a fuzzer-chosen code, drops
// the shards named by lostMask, and decodes: within tolerance the result must
// be bit-exact, beyond it a LostError naming exactly the missing shards.
func FuzzReconstruct(f *testing.F) {
	f.Add(uint8(4), uint8(2), uint16(64), uint64(0b100001), []byte("memgest"))
	f.Add(uint8(10), uint8(4), uint16(1), uint64(0b1111), []byte{0xff})
	f.Add(uint8(3), uint8(2), uint16(33), uint64(0b111)|1<<63, []byte{})
	f.Add(uint8(1), uint8(0), uint16(5), uint64(0), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, k8, m8 uint8, size16 uint16, lostMask uint64, seed []byte) {
		k, m, size := 1+int(k8%16), int(m8%8), 1+int(size16%300)
		c := mustCodec(t, k, m)
		want := fuzzShards(k, m, size, seed)
		if err := c.Encode(want); err != nil {
			t.Fatal(err)
		}
		shards := cloneShards(want)
		var lost []int
		for i := range shards {
			if lostMask&(1<<i) != 0 {
				shards[i], lost = nil, append(lost, i)
			}
		}
		dataOnly := lostMask&(1<<63) != 0
		decode := c.Reconstruct
		if dataOnly {
			decode = c.ReconstructData
		}
		err := decode(shards)
		if len(lost) > m {
			checkLost(t, err, lost, shards, want)
			return
		}
		if err != nil {
			t.Fatalf("RS(%d,%d) lost %v: %v", k, m, lost, err)
		}
		for i := range want {
			if (!dataOnly || i < k) && !bytes.Equal(shards[i], want[i]) {
				t.Fatalf("RS(%d,%d) lost %v: shard %d wrong", k, m, lost, i)
			}
		}
	})
}

func fuzzShards(k, m, size int, seed []byte) [][]byte {
	shards := make([][]byte, k+m)
	for i := range shards {
		shards[i] = make([]byte, size)
		for b := range shards[i] {
			if i < k && len(seed) > 0 {
				shards[i][b] = seed[(i*size+b)%len(seed)] ^ byte(i*7+b)
			}
		}
	}
	return shards
}

func checkLost(t *testing.T, err error, lost []int, shards, want [][]byte) {
	t.Helper()
	var le *LostError
	if !errors.As(err, &le) || len(le.Lost) != len(lost) {
		t.Fatalf("lost %v: got %v, want LostError", lost, err)
	}
	for i, idx := range lost {
		if le.Lost[i] != idx {
			t.Fatalf("LostError names %v, lost %v", le.Lost, lost)
		}
	}
	for i := range shards {
		if len(shards[i]) > 0 && !bytes.Equal(shards[i], want[i]) {
			t.Fatalf("failed decode changed shard %d", i)
		}
	}
}

// FuzzDecodeArbitrary feeds shard sets of arbitrary sizes and contents to the
// decode and update entry points: they must never panic, and every error
// must be one of the package's sentinels.
func FuzzDecodeArbitrary(f *testing.F) {
	f.Add(uint8(3), uint8(2), []byte{4, 4, 0, 4, 4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(uint8(2), uint8(1), []byte{1, 2, 3})
	f.Add(uint8(0), uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, k8, m8 uint8, raw []byte) {
		k, m := 1+int(k8%12), int(m8%6)
		c := mustCodec(t, k, m)
		n := k + m
		if len(raw) > 0 && raw[0]&1 == 1 {
			n += int(raw[0]>>1)%3 - 1 // sometimes the wrong number of shards
		}
		shards := arbitraryShards(n, raw)
		err := c.Reconstruct(shards)
		checkSentinel(t, err)
		if err == nil {
			for i, s := range shards {
				if len(s) != len(shards[0]) || len(s) == 0 {
					t.Fatalf("Reconstruct succeeded leaving shard %d with %d bytes", i, len(s))
				}
			}
		}
		checkSentinel(t, c.ReconstructData(arbitraryShards(n, raw)))
		_, err = c.Verify(arbitraryShards(n, raw))
		checkSentinel(t, err)
		if len(raw) >= 2 {
			delta := raw[2:]
			parity := bytes.Clone(raw[len(raw)/2:])
			checkSentinel(t, c.UpdateParity(int(int8(raw[0])), int(int8(raw[1])), delta, parity))
		}
	})
}

// arbitraryShards cuts n shards from raw: shard i has raw[i]%9 bytes (zero
// means missing), taken from the bytes after the n length bytes.
func arbitraryShards(n int, raw []byte) [][]byte {
	shards := make([][]byte, max(n, 0))
	body := raw[min(len(raw), max(n, 0)):]
	for i := range shards {
		if i >= len(raw) {
			break
		}
		size := int(raw[i] % 9)
		s := make([]byte, size)
		if len(body) > 0 {
			for b := range s {
				s[b] = body[(i*9+b)%len(body)]
			}
		}
		shards[i] = s
	}
	return shards
}

func checkSentinel(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []error{ErrShardCount, ErrShardSize, ErrIndex, ErrTooManyLost, ErrParams} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %q matches no ec sentinel", err)
}

// FuzzLayout checks that block addresses decode and re-encode consistently
// in both directions for any code, (node, block) and address, and that bad
// ones get ErrIndex rather than a wrong or overflowed answer.
func FuzzLayout(f *testing.F) {
	f.Add(uint8(2), uint8(1), uint8(3), 2, 5, 0, 1, 1)
	f.Add(uint8(3), uint8(2), uint8(6), -1, 0, 1<<62, 0, 0)
	f.Fuzz(func(t *testing.T, k8, m8, s8 uint8, node, block, row, stripe, pos int) {
		l, err := NewLayout(int(k8), int(m8), int(s8))
		if err != nil {
			checkSentinel(t, err)
			return
		}
		checkLocateRoundTrip(t, l, node, block)
		a := Addr{Row: row, Stripe: stripe, Position: pos}
		n, b, err := l.DataBlock(a)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		if got, err := l.Locate(n, b); err != nil || got != a {
			t.Fatalf("%s: Locate(DataBlock(%+v) = %d, %d) = %+v, %v", l, a, n, b, got, err)
		}
	})
}

func checkLocateRoundTrip(t *testing.T, l Layout, node, block int) {
	t.Helper()
	a, err := l.Locate(node, block)
	if err != nil {
		checkSentinel(t, err)
		return
	}
	n, b, err := l.DataBlock(a)
	if err != nil || n != node || b != block {
		t.Fatalf("%s: DataBlock(Locate(%d, %d) = %+v) = %d, %d, %v", l, node, block, a, n, b, err)
	}
	p, err := l.ParityBlock(a.Row, a.Stripe)
	if err != nil {
		t.Fatal(err)
	}
	if row, stripe, err := l.ParityStripe(p); err != nil || row != a.Row || stripe != a.Stripe {
		t.Fatalf("%s: ParityStripe(%d) = %d, %d, %v; want %d, %d", l, p, row, stripe, err, a.Row, a.Stripe)
	}
}
