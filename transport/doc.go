// Package transport is the node-to-node protocol: a multiplexed, pipelined
// binary framing with per-message epoch, request id and checksum, behind an
// interface with an in-memory implementation for tests and a TCP one
// (DESIGN.md §6).
//
// Not built yet: it arrives with issue 3.
package transport
