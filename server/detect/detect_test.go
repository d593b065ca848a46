package detect

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// TestNoLeaseWhileMarkingFailed: once the detector has decided to mark a
// silent node failed, a heartbeat of that node arriving before the map
// says so grants no lease, since the lease would outlast the failover
// that follows. Before, suspects returned the node and the marking was
// recorded afterwards, and seen granted the lease meanwhile.
func TestNoLeaseWhileMarkingFailed(t *testing.T) {
	m := kindtest.Map(t, 3)
	self, other := m.Nodes[0].ID, m.Nodes[1].ID
	var d Detector
	const timeout = 20 * time.Millisecond
	// Run as detectLoop does, often (a loop that runs late restarts the
	// count), until the other nodes' silence reaches the timeout.
	var got []cluster.NodeID
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		got = d.Suspects(m, self, true, timeout)
	}
	if !slices.Contains(got, other) {
		t.Fatalf("suspects %v; want %s, silent past the timeout", got, other)
	}
	if err := d.Seen(other, 1, false); !errors.Is(err, ErrBeingMarked) {
		t.Fatalf("a heartbeat during the marking: %v; want ErrBeingMarked", err)
	}
	if got := d.Suspects(m, self, true, timeout); slices.Contains(got, other) {
		t.Fatalf("suspects %v: %s proposed twice", got, other)
	}
	d.SetMarking(other, false) // the proposal failed: the node was not marked
	if err := d.Seen(other, 1, false); err != nil {
		t.Fatalf("a heartbeat after a failed marking: %v", err)
	}
}

// fakeClock is a Clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

// TestRestartedNodeIsSuspectAtOnce: a node that says it restarted, or
// whose incarnation changed, gets no lease and is a suspect at once,
// without waiting for the timeout; once recorded as restarted on
// purpose (it rejoined empty), its heartbeats count again. Fresh and
// ClaimMarking follow the heartbeats and the markings.
func TestRestartedNodeIsSuspectAtOnce(t *testing.T) {
	m := kindtest.Map(t, 3)
	self, a, b := m.Nodes[0].ID, m.Nodes[1].ID, m.Nodes[2].ID
	clock := &fakeClock{t: time.Unix(1000, 0)}
	d := New(clock)
	const timeout = time.Second
	if got := d.Suspects(m, self, true, timeout); len(got) != 0 {
		t.Fatalf("suspects on becoming leader: %v; want none", got)
	}
	if err := d.Seen(a, 1, false); err != nil {
		t.Fatal(err)
	}
	if err := d.Seen(b, 1, false); err != nil {
		t.Fatal(err)
	}
	if err := d.Seen(a, 2, false); !errors.Is(err, ErrRestartedNode) {
		t.Fatalf("a heartbeat with a new incarnation: %v; want ErrRestartedNode", err)
	}
	clock.t = clock.t.Add(timeout / 4)
	if got := d.Suspects(m, self, true, timeout); !slices.Equal(got, []cluster.NodeID{a}) {
		t.Fatalf("suspects %v; want the restarted node only", got)
	}
	if d.ClaimMarking(a) {
		t.Fatal("a second marking of a node being marked was claimed")
	}
	d.SetMarking(a, false)
	d.Restarted(a, 3) // it rejoined empty, as incarnation 3
	if err := d.Seen(a, 3, false); err != nil {
		t.Fatalf("a heartbeat of the rejoined node: %v", err)
	}
	if !d.Fresh(b, timeout) {
		t.Fatal("a node heard from a quarter timeout ago is not fresh")
	}
	// The leader's loop runs every tenth of the timeout (a loop that runs
	// late restarts the count: the silence may be its own).
	var got []cluster.NodeID
	for range 10 {
		clock.t = clock.t.Add(timeout / 10)
		got = append(got, d.Suspects(m, self, true, timeout)...)
	}
	if d.Fresh(b, timeout) {
		t.Fatal("a node silent for over the timeout is fresh")
	}
	if !slices.Contains(got, b) || slices.Contains(got, a) {
		t.Fatalf("suspects %v; want %s, silent past the timeout, and not %s, heard from since", got, b, a)
	}
}
