package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/cluster/control"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/transport"
)

// authorityPeer is a peer that refuses the first frame of an old epoch,
// as a node that moved to a newer map does, and counts the frames it got.
type authorityPeer struct {
	mu     sync.Mutex
	epochs []uint64
	addr   string
}

// startAuthorityPeer serves frames; onStale runs when a frame of an epoch
// older than newer arrives, before it is refused (the sender learning of
// the new map, say, or being fenced meanwhile).
func startAuthorityPeer(t *testing.T, newer uint64, onStale func()) *authorityPeer {
	t.Helper()
	p := &authorityPeer{}
	srv := transport.NewServer(func(req transport.Frame, reply func(transport.Frame)) {
		p.mu.Lock()
		p.epochs = append(p.epochs, req.Epoch)
		p.mu.Unlock()
		if req.Epoch < newer {
			onStale()
			reply(peer.ErrFrame(errors.New(peer.StaleEpochPrefix + strconv.FormatUint(newer, 10))))
			return
		}
		reply(transport.Frame{Type: req.Type})
	})
	p.addr = serveFrames(t, srv)
	return p
}

// serveFrames serves srv on a loopback port until the test ends and
// returns its address.
func serveFrames(t *testing.T, srv *transport.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func (p *authorityPeer) frames() []uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]uint64(nil), p.epochs...)
}

// leasedNode is a node with a fresh lease under m, enough to send frames.
func leasedNode(t *testing.T, m *cluster.Map) *Node {
	// No failure timeout: the node counts as long started (auditVerdicts).
	d := DefaultConfig()
	cfg := Config{PeerTimeout: 2 * time.Second, MaxValueSize: d.MaxValueSize, MaxArgs: d.MaxArgs}
	n := &Node{Coordinator: core.NewCoordinator(cfg, slog.New(slog.DiscardHandler), time.Now(), nil, nil)}
	n.Ctl = control.NewStatic(m)
	t.Cleanup(func() { n.Peers.Close(); n.Leases.Close() })
	n.compose()
	n.Router.Maps = n.Ctl
	n.Lease.Until.Store(n.MonoNow() + int64(time.Hour))
	n.Lease.Fresh.Store(true) // fence() then wipes nothing
	return n
}

// TestAuthorityFramesKeepTheirEpoch: a frame a coordinator sends on its
// own authority (pieces, releases, directory entries) and that a node with
// a newer map refuses is sent again under that map only if no failover of
// the sender can have come between: its lease still holds and it was not
// fenced. Other frames are always sent again.
func TestAuthorityFramesKeepTheirEpoch(t *testing.T) {
	base := testMap(t, 3)
	sp, _ := scheme.Parse("rep:2")
	next := mustApply(t, base, cluster.CreateScheme{Spec: sp})
	cases := []struct {
		name    string
		typ     uint8
		between func(n *Node) // what happens to the sender before the refusal
		resent  bool
	}{
		{"pieces, lease held", peer.MsgPutPieces, func(*Node) {}, true},
		{"pieces, fenced", peer.MsgPutPieces, func(n *Node) { n.fence() }, false},
		{"release, lease lapsed", peer.MsgDelPiece, func(n *Node) { n.Lease.Until.Store(0) }, false},
		{"directory, fenced and readmitted", peer.MsgDirectory, func(n *Node) { n.fence(); n.Renewed(n.MonoNow()) }, false},
		{"forwarded command, lease lapsed", peer.MsgForward, func(n *Node) { n.Lease.Until.Store(0) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n *Node
			other := startAuthorityPeer(t, next.Epoch, func() {
				tc.between(n)
				n.Ctl.Publish(next) // the sender catches up
			})
			n = leasedNode(t, base)
			_, err := n.Call(context.Background(), cluster.Node{PeerAddr: other.addr}, tc.typ, nil)
			got := other.frames()
			if tc.resent {
				if err != nil || len(got) != 2 || got[1] != next.Epoch {
					t.Fatalf("want the frame sent again at epoch %d; got %v, err %v", next.Epoch, got, err)
				}
				return
			}
			if !errors.Is(err, core.ErrLeaseGone) || len(got) != 1 {
				t.Fatalf("want one frame and core.ErrLeaseGone; got %v, err %v", got, err)
			}
		})
	}
}

