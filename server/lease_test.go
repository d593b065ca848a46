package server

import (
	"context"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/transport"
)

// TestHeartbeatsPassStalledDataFrames: a heartbeat reaches the leader while
// a data frame sent before it is still being handled there. A receiver
// stores pieces on the connection's read loop (peer.Router), so a heartbeat
// on the same connection waited behind every frame before it: a huge
// value's pieces held leases back for as long as they took to send and
// store (issue 23, items 6 and 7).
func TestHeartbeatsPassStalledDataFrames(t *testing.T) {
	got, release := make(chan struct{}), make(chan struct{})
	srv := transport.NewServer(func(req transport.Frame, reply func(transport.Frame)) {
		if req.Type == peer.MsgPutPieces {
			close(got)
			<-release // still storing, on the read loop
		}
		reply(transport.Frame{Type: req.Type})
	})
	leader := cluster.Node{ID: "leader", PeerAddr: serveFrames(t, srv)}
	t.Cleanup(func() { close(release) }) // before the server closes
	n := leasedNode(t, testMap(t, 3))
	go n.Call(context.Background(), leader, peer.MsgPutPieces, nil)
	<-got
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Call(ctx, leader, peer.MsgHeartbeat, nil); err != nil {
		t.Fatalf("the heartbeat waited behind the data frame: %v", err)
	}
}
