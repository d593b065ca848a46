package core

import (
	"fmt"
	"testing"
)

// The access sketch answers like a per-key LRU clock (Redis's 24-bit one)
// for keys that share no cell: a key never used counts as used when the
// sketch was made; a use resets its idle time; reads within the window
// are counted, and the count restarts after a longer silence.
func TestAccessSketch(t *testing.T) {
	s := newAccessSketch(100)
	k := []byte("k")
	if got := s.idle(k, 130); got != 30 {
		t.Fatalf("idle of a key never used = %d, want 30 (since the sketch was made)", got)
	}
	s.touch(k, 140, 10, false)
	if got := s.idle(k, 145); got != 5 {
		t.Fatalf("idle = %d, want 5", got)
	}
	if got := s.touch(k, 145, 10, true); got != 2 {
		t.Fatalf("second use within the window counted %d", got)
	}
	if got := s.touch(k, 146, 10, true); got != 3 {
		t.Fatalf("third use counted %d", got)
	}
	if got := s.touch(k, 200, 10, true); got != 1 {
		t.Fatalf("a use after a silence longer than the window counted %d, want 1", got)
	}
	if got := s.touch(k, 200, 10, false); got != 1 {
		t.Fatalf("an uncounted use in the same second changed the count to %d", got)
	}
}

// A key is idle unless both its cells were used: a key that shares one
// cell with a busy key still goes cold, and no key looks idler than it
// is (a collision errs toward hot).
func TestAccessSketchCollisions(t *testing.T) {
	s := newAccessSketch(0)
	for i := range 1 << 16 {
		s.touch(fmt.Appendf(nil, "busy%d", i), 1000, 10, false)
	}
	idle, busy := 0, 0
	for i := range 1 << 12 {
		if s.idle(fmt.Appendf(nil, "busy%d", i), 1005) != 5 {
			busy++
		}
		if s.idle(fmt.Appendf(nil, "quiet%d", i), 1005) > 10 {
			idle++
		}
	}
	if busy != 0 {
		t.Fatalf("%d used keys look idler than they are", busy)
	}
	// 2^16 keys touch 2^17 of 2^20 cells: both cells of a quiet key are
	// busy with probability about (1/8)² = 1.6%; with one probe it would
	// be 12.5%.
	if idle < (1<<12)*97/100 {
		t.Fatalf("only %d of %d quiet keys look idle", idle, 1<<12)
	}
}
