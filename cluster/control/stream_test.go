package control

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// tcpStream is the smallest raft.StreamLayer: a TCP listener of its own.
// The server instead hands Raft the connections its shared peer listener
// identified as Raft (see docs/cluster.md).
type tcpStream struct {
	net.Listener
}

func listenStream(t *testing.T, addr string) *tcpStream {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return &tcpStream{ln}
}

// Dial implements raft.StreamLayer.
func (s *tcpStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}
