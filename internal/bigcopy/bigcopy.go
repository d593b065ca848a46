// Package bigcopy copies and checksums large byte slices in steps that
// let other goroutines run.
//
// A Go copy is one memmove, and a checksum one assembly loop; neither can
// be preempted. Copying a 512 MiB value in one go kept its processor for a
// tenth of a second or more, and the whole process stopped whenever the
// garbage collector had to stop the world meanwhile: heartbeats and Raft
// with it (issue 23, docs/decisions/0006-huge-values.md). Cutting the copy
// into steps is not enough: a loop whose body is a memmove has no
// preemption point of its own (memmove takes no stack check, and the
// scheduler's signal almost always lands inside it, where it cannot
// preempt), so an execution trace still showed a 512 MiB loop of 256 KiB
// copies run for 570 ms while the world waited to stop. Each step here
// ends with runtime.Gosched, a point where the goroutine yields to any
// other runnable one and a pending stop-the-world proceeds; that costs
// well under 1% of the step.
//
// It imports nothing from the project, so the leaves (store, server/resp)
// may use it (internal/lint).
package bigcopy

import (
	"hash/crc32"
	"runtime"
)

// Step is the most bytes one step moves or checksums: about 50 µs of
// memory bandwidth.
const Step = 256 << 10

// Steps calls f on [lo, hi) for consecutive ranges of at most Step bytes
// that cover [0, n), yielding the processor between two calls.
func Steps(n int, f func(lo, hi int)) {
	for lo := 0; lo < n; lo += Step {
		if lo > 0 {
			runtime.Gosched()
		}
		f(lo, min(lo+Step, n))
	}
}

// Append is append(dst, src...), done in steps.
func Append(dst, src []byte) []byte {
	if len(src) <= Step {
		return append(dst, src...)
	}
	n := len(dst)
	if cap(dst)-n < len(src) {
		grown := make([]byte, n, n+len(src))
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:n+len(src)]
	Steps(len(src), func(lo, hi int) { copy(dst[n+lo:n+hi], src[lo:hi]) })
	return dst
}

// Join returns the concatenation of segs in a new slice, copied in steps.
func Join(segs ...[]byte) []byte {
	size := 0
	for _, s := range segs {
		size += len(s)
	}
	out := make([]byte, 0, size)
	for _, s := range segs {
		out = Append(out, s)
	}
	return out
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C of b, the checksum every stored record and piece
// carries, computed in steps: the assembly loop over a 512 MiB value
// cannot be preempted.
func Checksum(b []byte) uint32 {
	if len(b) <= Step {
		return crc32.Checksum(b, castagnoli)
	}
	var crc uint32
	Steps(len(b), func(lo, hi int) { crc = crc32.Update(crc, castagnoli, b[lo:hi]) })
	return crc
}
