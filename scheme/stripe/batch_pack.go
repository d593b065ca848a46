package stripe

import (
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/memgest/memgest/ec"
)

// This file packs a batch's objects into batch stripes and encodes them
// (decision 0009, BCStore §III-A): each stripe holds only its
// coordinator's objects, in K data chunks as long as their objects need
// (at most the scheme's chunk size) and parity as long as the longest.

// batchObject is one object of a batch: its encoding, key and version,
// and its key's heat (how often the key was written lately, heatSketch's
// estimate).
type batchObject struct {
	enc     []byte // Object.AppendTo
	key     []byte // aliases enc
	version uint64
	heat    uint32
}

// newBatchObject encodes o as a batch object.
func newBatchObject(o *Object) batchObject {
	enc := o.AppendTo(make([]byte, 0, o.EncodedLen()))
	end := len(enc) - len(o.Value)
	return batchObject{enc: enc, key: enc[end-len(o.Key) : end], version: o.Version}
}

// packedStripe is a batch stripe ready to send: K data chunks, each as
// long as its objects, the parity chunks as long as the longest data
// chunk, and where each object of the stripe went.
type packedStripe struct {
	data   [][]byte
	parity [][]byte
	places []packedPlace // in the order the objects were packed
}

// packedPlace is where one object of a batch went: its index in the
// batch, the data chunk and the offset in it.
type packedPlace struct {
	object int
	chunk  int
	offset int
}

// length is the longest data chunk's length: the parity chunks'.
func (ps *packedStripe) length() int {
	n := 0
	for _, d := range ps.data {
		n = max(n, len(d))
	}
	return n
}

// orderByHeat sorts objs hottest first, keeping the batch's order among
// equals: the hottest go to the stripes' first data chunks (the
// coordinator's own under stripe@batch, so hot keys read locally) and hot
// keys share stripes, which updates then empty together (BCStore's
// popularity grouping for its GC).
func orderByHeat(objs []batchObject) []int {
	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(objs[b].heat) - int(objs[a].heat) })
	return order
}

// packBatch packs objs, taken in order, into stripes of k data chunks of
// at most chunkSize bytes. Each stripe's chunks are filled one after the
// other up to an even share of what is left (so their lengths differ by
// less than one object, and parity costs about M/K of the data however
// small the batch). Every object must fit a chunk.
func packBatch(objs []batchObject, order []int, k, chunkSize int) ([]*packedStripe, error) {
	var stripes []*packedStripe
	left := 0
	for _, i := range order {
		if len(objs[i].enc) > chunkSize {
			return nil, fmt.Errorf("stripe: a batch object of %d bytes does not fit a %d-byte chunk", len(objs[i].enc), chunkSize)
		}
		left += len(objs[i].enc)
	}
	for len(order) > 0 {
		ps := &packedStripe{data: make([][]byte, k)}
		share := min(chunkSize, (left+k-1)/k)
		for q := 0; q < k && len(order) > 0; q++ {
			for len(order) > 0 && len(ps.data[q]) < share {
				o := &objs[order[0]]
				if len(ps.data[q])+len(o.enc) > chunkSize {
					break
				}
				ps.places = append(ps.places, packedPlace{object: order[0], chunk: q, offset: len(ps.data[q])})
				ps.data[q] = append(ps.data[q], o.enc...)
				left -= len(o.enc)
				order = order[1:]
			}
		}
		stripes = append(stripes, ps)
	}
	return stripes, nil
}

// encodeBatch computes ps's m parity chunks, as long as its longest data
// chunk (shorter data chunks count as zero-padded).
func encodeBatch(codec *ec.Codec, ps *packedStripe) error {
	n := ps.length()
	shards := make([][]byte, 0, codec.K()+codec.M())
	for _, d := range ps.data {
		shards = append(shards, padded(d, n))
	}
	ps.parity = make([][]byte, codec.M())
	for j := range ps.parity {
		ps.parity[j] = make([]byte, n)
		shards = append(shards, ps.parity[j])
	}
	if n == 0 {
		return nil
	}
	return codec.Encode(shards)
}

// padded is b zero-padded to n bytes: b itself when it is n long, else a
// copy.
func padded(b []byte, n int) []byte {
	if len(b) == n {
		return b
	}
	out := make([]byte, n)
	copy(out, b)
	return out
}

// heatSketch estimates how often each key was written lately: a
// count-min sketch of 4 rows of 8-bit counters whose counts all halve
// every halveEvery writes, so the estimate follows the recent rate
// (BCStore's popularity, in fixed memory). Not safe for concurrent use.
type heatSketch struct {
	seed   maphash.Seed
	rows   [heatRows][heatWidth]uint8
	writes int
}

const (
	heatRows   = 4
	heatWidth  = 4096
	halveEvery = heatWidth // about one write per counter between halvings
)

func newHeatSketch() *heatSketch { return &heatSketch{seed: maphash.MakeSeed()} }

// add counts a write of key and returns its estimated heat, this write
// included.
func (h *heatSketch) add(key []byte) uint32 {
	if h.writes++; h.writes >= halveEvery {
		h.halve()
	}
	sum := maphash.Bytes(h.seed, key)
	est := uint8(255)
	for r := range h.rows {
		c := &h.rows[r][(sum>>(16*r))%heatWidth]
		if *c < 255 {
			*c++
		}
		est = min(est, *c)
	}
	return uint32(est)
}

func (h *heatSketch) halve() {
	h.writes = 0
	for r := range h.rows {
		for i := range h.rows[r] {
			h.rows[r][i] >>= 1
		}
	}
}
