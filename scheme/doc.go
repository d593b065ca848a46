// Package scheme defines the resilience-scheme interface and the scheme
// catalogue; each scheme kind (none, rep, split, stripe, hybrid) lives in a
// subpackage of its own and turns a write into the redundancy messages it
// needs (DESIGN.md §2–3).
//
// Not built yet: none, rep and split arrive with issue 3, stripe with issue 6.
package scheme
