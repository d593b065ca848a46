package cluster

import (
	"math"
	"slices"

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
// otherwise it returns nil. It is PlaceNodes for nodes without failure
// domains.
func Place(nodes []NodeID, slots int) []Shard {
	ns := make([]Node, len(nodes))
	for i, id := range nodes {
		ns[i] = Node{ID: id}
	}
	return PlaceNodes(ns, slots)
}

// PlaceNodes is Place for nodes that may carry failure domains (Zone,
// Host; decision 0021). The rotation is of the nodes interleaved by zone
// and, within a zone, by host (join order otherwise kept), so that every
// rotation starts spread out; and each placement is then chosen position
// by position by the placement rule (domain.go): the node whose zone, then
// host, holds the fewest positions so far, ties going to the rotation's
// order. Every prefix of every placement is therefore spread as evenly
// over zones and hosts as the nodes allow. Without domains the result is
// exactly Place's rotation of the join order.
func PlaceNodes(nodes []Node, slots int) []Shard {
	n := len(nodes)
	if n == 0 || n > slots {
		return nil
	}
	spread := hasDomains(nodes)
	order := nodes
	if spread {
		order = interleave(nodes)
	}
	ids := make([]NodeID, n)
	for i, nd := range order {
		ids[i] = nd.ID
	}
	shards := make([]Shard, n)
	for i, r := range slotRanges(n, slots) {
		placement := rotate(ids, i)
		if spread {
			placement = spreadRotation(order, i)
		}
		shards[i] = Shard{ID: i, First: r[0], Last: r[1], Placement: placement}
	}
	return shards
}

// spreadRotation is the placement the rule chooses from the rotation of
// order starting at i: its first min(len(order), MaxPlacement) picks.
func spreadRotation(order []Node, i int) []NodeID {
	cands := make([]Node, 0, len(order))
	cands = append(cands, order[i:]...)
	cands = append(cands, order[:i]...)
	out := make([]NodeID, min(len(order), MaxPlacement))
	c := newCrowd()
	for j := range out {
		k := c.leastCrowded(cands)
		out[j] = cands[k].ID
		c.add(cands[k])
		cands = slices.Delete(cands, k, k+1)
	}
	return out
}

// interleave orders nodes zone by zone in turn (zones in order of first
// appearance), each zone's nodes interleaved the same way by host.
func interleave(nodes []Node) []Node {
	byZone := groupBy(nodes, func(n Node) string { return n.Zone })
	for i, z := range byZone {
		byZone[i] = roundRobin(groupBy(z, Node.hostKey))
	}
	return roundRobin(byZone)
}

// groupBy splits nodes into groups of equal key, in order of first
// appearance, each group in the nodes' order.
func groupBy(nodes []Node, key func(Node) string) [][]Node {
	var keys []string
	var groups [][]Node
	for _, n := range nodes {
		k := key(n)
		i := slices.Index(keys, k)
		if i < 0 {
			keys, groups = append(keys, k), append(groups, nil)
			i = len(keys) - 1
		}
		groups[i] = append(groups[i], n)
	}
	return groups
}

// roundRobin takes one node from each group in turn until all are taken.
func roundRobin(groups [][]Node) []Node {
	var out []Node
	for j := 0; ; j++ {
		took := false
		for _, g := range groups {
			if j < len(g) {
				out, took = append(out, g[j]), true
			}
		}
		if !took {
			return out
		}
	}
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
