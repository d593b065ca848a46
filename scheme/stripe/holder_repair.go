package stripe

import (
	"fmt"
	"slices"
)

// This file is a holder's side of the scrub's repairs (scrub.go): a copy
// of a chunk or a parity chunk that differs from what its coordinator's
// sound chunk, or a fresh encode of its stripe's sound chunks, says it
// must be is replaced — only while the holder is exactly where the
// scrub's reads found it, so that no update in flight is lost or applied
// twice.

// RepairImage replaces this holder's copy of chunk id (an open chunk's,
// or a hybrid replica's sealed one), held as holder position j, with
// chunk: the coordinator's bytes at seq, which pass their checks. The
// holder must have applied exactly the updates through seq, else
// ErrChanged and nothing changes. It returns whether a byte differed.
func (p *Parity) RepairImage(j int, id ChunkID, seq uint32, chunk []byte) (bool, error) {
	st, ok := p.stripes[stripeKey{id.List, id.Stripe}]
	if !ok || st.j != j || int(id.Position) >= len(st.pos) || len(chunk) != p.size {
		return false, fmt.Errorf("%w: %s: no copy held as holder %d", ErrUpdate, id, j)
	}
	pos := &st.pos[id.Position]
	switch {
	case pos.image == nil:
		return false, fmt.Errorf("%w: %s: no copy held as holder %d", ErrUpdate, id, j)
	case pos.applied.through != seq || len(pos.applied.beyond) > 0:
		return false, fmt.Errorf("%w: %s is at seq %d here, the repair at %d", ErrChanged, id, pos.applied.through, seq)
	case slices.Equal(pos.image, chunk):
		return false, nil
	}
	copy(pos.image, chunk)
	return true, nil
}

// RepairParity replaces the parity chunk of stripe (list, stripe), held
// as parity position j, with parity: a fresh encode of the stripe's data
// chunks, position q's at seq through[q] and sealed into it where
// sealed[q] (the others counted as zeros). Every position must be in that
// state here, else ErrChanged and nothing changes. It returns whether a
// byte differed.
func (p *Parity) RepairParity(j int, list uint16, stripe uint32, through []uint32, sealed []bool, parity []byte) (bool, error) {
	st, ok := p.stripes[stripeKey{list, stripe}]
	if !ok || st.j != j || st.j == p.replica || st.parity == nil || len(parity) != p.size || len(through) != len(st.pos) || len(sealed) != len(st.pos) {
		return false, fmt.Errorf("%w: stripe %d/%d: no parity held as position %d", ErrUpdate, list, stripe, j)
	}
	for q := range st.pos {
		pos := &st.pos[q]
		if pos.sealed != sealed[q] || sealed[q] && (pos.applied.through != through[q] || len(pos.applied.beyond) > 0) {
			return false, fmt.Errorf("%w: stripe %d/%d position %d moved on", ErrChanged, list, stripe, q)
		}
	}
	if slices.Equal(st.parity, parity) {
		return false, nil
	}
	copy(st.parity, parity)
	return true, nil
}
