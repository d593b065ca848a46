package commands

import (
	"fmt"
	"testing"
)

// BenchmarkRequestReader reads one MGET of 10 k, 100 k and 1 M keys
// arriving in reads of one TCP segment (1460 bytes) and of up to 64 KiB
// (a socket with data waiting: a read takes whatever room the chunk
// offers), and reports the time per byte and per argument: flat columns
// across sizes mean parsing is linear in the request's length
// (docs/benchmarks/parse.md).
func BenchmarkRequestReader(b *testing.B) {
	for _, keys := range []int{10_000, 100_000, 1_000_000} {
		req := mgetRequest(keys)
		for _, step := range []int{1460, 64 << 10} {
			b.Run(fmt.Sprintf("args=%d/read=%d", keys+1, step), func(b *testing.B) {
				b.SetBytes(int64(len(req)))
				for b.Loop() {
					rd := requestReader{conn: &steppedReader{stream: req, steps: []int{step}}, maxBulk: 1 << 20, maxArgs: 1 << 20}
					cmds, err := rd.readPipeline(nil, false)
					if err != nil || len(cmds) != 1 || len(cmds[0]) != keys+1 {
						b.Fatalf("%d requests, %v", len(cmds), err)
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.ReportMetric(ns/float64(len(req)), "ns/byte")
				b.ReportMetric(ns/float64(keys+1), "ns/arg")
			})
		}
	}
}
