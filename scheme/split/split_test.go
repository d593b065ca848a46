package split

import (
	"bytes"
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/memgest/memgest/internal/bigcopy"
)

func TestRoundTripEveryLossPattern(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, c := range []struct{ k, m int }{{1, 0}, {1, 2}, {2, 1}, {4, 2}, {3, 3}} {
		for _, vlen := range []int{0, 1, 7, 100, 4096, 100003} {
			key := []byte("user:{42}")
			val := make([]byte, vlen)
			rng.Read(val)
			shards, err := Encode(key, val, c.k, c.m)
			if err != nil {
				t.Fatal(err)
			}
			n := c.k + c.m
			for mask := 0; mask < 1<<n; mask++ {
				if popcount(mask) > c.m {
					continue
				}
				got := make([][]byte, n)
				for i := range got {
					if mask&(1<<i) == 0 {
						got[i] = append([]byte(nil), shards[i]...)
					}
				}
				rebuilt := make([][]byte, n)
				copy(rebuilt, got)
				v, err := Decode(got, key, c.k, c.m)
				if err != nil || !bytes.Equal(v, val) {
					t.Fatalf("k=%d m=%d len=%d lost=%b: err %v, equal %v", c.k, c.m, vlen, mask, err, bytes.Equal(v, val))
				}
				if err := Rebuild(rebuilt, key, c.k, c.m); err != nil {
					t.Fatalf("rebuild k=%d m=%d len=%d lost=%b: %v", c.k, c.m, vlen, mask, err)
				}
				for i := range shards {
					if !bytes.Equal(rebuilt[i], shards[i]) {
						t.Fatalf("rebuild k=%d m=%d len=%d lost=%b: shard %d differs", c.k, c.m, vlen, mask, i)
					}
				}
			}
		}
	}
}

func TestDecodeRefusesWrongKeyAndGarbage(t *testing.T) {
	shards, _ := Encode([]byte("a"), []byte("value"), 2, 1)
	if _, err := Decode(shards, []byte("b"), 2, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("wrong key: %v", err)
	}
	bad := [][]byte{{0xA7, 0xff, 0xff}, {1, 2, 3}, nil}
	if _, err := Decode(bad, []byte("a"), 2, 1); err == nil {
		t.Fatal("garbage decoded")
	}
	if _, err := Decode([][]byte{nil, nil, shards[2]}, []byte("a"), 2, 1); err == nil {
		t.Fatal("decoded with fewer than k shards")
	}
	if err := Rebuild([][]byte{shards[0], nil, shards[2]}, []byte("b"), 2, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("rebuild for the wrong key: %v", err)
	}
	if err := Rebuild([][]byte{{0xA7, 0x7f, 0x7f}, {1, 2, 3}, nil}, []byte("a"), 2, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("rebuild of garbage: %v", err)
	}
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0xA7, 1, 1, 'k', 'v'}, []byte("k"))
	f.Fuzz(func(t *testing.T, obj, key []byte) {
		half := (len(obj) + 1) / 2
		a := append([]byte(nil), obj[:half]...)
		b := make([]byte, half)
		copy(b, obj[half:])
		if len(a) == 0 {
			return
		}
		_, _ = Decode([][]byte{a, b, nil}, key, 2, 1)
		_ = Rebuild([][]byte{a, b, nil}, key, 2, 1)
	})
}

// A value several copy steps long (a huge value is copied into and out of
// the shards in bounded steps) round-trips, from data shards and through
// parity.
func TestLargeValueInBoundedCopies(t *testing.T) {
	key := []byte("huge")
	val := make([]byte, 3*bigcopy.Step+17)
	rand.New(rand.NewSource(2)).Read(val)
	shards, err := Encode(key, val, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, lost := range [][]int{nil, {0, 3}, {1, 5}} {
		got := slices.Clone(shards)
		for _, i := range lost {
			got[i] = nil
		}
		if v, err := Decode(got, key, 4, 2); err != nil || !bytes.Equal(v, val) {
			t.Fatalf("lost %v: err %v, equal %v", lost, err, bytes.Equal(v, val))
		}
	}
}
