// Package server is a memgest node: the composition root that wires the
// stores, the control plane (cluster), the peer transport and the client
// port around the node's rooms — the coordinator core (server/core, which
// Node embeds), the client side (server/commands), the repair path
// (server/repair) — and keeps what is the node's own: heartbeats and
// fencing, the peer message router, the kind registry (kinds.go), HTTP
// and trust. docs/architecture.md walks it.
package server
