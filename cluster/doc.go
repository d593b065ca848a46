// Package cluster is memgest's control plane (DESIGN.md §1, §5): the cluster
// map (nodes, slots, shard placements, scheme catalogue, epoch), the pure
// functions that compute and change it, and the adapter that replicates it
// with hashicorp/raft.
//
// The deterministic core is pure and needs no I/O: Slot maps a key to one of
// the 16384 Redis Cluster slots, Place splits the slots into shards with
// rotated placements, and Apply turns a Map and a Command into the next Map
// with the next epoch. A Map is immutable once built; every change makes a
// new one.
//
// Control wraps the core in a Raft state machine. Every node is a Raft
// member (the first Map.Voters members vote, the rest are non-voters that
// still receive the log), so every node holds the map locally and reads it
// without a network round trip. Only map changes go through Raft; nothing in
// the data path waits on it.
//
// docs/cluster.md walks through the map, placement and control plane.
// Failure detection and spares taking over arrive with issue 4.
package cluster
