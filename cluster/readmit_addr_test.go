package cluster

import (
	"errors"
	"slices"
	"testing"
)

// TestAddNodeAtALostIdentitysAddress: a node that lost its data directory
// comes back with a new id at the address of its old identity (a
// Kubernetes pod whose volume was replaced). AddNode frees the address of
// a failed or left node and refuses that of a live one; the knowledge that
// positions need rebuilding is never lost (decision 0017).
func TestAddNodeAtALostIdentitysAddress(t *testing.T) {
	// reborn is a new identity at node i's addresses.
	reborn := func(i int) Node {
		n := testNode(40 + i)
		n.ClientAddr, n.PeerAddr = testNode(i).ClientAddr, testNode(i).PeerAddr
		return n
	}
	old1 := testNode(1).ID
	for _, tc := range []struct {
		name  string
		m     func(t *testing.T) *Map
		add   AddNode
		err   string // the refusal, or "" for an admission
		check func(t *testing.T, before, after *Map)
	}{
		{
			name: "failed node whose places a spare took",
			m:    func(t *testing.T) *Map { return mustApply(t, formed(t, 4, 1), MarkFailed{ID: old1}) },
			add:  AddNode{Node: reborn(1)},
			check: func(t *testing.T, before, after *Map) {
				wantFreed(t, after, old1)
				if n, _ := after.Node(reborn(1).ID); n.State != Spare {
					t.Fatalf("the new identity is %v, want a spare (nobody waits for one)", n.State)
				}
				wantSameRepairs(t, before, after)
			},
		},
		{
			name: "failed node still placed",
			m:    func(t *testing.T) *Map { return mustApply(t, formed(t, 4, 0), MarkFailed{ID: old1}) },
			add:  AddNode{Node: reborn(1)},
			check: func(t *testing.T, before, after *Map) {
				wantFreed(t, after, old1)
				wantTookPlaces(t, before, after, old1, reborn(1).ID)
			},
		},
		{
			name: "failed node still placed, asked to be a spare",
			m:    func(t *testing.T) *Map { return mustApply(t, formed(t, 4, 0), MarkFailed{ID: old1}) },
			add:  AddNode{Node: reborn(1), Spare: true},
			check: func(t *testing.T, before, after *Map) {
				wantFreed(t, after, old1)
				wantTookPlaces(t, before, after, old1, reborn(1).ID)
			},
		},
		{
			// It came back empty once (on standby where it preceded the
			// node that kept a shard's records), then failed again.
			name: "failed node still placed, on standby",
			m: func(t *testing.T) *Map {
				m := mustApply(t, formed(t, 4, 0), MarkFailed{ID: old1}, Rejoin{ID: old1})
				if !slices.ContainsFunc(m.Shards, func(sh Shard) bool { return slices.Contains(sh.Standby, old1) }) {
					t.Fatal("setup: the rejoined node is on standby nowhere")
				}
				return mustApply(t, m, MarkFailed{ID: old1})
			},
			add: AddNode{Node: reborn(1)},
			check: func(t *testing.T, before, after *Map) {
				wantFreed(t, after, old1)
				wantTookPlaces(t, before, after, old1, reborn(1).ID)
			},
		},
		{
			name: "failed node still placed, another failed node waits too",
			m: func(t *testing.T) *Map {
				return mustApply(t, formed(t, 5, 0), MarkFailed{ID: testNode(0).ID}, MarkFailed{ID: old1})
			},
			add: AddNode{Node: reborn(1)},
			check: func(t *testing.T, before, after *Map) {
				wantFreed(t, after, old1)
				wantTookPlaces(t, before, after, old1, reborn(1).ID)
				if n, _ := after.Node(testNode(0).ID); n.State != Failed || !after.placedNode(n.ID) {
					t.Fatalf("the other failed node is %v, placed %v: want failed and placed", n.State, after.placedNode(n.ID))
				}
			},
		},
		{
			name: "left node",
			m: func(t *testing.T) *Map {
				return mustApply(t, formed(t, 4, 1), MarkFailed{ID: old1}, RemoveNode{ID: old1})
			},
			add: AddNode{Node: reborn(1)},
			check: func(t *testing.T, before, after *Map) {
				wantFreed(t, after, old1)
				wantSameRepairs(t, before, after)
			},
		},
		{
			name: "failed node's client address only",
			m:    func(t *testing.T) *Map { return mustApply(t, formed(t, 4, 1), MarkFailed{ID: old1}) },
			add:  AddNode{Node: Node{ID: testNode(41).ID, ClientAddr: testNode(1).ClientAddr, PeerAddr: "10.0.0.1:1"}},
			check: func(t *testing.T, before, after *Map) {
				wantFreed(t, after, old1)
			},
		},
		{
			name: "up node's address",
			m:    func(t *testing.T) *Map { return formed(t, 4, 0) },
			add:  AddNode{Node: reborn(1)},
			err:  "cluster: node " + string(reborn(1).ID) + ": address already used by node " + string(old1),
		},
		{
			name: "spare's address",
			m:    func(t *testing.T) *Map { return formed(t, 4, 1) },
			add:  AddNode{Node: reborn(4)},
			err:  "cluster: node " + string(reborn(4).ID) + ": address already used by node " + string(testNode(4).ID),
		},
		{
			name: "failed node's peer address, up node's client address",
			m:    func(t *testing.T) *Map { return mustApply(t, formed(t, 4, 1), MarkFailed{ID: old1}) },
			add:  AddNode{Node: Node{ID: testNode(41).ID, ClientAddr: testNode(2).ClientAddr, PeerAddr: testNode(1).PeerAddr}},
			err:  "cluster: node " + string(testNode(41).ID) + ": address already used by node " + string(testNode(2).ID),
		},
		{
			name: "a member moves onto a failed node still placed",
			m:    func(t *testing.T) *Map { return mustApply(t, formed(t, 4, 0), MarkFailed{ID: old1}) },
			add:  AddNode{Node: Node{ID: testNode(2).ID, ClientAddr: testNode(1).ClientAddr, PeerAddr: testNode(1).PeerAddr}},
			err: "cluster: node " + string(testNode(2).ID) + ": address already used by failed node " + string(old1) +
				", which still holds positions no spare took; only a node new to the cluster may take them",
		},
		{
			name: "two failed nodes still placed",
			m: func(t *testing.T) *Map {
				return mustApply(t, formed(t, 5, 0), MarkFailed{ID: testNode(0).ID}, MarkFailed{ID: old1})
			},
			add: AddNode{Node: Node{ID: testNode(41).ID, ClientAddr: testNode(1).ClientAddr, PeerAddr: testNode(0).PeerAddr}},
			err: "cluster: node " + string(testNode(41).ID) + ": addresses used by failed nodes " + string(testNode(0).ID) +
				" and " + string(old1) + ", which both still hold positions; a new node takes the places of one",
		},
		{
			name: "a freed address",
			m:    func(t *testing.T) *Map { return formed(t, 4, 0) },
			add:  AddNode{Node: Node{ID: testNode(41).ID, ClientAddr: freedAddr(old1), PeerAddr: "10.0.0.1:1"}},
			err:  "cluster: node " + string(testNode(41).ID) + `: addresses ending in ".invalid:0" name the nodes whose address was given to another`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m(t)
			checkValid(t, m)
			before, _ := m.Marshal()
			after, err := Apply(m, tc.add)
			if unchanged, _ := m.Marshal(); string(unchanged) != string(before) {
				t.Fatal("Apply modified its input map")
			}
			if tc.err != "" {
				if !errors.Is(err, ErrBadNode) || err.Error() != tc.err || after != m {
					t.Fatalf("err = %v\nwant %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkValid(t, after)
			if after.Epoch != m.Epoch+1 {
				t.Fatalf("epoch %d → %d", m.Epoch, after.Epoch)
			}
			again, _ := Apply(m, tc.add)
			if a, b := mustMarshal(t, after), mustMarshal(t, again); a != b {
				t.Fatalf("Apply is not deterministic:\n%s\n%s", a, b)
			}
			tc.check(t, m, after)
			wantOldIdentityStaysOut(t, after, old1)
		})
	}
}

func mustMarshal(t *testing.T, m *Map) string {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantFreed: the old identity left, votes no more, is in no placement of a
// shard with slots, and its addresses name it and reach nothing.
func wantFreed(t *testing.T, m *Map, old NodeID) {
	t.Helper()
	n, _ := m.Node(old)
	if n.State != Left || n.Voter || m.placedNode(old) {
		t.Fatalf("the old identity is %v, voter %v, placed %v: want left, no voter, placed nowhere", n.State, n.Voter, m.placedNode(old))
	}
	if n.PeerAddr != freedAddr(old) || n.ClientAddr != freedAddr(old) || n.HTTPAddr != "" {
		t.Fatalf("the old identity's addresses are %q, %q, %q", n.PeerAddr, n.ClientAddr, n.HTTPAddr)
	}
	for _, sh := range m.Shards {
		if slices.Contains(sh.Standby, old) || slices.ContainsFunc(sh.StandIns, func(s StandIn) bool { return s.Node == old }) {
			t.Fatalf("shard %d still names the old identity: %+v", sh.ID, sh)
		}
	}
}

// wantTookPlaces: to is up in every position from held, each listed for
// rebuild in a new round; every position listed before still is, and the
// shards recovering before still are.
func wantTookPlaces(t *testing.T, before, after *Map, from, to NodeID) {
	t.Helper()
	if n, _ := after.Node(to); n.State != Up {
		t.Fatalf("the new identity is %v, want up in the old one's places", n.State)
	}
	took := 0
	for i, sh := range before.Shards {
		got := after.Shards[i]
		for _, p := range sh.Rebuild {
			if !slices.Contains(got.Rebuild, p) {
				t.Fatalf("shard %d: position %d no longer listed for rebuild", i, p)
			}
		}
		if sh.Recovering && !got.Recovering {
			t.Fatalf("shard %d no longer recovering", i)
		}
		j := slices.Index(sh.Placement, from)
		if j < 0 {
			continue
		}
		took++
		if got.Placement[j] != to || !slices.Contains(got.Rebuild, j) || got.RebuildRound <= sh.RebuildRound {
			t.Fatalf("shard %d: position %d is %s, rebuild %v round %d (was %d)", i, j, got.Placement[j], got.Rebuild, got.RebuildRound, sh.RebuildRound)
		}
		// Coordination never moves off the live node that kept the
		// shard's records.
		if was, _ := before.CoordinatorOf(&sh); was.ID != "" {
			if c, _ := after.CoordinatorOf(&got); c.ID != was.ID {
				t.Fatalf("shard %d: coordinator %s, was %s", i, c.ID, was.ID)
			}
		}
	}
	if took == 0 {
		t.Fatal("setup: the old identity held no position")
	}
	if after.Phase(to) != "coordinated-normal" && after.Phase(to) != "intermediate" {
		t.Fatalf("the new identity's phase is %s", after.Phase(to))
	}
}

// wantSameRepairs: nothing placed changed hands, so the repairs under way
// are the same.
func wantSameRepairs(t *testing.T, before, after *Map) {
	t.Helper()
	for i, sh := range before.Shards {
		got := after.Shards[i]
		if !slices.Equal(sh.Placement, got.Placement) || !slices.Equal(sh.Rebuild, got.Rebuild) ||
			sh.RebuildRound != got.RebuildRound || sh.Recovering != got.Recovering {
			t.Fatalf("shard %d changed: %+v → %+v", i, sh, got)
		}
	}
}

// wantOldIdentityStaysOut: the old identity, should it return with its
// data directory after all, neither rejoins nor takes its address back.
func wantOldIdentityStaysOut(t *testing.T, m *Map, old NodeID) {
	t.Helper()
	for _, c := range []Command{Rejoin{ID: old}, MarkFailed{ID: old}} {
		if next, err := Apply(m, c); err != nil || next != m {
			t.Fatalf("%T of the old identity changed the map (%v)", c, err)
		}
	}
	if _, err := Apply(m, AddNode{Node: testNode(1)}); !errors.Is(err, ErrBadNode) {
		t.Fatalf("the old identity took its address back: %v", err)
	}
}
