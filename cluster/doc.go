// Package cluster is the cluster map of memgest's control plane (DESIGN.md
// §1, §5): nodes, slots, shard placements, the scheme catalogue and the
// epoch, and the pure functions that compute and change it.
//
// It needs no I/O: Place splits the 16384 Redis Cluster slots (package
// keyslot) into shards with rotated placements, and Apply turns a Map and
// a Command into the next Map with the next epoch. A Map is immutable once
// built; every change makes a new one. The scheme kinds read it; the
// package that replicates it with hashicorp/raft is cluster/control, which
// the kinds may not import (internal/lint).
//
// docs/cluster.md walks through the map, placement and control plane.
package cluster
