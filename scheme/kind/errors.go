package kind

import (
	"errors"
	"fmt"
)

// Piece fetch failures that mean the piece is gone (IsLoss).
var (
	// ErrNodeFailed fails a request to a node the map marks failed at
	// once, rather than after the peer timeout.
	ErrNodeFailed = errors.New("marked failed by the control plane")
	// ErrPieceGone means a node does not hold the piece asked for: a
	// newer commit released it, or it went with a failure.
	ErrPieceGone = errors.New("server: piece released under a read")
	// ErrPieceCorrupt is a piece that fails its checksum.
	ErrPieceCorrupt = errors.New("server: piece fails its checksum")
	// ErrOtherVersion is a fetched replica of another version than the
	// one wanted (a replica slot holds one version per key and scheme).
	ErrOtherVersion = errors.New("server: the replica held is of another version")
)

// ErrNoCopy says that every node that should hold a copy of a value
// answered, and none holds it: the value is gone from the live nodes.
var ErrNoCopy = errors.New("no copy of the value is left")

// IsLoss says whether a piece fetch failed because the piece is gone: its
// node is marked failed, or a live node does not have it (or holds another
// version of a replica). Other failures (a timeout, say) may pass and do
// not make a key lost.
func IsLoss(err error) bool {
	return errors.Is(err, ErrNodeFailed) || errors.Is(err, ErrPieceGone) || errors.Is(err, ErrPieceCorrupt) ||
		errors.Is(err, ErrOtherVersion)
}

// LostKey is one key lost beyond its scheme's tolerance, as INFO and
// memgest status report it: how many of its pieces are gone. Unsure marks a
// key known only by a lost stripe chunk's key tag: it may have been in the
// chunk (status lists the tag itself as the key). Cause, with Unsure, marks
// a key known by its slot only: it says what was lost and which slots
// (status lists the range as the key).
type LostKey struct {
	Key    string `json:"key"`
	Scheme string `json:"scheme"`
	Lost   int    `json:"lost"`
	Total  int    `json:"total"`
	Unsure bool   `json:"unsure,omitempty"`
	Cause  string `json:"cause,omitempty"`
}

// Err is the error a read of the lost key answers.
func (k LostKey) Err() error { return &LostError{k} }

// LostError is the error of a read of a lost key: -LOST, never nil.
type LostError struct{ LostKey }

func (e *LostError) Error() string {
	switch {
	case e.Cause != "":
		return fmt.Sprintf("LOST key %q may have been lost: %s; SET or DEL clears", e.Key, e.Cause)
	case e.Unsure:
		return fmt.Sprintf("LOST key %q may have been lost: a chunk of scheme %s that held keys with its tag lost %d of %d pieces; SET or DEL clears", e.Key, e.Scheme, e.Lost, e.Total)
	}
	return fmt.Sprintf("LOST key %q unrecoverable: scheme %s lost %d of %d pieces", e.Key, e.Scheme, e.Lost, e.Total)
}

// CorruptError is the error of a read of a key whose stored copy fails
// its checksum when no redundancy of its scheme repairs it: -CORRUPT, the
// wrong bytes never served (DESIGN.md §4 "Corruption"). It does not
// unwrap to its cause, which may hold a released piece's ErrPieceGone: a
// read must not take it for a write under it and try again.
type CorruptError struct {
	Key    string
	Scheme string
	Cause  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("CORRUPT key %q: its stored copy fails its checksum and scheme %s's redundancy could not repair it: %v", e.Key, e.Scheme, e.Cause)
}

// Is makes a CorruptError match ErrPieceCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrPieceCorrupt }
