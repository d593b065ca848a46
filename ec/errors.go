package ec

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns matches one of them with
// errors.Is; ParamError and LostError carry the details callers need.
var (
	// ErrParams reports code parameters outside the supported range.
	ErrParams = errors.New("ec: invalid code parameters")
	// ErrShardCount reports a shard slice whose length is not k+m.
	ErrShardCount = errors.New("ec: wrong number of shards")
	// ErrShardSize reports empty shards or shards of different sizes.
	ErrShardSize = errors.New("ec: bad shard size")
	// ErrIndex reports a shard, node or block index out of range.
	ErrIndex = errors.New("ec: index out of range")
	// ErrTooManyLost reports more missing shards than the code tolerates.
	ErrTooManyLost = errors.New("ec: too many shards lost")
)

// ParamError reports invalid code parameters. It matches ErrParams.
type ParamError struct {
	K, M, S   int    // the parameters given; S only for a stretched code
	Stretched bool   // whether they describe SRS(K, M, S) rather than RS(K, M)
	Reason    string // which limit they break
}

func (e *ParamError) Error() string {
	if e.Stretched {
		return fmt.Sprintf("ec: invalid code SRS(%d,%d,%d): %s", e.K, e.M, e.S, e.Reason)
	}
	return fmt.Sprintf("ec: invalid code RS(%d,%d): %s", e.K, e.M, e.Reason)
}

// Unwrap makes a ParamError match ErrParams.
func (e *ParamError) Unwrap() error { return ErrParams }

// LostError reports a shard set that cannot be decoded because more than M of
// its K+M shards are missing. It matches ErrTooManyLost.
type LostError struct {
	K, M int
	Lost []int // indices of the missing shards, ascending
}

func (e *LostError) Error() string {
	return fmt.Sprintf("ec: too many shards lost: RS(%d,%d) lost %d of %d shards %v, tolerates %d",
		e.K, e.M, len(e.Lost), e.K+e.M, e.Lost, e.M)
}

// Unwrap makes a LostError match ErrTooManyLost.
func (e *LostError) Unwrap() error { return ErrTooManyLost }

func indexError(what string, got, limit int) error {
	return fmt.Errorf("%w: %s %d not in [0,%d)", ErrIndex, what, got, limit)
}
