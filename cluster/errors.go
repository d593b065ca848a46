package cluster

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error a map change returns is an *Error whose Kind
// is one of these, so callers can branch with errors.Is and show Error() to
// users as is.
var (
	// ErrNotLeader: the node is not the Raft leader; forward to Leader().
	ErrNotLeader = errors.New("cluster: not the leader")
	// ErrClosed: the Control was closed.
	ErrClosed = errors.New("cluster: control plane closed")
	// ErrNotInitialised: no Init command has been applied to the map yet.
	ErrNotInitialised = errors.New("cluster: map not initialised")
	// ErrBadCommand: malformed command or parameter (bad spec, bad alias...).
	ErrBadCommand = errors.New("cluster: bad command")
	// ErrBadNode: a node description is malformed or clashes with another.
	ErrBadNode = errors.New("cluster: bad node")
	// ErrNoScheme: the named scheme is not in the catalogue.
	ErrNoScheme = errors.New("cluster: no such scheme")
	// ErrSchemeConflict: an alias already names another spec.
	ErrSchemeConflict = errors.New("cluster: scheme conflict")
	// ErrTooFewNodes: a scheme needs more nodes than a placement has.
	ErrTooFewNodes = errors.New("cluster: too few nodes")
	// ErrProtected: the builtin scheme or the default cannot be dropped.
	ErrProtected = errors.New("cluster: scheme protected")
	// ErrBadMap: an encoded map failed to decode or validate.
	ErrBadMap = errors.New("cluster: bad map")
	// ErrVoter: a voter cannot leave the Raft configuration this way.
	ErrVoter = errors.New("cluster: the node is a Raft voter")
)

// Error is a refused map change or a bad encoded map. Error() is a complete
// message meant for users ("cluster: scheme split:4+2 needs 6 nodes, the
// cluster has 5"); errors.Is matches Kind and, when set, Cause.
type Error struct {
	Kind  error  // one of the Err* sentinels
	Msg   string // the message without the "cluster: " prefix
	Cause error  // an underlying error (scheme.ErrSpec, scheme.ErrAlias...), or nil
}

// Error is the message for users, prefixed "cluster: ".
func (e *Error) Error() string { return "cluster: " + e.Msg }

// Unwrap exposes Kind and Cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

func errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

func wrapf(kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Cause: cause}
}
