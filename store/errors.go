package store

import (
	"errors"
	"fmt"
)

// Errors returned by writes. Each error a method returns matches one of them
// with errors.Is; the wrapped message says which limit was hit.
var (
	// ErrTooLarge reports a key longer than MaxKeySize or a value longer than
	// the store's maximum value size (WithMaxValueSize).
	ErrTooLarge = errors.New("store: key or value too large")
	// ErrFull reports a shard whose slab address space is exhausted
	// (64 GiB of slabs per shard; see the package doc).
	ErrFull = errors.New("store: shard slab space exhausted")
)

func tooLarge(what string, got, limit int) error {
	return fmt.Errorf("%w: %s of %d bytes exceeds %d", ErrTooLarge, what, got, limit)
}
