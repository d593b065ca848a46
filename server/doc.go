// Package server is a memgest node: the composition root that wires the
// stores, the control plane (cluster), the peer transport and the RESP
// listener around the coordinator core (server/core, which Node embeds);
// the kind registry (kinds.go); the client commands; the peer message
// router; and the repair path (failure detection, metadata-first
// recovery, rebuild, scrub). docs/architecture.md walks it.
package server
