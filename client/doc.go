// Package client is a Go client for memgest's own commands (schemes, per-key
// resilience, status) on top of the Redis protocol.
//
// Not built yet: it arrives with issue 3.
package client
