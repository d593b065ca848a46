package stripe

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/memgest/memgest/ec"
)

// randomBatch is n objects of random key and value sizes up to maxValue,
// with random heat.
func randomBatch(rng *rand.Rand, n, maxValue int) []batchObject {
	objs := make([]batchObject, n)
	for i := range objs {
		o := Object{Key: fmt.Appendf(nil, "key:%d:%d", i, rng.IntN(1000)), Value: bytes.Repeat([]byte{byte(i)}, rng.IntN(maxValue+1)), Version: uint64(i + 1)}
		objs[i] = newBatchObject(&o)
		objs[i].heat = uint32(rng.IntN(8))
	}
	return objs
}

// TestPackBatchPlacesEveryObjectOnce packs batches of many sizes and
// checks what BCStore's batch coding needs of a stripe (§III-A): every
// object in exactly one data chunk at the offset it was given, no chunk
// over the chunk size, and data chunks of even length, so that parity
// (as long as the longest) costs about M/K of the data however small the
// batch.
func TestPackBatchPlacesEveryObjectOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	for _, tc := range []struct{ n, maxValue, k, chunk int }{
		{1, 100, 4, 4096}, {3, 100, 4, 4096}, {4, 100, 4, 4096}, {17, 100, 4, 4096},
		{500, 100, 4, 4096}, {2000, 300, 3, 1024}, {50, 900, 2, 1024}, {9, 0, 5, 64},
	} {
		objs := randomBatch(rng, tc.n, tc.maxValue)
		order := orderByHeat(objs)
		stripes, err := packBatch(objs, order, tc.k, tc.chunk)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]int, len(objs))
		for s, ps := range stripes {
			biggest := 0
			for _, p := range ps.places {
				seen[p.object]++
				enc := objs[p.object].enc
				if got := ps.data[p.chunk][p.offset:]; !bytes.HasPrefix(got, enc) {
					t.Fatalf("%+v: object %d is not at chunk %d offset %d", tc, p.object, p.chunk, p.offset)
				}
				biggest = max(biggest, len(enc))
			}
			short, long := tc.chunk, 0
			for _, d := range ps.data {
				if len(d) > tc.chunk {
					t.Fatalf("%+v: a chunk of %d bytes", tc, len(d))
				}
				short, long = min(short, len(d)), max(long, len(d))
			}
			if s < len(stripes)-1 && long-short > biggest {
				t.Errorf("%+v: stripe %d's chunks span %d..%d bytes, objects up to %d", tc, s, short, long, biggest)
			}
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("%+v: object %d packed %d times", tc, i, c)
			}
		}
	}
}

// TestPackBatchHottestFirst: the hottest objects go to the first data
// chunk of the first stripe, the coordinator's own under stripe@batch.
func TestPackBatchHottestFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 2))
	objs := randomBatch(rng, 400, 100)
	for i := range objs {
		objs[i].heat = 1
	}
	objs[399].heat, objs[250].heat = 9, 5
	stripes, err := packBatch(objs, orderByHeat(objs), 4, 4096)
	if err != nil {
		t.Fatal(err)
	}
	first := stripes[0].places
	if first[0].object != 399 || first[1].object != 250 || first[0].chunk != 0 || first[1].chunk != 0 {
		t.Errorf("first places %+v, want objects 399 then 250 in chunk 0", first[:2])
	}
}

// TestEncodeBatchEqualsFullEncode: a batch stripe's parity equals the
// parity of its data chunks zero-padded to one length, and any M lost
// chunks decode back.
func TestEncodeBatchEqualsFullEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 3))
	for _, km := range [][2]int{{4, 2}, {3, 1}, {2, 3}} {
		codec, err := ec.New(km[0], km[1])
		if err != nil {
			t.Fatal(err)
		}
		stripes, err := packBatch(randomBatch(rng, 60, 200), nil, km[0], 1024)
		if err != nil || len(stripes) != 0 {
			t.Fatalf("empty order: %d stripes, %v", len(stripes), err)
		}
		objs := randomBatch(rng, 60, 200)
		stripes, _ = packBatch(objs, orderByHeat(objs), km[0], 1024)
		for _, ps := range stripes {
			if err := encodeBatch(codec, ps); err != nil {
				t.Fatal(err)
			}
			n := ps.length()
			shards := make([][]byte, 0, km[0]+km[1])
			for _, d := range ps.data {
				shards = append(shards, padded(d, n))
			}
			for range km[1] {
				shards = append(shards, make([]byte, n))
			}
			if err := codec.Encode(shards); err != nil {
				t.Fatal(err)
			}
			for j, p := range ps.parity {
				if !bytes.Equal(p, shards[km[0]+j]) {
					t.Fatalf("RS%v: parity %d differs from a full encode", km, j)
				}
			}
			lost := cloneShards(shards)
			for _, i := range rng.Perm(len(lost))[:km[1]] {
				lost[i] = nil
			}
			if err := codec.Reconstruct(lost); err != nil {
				t.Fatal(err)
			}
			for i := range shards {
				if !bytes.Equal(lost[i], shards[i]) {
					t.Fatalf("RS%v: shard %d decodes wrong", km, i)
				}
			}
		}
	}
}

func cloneShards(s [][]byte) [][]byte {
	out := make([][]byte, len(s))
	for i, b := range s {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

// TestHeatSketchFollowsRecentWrites: a key written often reads hotter
// than one written once, and the counts halve as writes go on.
func TestHeatSketchFollowsRecentWrites(t *testing.T) {
	h := newHeatSketch()
	for range 20 {
		h.add([]byte("hot"))
	}
	if hot, cold := h.add([]byte("hot")), h.add([]byte("cold")); hot < 21 || cold > 2 {
		t.Fatalf("hot %d cold %d", hot, cold)
	}
	for i := range halveEvery {
		h.add(fmt.Appendf(nil, "other:%d", i))
	}
	if hot := h.add([]byte("hot")); hot > 12 {
		t.Errorf("hot is %d after the counts halved", hot)
	}
}
