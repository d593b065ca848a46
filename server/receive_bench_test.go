package server

import (
	"fmt"
	"testing"

	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
)

// BenchmarkReceivePieces measures what a node receiving a rebuild does per
// PutPieces frame once the transport has checked its CRC: decode and store
// 256 replicas of 4 KiB.
func BenchmarkReceivePieces(b *testing.B) {
	const perFrame, size = 256, 4096
	val := make([]byte, size)
	for i := range val {
		val[i] = byte(i)
	}
	frames := make([][]byte, 64)
	for f := range frames {
		ps := make([]peer.Piece, perFrame)
		for i := range ps {
			ps[i] = peer.Piece{Key: []byte(fmt.Sprintf("key:%06d:%03d", f, i)), Scheme: 1, Version: 7, CRC: bigcopy.Checksum(val), Data: val}
		}
		frames[f] = peer.EncodePutPieces(ps)
	}
	b.SetBytes(perFrame * size)
	b.ReportAllocs()
	n := &Node{Coordinator: &core.Coordinator{Pieces: store.New(store.WithMaxValueSize(1 << 20)), Metrics: core.NewMetrics()}}
	for i := 0; b.Loop(); i++ {
		if i%len(frames) == 0 {
			n.Pieces = store.New(store.WithMaxValueSize(1 << 20))
		}
		if _, err := n.OnPutPieces(frames[i%len(frames)]); err != nil {
			b.Fatal(err)
		}
	}
}
