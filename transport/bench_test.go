package transport

import (
	"context"
	"fmt"
	"net"
	"testing"
)

// BenchmarkCallParallel: small round trips over one loopback TCP connection
// from many goroutines (b.SetParallelism(16) per CPU), the data path's
// common case. It reports round trips per second and how many request
// frames each client Write carried.
func BenchmarkCallParallel(b *testing.B) {
	for _, size := range []int{16, 4 << 10} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			s := NewServer(echo)
			go s.Serve(l)
			defer s.Close()
			var conn *gatedConn
			c := Dial(l.Addr().String(), WithDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				nc, err := dialTCP(ctx, addr)
				conn = &gatedConn{Conn: nc}
				return conn, err
			}))
			defer c.Close()
			ctx := context.Background()
			if _, err := c.Call(ctx, Frame{}); err != nil {
				b.Fatal(err)
			}
			conn.writes.Store(0)
			payload := make([]byte, size)
			b.SetBytes(int64(size))
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Call(ctx, Frame{Type: 1, Epoch: 1, Payload: payload}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			b.ReportMetric(float64(b.N)/float64(max(conn.writes.Load(), 1)), "frames/write")
		})
	}
}

func BenchmarkAppendFrame(b *testing.B) {
	f := Frame{Type: 1, Epoch: 2, ID: 3, Payload: make([]byte, 4<<10)}
	buf := make([]byte, 0, HeaderSize+len(f.Payload))
	b.SetBytes(int64(len(f.Payload)))
	for b.Loop() {
		buf = AppendFrame(buf[:0], f)
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	buf := AppendFrame(nil, Frame{Type: 1, Epoch: 2, ID: 3, Payload: make([]byte, 4<<10)})
	b.SetBytes(int64(len(buf) - HeaderSize))
	for b.Loop() {
		if _, _, err := DecodeFrame(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
}