// TestCallEachSendsNoAuthorityWithoutALease: a coordinator whose lease
// lapsed sends no pieces at all, while a request of another kind goes out.
func TestCallEachSendsNoAuthorityWithoutALease(t *testing.T) {
	m := testMap(t, 3)
	other := startAuthorityPeer(t, 0, func() {})
	n := leasedNode(t, m)
	n.Lease.Until.Store(0)
	to := cluster.Node{ID: "peer", PeerAddr: other.addr}
	_, errs := n.CallEach(context.Background(), []core.PeerReq{{Node: to, Typ: peer.MsgPutPieces}, {Node: to, Typ: peer.MsgStats}})
	if !errors.Is(errs[0], core.ErrLeaseGone) || errs[1] != nil {
		t.Fatalf("errors %v", errs)
	}
	if got := other.frames(); len(got) != 1 {
		t.Fatalf("the peer got %d frames, want only the stats request", len(got))
	}
}

// TestDirectoryRequeueUnderALapsedLease: entries held back while the lease
// has lapsed are queued again once per send (not once per directory node,
// which doubled the queue every round), and never survive a fence.
func TestDirectoryRequeueUnderALapsedLease(t *testing.T) {
	n := leasedNode(t, testMap(t, 6))
	n.Lease.Until.Store(0) // lapsed, not fenced
	batch := []core.DirEntry{{Key: []byte("a"), Scheme: 1, Version: 1}, {Key: []byte("b"), Scheme: 1, Version: 2}}
	take := func() ([]core.DirEntry, uint64) {
		d := &n.Directory
		d.Mu.Lock()
		defer d.Mu.Unlock()
		q, f := d.Queue, d.Fences
		d.Queue = nil
		return q, f
	}
	n.SendDirectory(batch, 0)
	for round := range 3 {
		q, f := take()
		if len(q) != len(batch) || f != 0 {
			t.Fatalf("round %d: %d entries queued again at fence count %d, want %d at 0", round, len(q), f, len(batch))
		}
		n.SendDirectory(q, f)
	}
	n.fence() // fresh: no wipe
	if q, _ := take(); len(q) != 0 {
		t.Fatalf("%d entries still queued after a fence", len(q))
	}
	n.Renewed(n.MonoNow()) // readmitted, leased again
	n.SendDirectory(batch, 0)
	if q, _ := take(); len(q) != 0 {
		t.Fatalf("entries decided before the fence were queued again after it: %d", len(q))
	}
	if _, errs := n.CallEachSince(context.Background(),
		[]core.PeerReq{{Node: n.Ctl.Map().Nodes[1], Typ: peer.MsgDirectory}}, 0); !errors.Is(errs[0], core.ErrLeaseGone) {
		t.Fatalf("a directory frame decided before the fence: %v, want core.ErrLeaseGone", errs[0])
	}
}

// TestCallGivesUpOnAGoneNode: a peer that refused a frame as stale is not
// sent it again once the newer map counts it failed: a node that left or
// failed may never see that map, and would hold the request until the
// deadline. The call fails at once as not sent, so the caller may send it
// elsewhere.
func TestCallGivesUpOnAGoneNode(t *testing.T) {
	base := testMap(t, 3)
	target := base.Nodes[1]
	next := mustApply(t, base, cluster.MarkFailed{ID: target.ID})
	var n *Node
	other := startAuthorityPeer(t, next.Epoch, func() { n.Ctl.Publish(next) })
	n = leasedNode(t, base)
	target.PeerAddr = other.addr
	_, err := n.Call(context.Background(), target, peer.MsgForward, nil)
	if !errors.Is(err, transport.ErrNotSent) || !errors.Is(err, kind.ErrNodeFailed) {
		t.Fatalf("err %v, want not sent, the node failed", err)
	}
	if got := other.frames(); len(got) != 1 {
		t.Fatalf("the failed node got %d frames (epochs %v), want only the first", len(got), got)
	}
}
