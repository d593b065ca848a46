package server

import (
	"context"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
)

// jumpClock moves the node's monotonic clock on by d, as if the command
// running now took that long (a split read on a loaded machine, a huge
// value, a pause).
func jumpClock(n *Node, d time.Duration) { n.Started = n.Started.Add(-d) }

// renew takes an acknowledged heartbeat sent now.
func renew(n *Node) { n.accepted(n.MonoNow()) }

// TestCommandOutlastingItsLease: a key command this node coordinates keeps
// its reply when no failover of the node can have come between its start
// and its reply: the lease holds when it ends (renewed while it ran, or
// after, without a fence). Otherwise a read answers TRYAGAIN, since it
// changed nothing, and only a write answers that its outcome is unknown.
// The lease runs out during each command (the clock jumps past it); before,
// every such command answered core.ErrLeaseLapsed, reads included (issue 23,
// item 6: split GETs on a loaded machine).
func TestCommandOutlastingItsLease(t *testing.T) {
	cases := []struct {
		name  string
		write bool
		// during runs in the command, after the clock jumped past its
		// lease; after runs in the background, soon after.
		during, after func(n *Node)
		want          string
	}{
		{"read, lease renewed while it ran", false, renew, nil, "value"},
		{"read, lease renewed after it ran", false, nil, renew, "value"},
		{"read, node fenced after it ran", false, nil, (*Node).fence, core.ErrReadLapsed.Text()},
		{"read, lease never renewed", false, nil, nil, core.ErrReadLapsed.Text()},
		{"write, lease renewed while it ran", true, renew, nil, "OK"},
		{"write, lease renewed after it ran", true, nil, renew, "OK"},
		{"write, node fenced after it ran", true, nil, (*Node).fence, core.ErrLeaseLapsed.Text()},
		{"write, lease never renewed", true, nil, nil, core.ErrLeaseLapsed.Text()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := readyNode(t)
			args := [][]byte{[]byte("GET"), []byte("k")}
			run := cmdGet
			if tc.write {
				args = [][]byte{[]byte("SET"), []byte("k"), []byte("v")}
				run = func(*Server, context.Context, *connState, [][]byte) resp.Reply { return resp.OK() }
			}
			spec, bad := resp.Resolve(args)
			if bad.IsError() {
				t.Fatal(bad)
			}
			cmd := &command{run: func(s *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
				jumpClock(n, 2*n.Cfg.FailureTimeout)
				if tc.during != nil {
					tc.during(n)
				}
				if tc.after != nil {
					go func() {
						time.Sleep(10 * time.Millisecond) // mostly once withinLease waits
						tc.after(n)
					}()
				}
				return run(s, ctx, cs, args)
			}}
			if got := n.cmds.coordinate(context.Background(), &connState{}, cmd, args, spec); got.Text() != tc.want {
				t.Fatalf("reply %s, want %q", got, tc.want)
			}
		})
	}
}

// readyNode is a leased node whose primary store holds k = "value" in
// scheme none, with a short failure timeout.
func readyNode(t *testing.T) *Node {
	n := leasedNode(t, testMap(t, 3))
	n.Cfg.FailureTimeout = 200 * time.Millisecond
	n.Lease.Until.Store(n.MonoNow() + int64(n.Cfg.FailureTimeout))
	n.Primary = store.New()
	val := []byte("value")
	if err := n.Primary.Put([]byte("k"), val, store.Meta{Version: 1, Scheme: cluster.NoneID, Aux: bigcopy.Checksum(val)}); err != nil {
		t.Fatal(err)
	}
	return n
}

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
