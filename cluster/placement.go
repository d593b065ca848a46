package cluster

import (
	"math"

	"github.com/memgest/memgest/scheme"
)

// MaxPlacement is the longest shard placement: the widest scheme the spec
// grammar allows (split:32+16). Longer placements would only grow the map,
// quadratically in the number of nodes.
const MaxPlacement = scheme.MaxData + scheme.MaxParity

// Place splits slots 0..slots-1 into len(nodes) shards and gives each an
// ordered placement. Shard i covers a contiguous slot range, the ranges
// being as even as redis-cli --cluster create makes them (so CLUSTER SLOTS
// looks familiar), and its placement is the rotation
//
//	nodes[i], nodes[i+1], ..., nodes[i-1]  (indices mod len(nodes))
//
// of every node, cut to its first MaxPlacement entries. This is Ring's answer to unbalanced memgest groups (Ring
// §5.4): instead of one group in which some nodes are always coordinators and
// others always hold redundancy, there are as many groups as rotations, so
// every node is the coordinator of ~1/N of the slots and holds an equal share
// of every redundancy role (position 1, 2, ... of a placement), and recovery
// work after a failure spreads over all survivors. Because each placement
// lists min(N, MaxPlacement) nodes, a scheme occupying w of them uses the
// first w entries and stays balanced the same way.
//
// Place is deterministic. nodes must be distinct and 1 ≤ len(nodes) ≤ slots;
// otherwise it returns nil.
func Place(nodes []NodeID, slots int) []Shard {
	n := len(nodes)
	if n == 0 || n > slots {
		return nil
	}
	shards := make([]Shard, n)
	for i, r := range slotRanges(n, slots) {
		shards[i] = Shard{ID: i, First: r[0], Last: r[1], Placement: rotate(nodes, i)}
	}
	return shards
}

// slotRanges reproduces redis-cli's clusterManagerCommandCreate split,
// including its single-precision slots-per-node, so memgest and Redis agree
// on the ranges for the same number of nodes.
func slotRanges(n, slots int) [][2]int {
	per := float64(float32(slots) / float32(n))
	out := make([][2]int, n)
	first, cursor := 0, 0.0
	for i := range out {
		last := int(math.Round(cursor + per - 1))
		if last > slots-1 || i == n-1 {
			last = slots - 1
		}
		last = max(last, first)
		out[i] = [2]int{first, last}
		first, cursor = last+1, cursor+per
	}
	return out
}

// rotate returns the first min(len(nodes), MaxPlacement) entries of
// nodes[i:] followed by nodes[:i], in a new slice.
func rotate(nodes []NodeID, i int) []NodeID {
	out := make([]NodeID, min(len(nodes), MaxPlacement))
	for j := range out {
		out[j] = nodes[(i+j)%len(nodes)]
	}
	return out
}
