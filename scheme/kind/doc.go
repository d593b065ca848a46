// Package kind is the contract between a node's coordinator core and the
// scheme kinds (DESIGN.md §2, decision 0007): what a kind does for the
// coordinator (Scheme), what the node offers a kind in return (Env), the
// pieces and errors both speak of, and the registry that binds each
// scheme.Kind to the package implementing it.
//
// The core asks a Scheme what its records keep, where its pieces go and
// how they live, how to read, refill and rebuild a key, and never which
// kind it is; adding a kind is a new package and one line in the node's
// registry. Kinds import neither the node nor the control plane's Raft
// (internal/lint).
package kind
