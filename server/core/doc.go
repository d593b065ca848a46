// Package core is a memgest node's coordinator core: the records of the
// keys the node coordinates and the pieces it holds for other
// coordinators, versions and in-flight writes, commit and abort, group
// commit, moves between schemes, blind writes, the key directory, stubs
// and purges, the lease under which the node serves, the peer client, and
// the serving of piece reads and writes.
//
// The core reaches every scheme through scheme/kind and the registry the
// node hands it (Coordinator.Kinds): it imports no scheme kind package,
// which internal/lint enforces, so adding a kind never touches it. The
// node (package server) embeds a *Coordinator and composes the rest
// around it: listeners, heartbeats and failure detection, repair, the
// commands, and the stripe engine (docs/architecture.md).
package core
