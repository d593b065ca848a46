package commands

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/cluster/control"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/scheme/none"
	"github.com/memgest/memgest/server/config"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
)

// jumpClock moves the node's monotonic clock on by d, as if the command
// running now took that long (a split read on a loaded machine, a huge
// value, a pause).
func jumpClock(n *Server, d time.Duration) { n.Started = n.Started.Add(-d) }

// renew takes an acknowledged heartbeat sent now.
func renew(n *Server) { n.Renewed(n.MonoNow()) }

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
		during, after func(n *Server)
		want          string
	}{
		{"read, lease renewed while it ran", false, renew, nil, "value"},
		{"read, lease renewed after it ran", false, nil, renew, "value"},
		{"read, node fenced after it ran", false, nil, fence, core.ErrReadLapsed.Text()},
		{"read, lease never renewed", false, nil, nil, core.ErrReadLapsed.Text()},
		{"write, lease renewed while it ran", true, renew, nil, "OK"},
		{"write, lease renewed after it ran", true, nil, renew, "OK"},
		{"write, node fenced after it ran", true, nil, fence, core.ErrLeaseLapsed.Text()},
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
			if got := n.coordinate(context.Background(), &connState{}, cmd, spec, args, spec.Keys(args), -1); got.Text() != tc.want {
				t.Fatalf("reply %s, want %q", got, tc.want)
			}
		})
	}
}

// readyNode is a leased node's client side whose primary store holds
// k = "value" in scheme none, with a short failure timeout.
func readyNode(t *testing.T) *Server {
	cfg := config.Default()
	cfg.FailureTimeout = 200 * time.Millisecond
	c := core.NewCoordinator(cfg, slog.New(slog.DiscardHandler), time.Now(), nil, nil)
	t.Cleanup(func() { c.Peers.Close(); c.Leases.Close() })
	m := kindtest.Map(t, 3, "rep:3", "split:2+1")
	c.Ctl = control.NewStatic(m)
	owner, _ := m.Coordinator(int(keyslot.Of([]byte("k"))))
	c.NodeID = owner.ID // k's coordinator, which coordinate checks
	c.Kinds = kind.Registry{none.Kind: none.New}
	c.Lease.Fresh.Store(true)
	c.Lease.Until.Store(c.MonoNow() + int64(cfg.FailureTimeout))
	val := []byte("value")
	if err := c.Primary.Put([]byte("k"), val, store.Meta{Version: 1, Scheme: cluster.NoneID, Aux: bigcopy.Checksum(val)}); err != nil {
		t.Fatal(err)
	}
	return New(c, nil, nil, "test")
}

// fence voids n's lease, as the control plane's decision that the node
// failed does.
func fence(n *Server) { n.Fence() }

// TestCoordinateRefusesSlotsMovedAway: a command routed here by an
// earlier map whose keys another node coordinates by the time it runs (a
// migration ended meanwhile) runs nothing here: a forwarded one answers
// MOVED to the new coordinator. Before, it ran on the source's copy, which
// the migration had deleted: a GET of a rep:3 key answered nil during a
// drain (TestRebalanceGrowsAndDrainsByCommand).
func TestCoordinateRefusesSlotsMovedAway(t *testing.T) {
	n := readyNode(t)
	m := n.Ctl.Map()
	owner, _ := m.Coordinator(int(keyslot.Of([]byte("k"))))
	for _, nd := range m.Nodes {
		if nd.ID != owner.ID {
			n.NodeID = nd.ID // this node no longer coordinates k
			break
		}
	}
	args := [][]byte{[]byte("GET"), []byte("k")}
	spec, bad := resp.Resolve(args)
	if bad.IsError() {
		t.Fatal(bad)
	}
	ran := false
	cmd := &command{run: func(*Server, context.Context, *connState, [][]byte) resp.Reply {
		ran = true
		return resp.Nil()
	}}
	got := n.coordinate(context.Background(), &connState{forwarded: true}, cmd, spec, args, spec.Keys(args), -1)
	if ran || !strings.HasPrefix(got.Text(), "MOVED ") || !strings.HasSuffix(got.Text(), owner.ClientAddr) {
		t.Fatalf("ran %v, reply %s; want nothing run and MOVED to %s", ran, got, owner.ClientAddr)
	}
}

// TestSetGroupRechecksItsSlots: pipelined SETs joined a group under one
// map; if by the flush another node coordinates a key's slot, the group
// is not written blind here (it runs each SET the usual way).
func TestSetGroupRechecksItsSlots(t *testing.T) {
	n := readyNode(t)
	m := n.Ctl.Map()
	var g setGroup
	g.add(0, []byte("k"), []byte("v"))
	if !g.stillJoinable(m, n.NodeID) {
		t.Fatal("the group of k's own coordinator is not joinable")
	}
	for _, nd := range m.Nodes {
		if nd.ID != n.NodeID && g.stillJoinable(m, nd.ID) {
			t.Fatalf("node %s, which does not coordinate k, may write the group blind", nd.ID)
		}
	}
}
