package store

import "fmt"

// Limits and defaults.
const (
	// MaxKeySize is the longest key a store accepts (64 KiB − 1).
	MaxKeySize = 1<<16 - 1
	// DefaultMaxValueSize is the longest value a store accepts unless
	// WithMaxValueSize says otherwise (512 MiB, Redis's string limit).
	DefaultMaxValueSize = 512 << 20
	// MaxInlineRecord is the largest record kept whole in a slab (64 KiB).
	// A longer record keeps its header and key in the slab and its value in
	// a separate []byte.
	MaxInlineRecord = 64 << 10
	// DefaultShards is the number of shards unless WithShards says otherwise.
	DefaultShards = 256
	// MaxShards is the most shards a store may have.
	MaxShards = 1 << 16
	// DefaultGarbageRatio is the slab garbage allowed per live byte before
	// the cleaner runs, unless WithGarbageRatio says otherwise.
	DefaultGarbageRatio = 0.125
)

// An Option configures a Store in New. An option given a value outside its
// documented range makes New panic: options are fixed by the program, so a
// bad one is a programming error.
type Option func(*config)

type config struct {
	shards     int     // rounded up to a power of two
	maxValue   int     // longest value accepted
	garbage    float64 // slab garbage allowed per live byte
	minSegment int     // smallest slab segment; tests shrink it to force cleaning
}

func defaultConfig() config {
	return config{
		shards:     DefaultShards,
		maxValue:   DefaultMaxValueSize,
		garbage:    DefaultGarbageRatio,
		minSegment: defaultMinSegment,
	}
}

func (c *config) validate() error {
	switch {
	case c.shards < 1 || c.shards > MaxShards:
		return fmt.Errorf("store: WithShards(%d): want 1 to %d", c.shards, MaxShards)
	case c.maxValue < 0:
		return fmt.Errorf("store: WithMaxValueSize(%d): want ≥ 0", c.maxValue)
	case !(c.garbage >= 0.01 && c.garbage <= 4):
		return fmt.Errorf("store: WithGarbageRatio(%g): want 0.01 to 4", c.garbage)
	case c.minSegment < 64 || c.minSegment > maxSegSize || c.minSegment&(c.minSegment-1) != 0:
		return fmt.Errorf("store: minimum segment %d: want a power of two, 64 to %d", c.minSegment, maxSegSize)
	}
	return nil
}

// WithShards sets the number of shards, each with its own lock, index and
// slabs; n is rounded up to a power of two, 1 to MaxShards. Default 256:
// enough that many goroutines rarely meet on a lock, few enough that
// per-shard fixed costs (about 1 KiB each when empty) do not matter.
func WithShards(n int) Option { return func(c *config) { c.shards = n } }

// WithMaxValueSize sets the longest value Put accepts (≥ 0). Default
// DefaultMaxValueSize.
func WithMaxValueSize(n int) Option { return func(c *config) { c.maxValue = n } }

// WithGarbageRatio sets how much dead slab space (from deletes and
// overwrites) a shard tolerates per live byte before it cleans, 0.01 to 4.
// Lower saves memory and costs more copying on writes. Default 0.125.
func WithGarbageRatio(r float64) Option { return func(c *config) { c.garbage = r } }

// withMinSegment sets the smallest slab segment; tests use tiny segments to
// make the cleaner run often.
func withMinSegment(n int) Option { return func(c *config) { c.minSegment = n } }
