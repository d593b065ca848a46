package server

import "github.com/memgest/memgest/server/config"

// The node's configuration is package server/config's; these names keep
// server's API (cmd/memgest and the in-process cluster build a
// server.Config).
type (
	// Config is everything one node needs to start (config.Config).
	Config = config.Config
	// InMemory runs a node in memory (config.InMemory).
	InMemory = config.InMemory
	// Clock is the time leases and the failure detector read
	// (config.Clock).
	Clock = config.Clock
	// OutputLimit is a client-output-buffer-limit class
	// (config.OutputLimit).
	OutputLimit = config.OutputLimit
)

// DefaultConfig returns a single-node configuration on loopback.
func DefaultConfig() Config { return config.Default() }
