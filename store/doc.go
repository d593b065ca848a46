// Package store is a node's local memory: byte arenas for keys, values and
// chunks, a pointer-free index from key to location and version, and the
// per-key version records the coordinator commits (DESIGN.md §9).
//
// Not built yet: it arrives with the running cluster (issue 3) and the packed
// stripe scheme (issue 6). Like ec, it must import nothing from the project.
package store
