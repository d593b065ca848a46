// Package control replicates the cluster map (package cluster) with
// hashicorp/raft: a Plane is one node's Raft member, whose state machine is
// the map. Every node is a member (the first Map.Voters members vote, the
// rest are non-voters that still receive the log), so every node holds the
// map locally and reads it without a network round trip. Only map changes
// go through Raft; nothing in the data path waits on it.
//
// NewStatic gives the packages above a Plane without Raft for their unit
// tests, and Config.InMemory keeps Raft's state in memory for in-process
// clusters (internal/simcluster).
package control
