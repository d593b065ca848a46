package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/memgest/memgest/scheme/kind"
)

// RMWPair is a read-modify-write of two distinct keys this node
// coordinates (RENAME, COPY): no other write of either key begins or
// commits from the moment both are read until both writes are done. fn
// sees both committed states and returns the new state of each, nil for
// no change.
//
// The two keys wait for their writes in flight and register in byte
// order, so two pairs never wait on each other. The writes commit one
// after the other, first's first: a caller puts first the write that must
// not be lost (RENAME: the destination before the source's deletion), so
// that a failure between them leaves the value twice, never nowhere. A
// read between the two commits sees the first done and the second not yet
// (a reader does not wait for writes in flight, decision 0002).
func (n *Coordinator) RMWPair(ctx context.Context, first, second []byte, fn func(a, b Current) (opA, opB *WriteOp, err error)) error {
	if bytes.Equal(first, second) {
		return fmt.Errorf("server: RMWPair of %q with itself", first)
	}
	keys := [2][]byte{first, second}
	order := [2]int{0, 1}
	if bytes.Compare(first, second) > 0 {
		order = [2]int{1, 0}
	}
	var ps [2]*pending
	for step, i := range order {
		s, err := n.Inflight.waitQuiet(ctx, keys[i])
		if err != nil {
			if step == 1 {
				n.abort(keys[order[0]], ps[order[0]])
			}
			return err
		}
		ps[i] = s.Begin(keys[i], n.Versions.next())
		s.Mu.Unlock()
	}
	var curs [2]Current
	var err error
	for i := range keys {
		if curs[i], err = n.readCommitted(ctx, keys[i]); err != nil {
			break
		}
	}
	if errors.Is(err, kind.ErrPieceGone) {
		err = fmt.Errorf("server: pieces of %q are missing; the key cannot be read", keys)
	}
	var ops [2]*WriteOp
	if err == nil {
		ops[0], ops[1], err = fn(curs[0], curs[1])
	}
	for i := range keys {
		switch {
		case err != nil || ops[i] == nil:
			n.abort(keys[i], ps[i])
		default:
			err = n.apply(ctx, ps[i], ops[i])
		}
	}
	return err
}
