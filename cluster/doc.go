// Package cluster holds the cluster map (nodes, slots, shard placements,
// scheme catalogue, epoch), the placement functions, the failure detector and
// the adapter to the Raft library that replicates the map (DESIGN.md §1, §4–5).
//
// Not built yet: the map and placement arrive with issue 3, failure handling
// with issue 4.
package cluster
