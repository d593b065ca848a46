// Package bigcopy copies large byte slices in bounded steps.
//
// A Go copy or append is one memmove, which cannot be preempted: copying a
// 512 MiB value in one go kept its processor for a tenth of a second or
// more, and the whole process waited whenever the garbage collector had to
// stop the world meanwhile. On a node with GOMAXPROCS=1 (six nodes sharing
// two cores) that was every goroutine, heartbeats and Raft included, for
// the length of each copy (issue 23, docs/decisions/0006-huge-values.md).
// A loop of Step-sized copies can be preempted between any two.
//
// store and server/resp, which import nothing from the project, keep
// their own copy of Append.
package bigcopy

// Step is the most bytes one copy moves: about 50 µs of memory bandwidth.
const Step = 256 << 10

// Append is append(dst, src...), done in Step-sized copies.
func Append(dst, src []byte) []byte {
	n := len(dst)
	if cap(dst)-n < len(src) {
		grown := make([]byte, n, n+len(src))
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:n+len(src)]
	for off := 0; off < len(src); off += Step {
		copy(dst[n+off:], src[off:min(off+Step, len(src))])
	}
	return dst
}

// Join returns the concatenation of segs in a new slice, copied in
// Step-sized copies.
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
