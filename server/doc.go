// Package server is a memgest node: the composition root that wires the
// stores, the control plane (cluster), the peer transport and the RESP
// listener; the coordinator's data path for every scheme kind; the client
// commands; the peer messages; and the repair path (failure detection,
// metadata-first recovery, rebuild, scrub). docs/architecture.md walks it.
package server
