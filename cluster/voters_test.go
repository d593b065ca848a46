package cluster

import (
	"slices"
	"testing"
)

// voterMap is a map formed over n nodes and joined by spares spares,
// with floor as its --voters and the first min(floor, n) nodes voting
// (as AddMember flags them), then cmds applied.
func voterMap(t *testing.T, n, spares, floor int, cmds ...Command) *Map {
	t.Helper()
	m := NewMap(n, floor)
	for i := range n + spares {
		node := testNode(i)
		node.Voter = i < floor && i < n
		m = mustApply(t, m, AddNode{Node: node})
	}
	return mustApply(t, m, cmds...)
}

// create is CreateScheme of a bare spec.
func create(t *testing.T, s string) Command { return CreateScheme{Spec: spec(t, s)} }

// TestVoterTarget: the smallest odd count of voters whose quorum survives
// as many failures as the catalogue's most tolerant scheme (issue 43: a
// cluster with rep:3 and stripe:4+2 lost its control plane to two
// failures of three voters), never below --voters, at most MaxVoters, and
// no more than the largest odd count of the nodes that can vote (up or
// spare, not draining).
func TestVoterTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    func(t *testing.T) *Map
		want int
	}{
		{"founding node alone", func(t *testing.T) *Map {
			return mustApply(t, NewMap(6, 3), AddNode{Node: testNode(0)})
		}, 1},
		{"forming, two of six joined", func(t *testing.T) *Map {
			return mustApply(t, NewMap(6, 3), AddNode{Node: testNode(0)}, AddNode{Node: testNode(1)})
		}, 1},
		{"forming, three of six joined", func(t *testing.T) *Map {
			return mustApply(t, NewMap(6, 3), AddNode{Node: testNode(0)}, AddNode{Node: testNode(1)}, AddNode{Node: testNode(2)})
		}, 3},
		{"none only: --voters", func(t *testing.T) *Map { return voterMap(t, 6, 0, 3) }, 3},
		{"none only, --voters 5", func(t *testing.T) *Map { return voterMap(t, 7, 0, 5) }, 5},
		{"none only, --voters 7", func(t *testing.T) *Map { return voterMap(t, 7, 0, 7) }, 7},
		{"rep:2 tolerates 1: three", func(t *testing.T) *Map { return voterMap(t, 6, 0, 1, create(t, "rep:2")) }, 3},
		{"rep:2 under --voters 5", func(t *testing.T) *Map { return voterMap(t, 6, 0, 5, create(t, "rep:2")) }, 5},
		{"rep:3 tolerates 2: five", func(t *testing.T) *Map { return voterMap(t, 6, 0, 3, create(t, "rep:3")) }, 5},
		{"stripe:4+2: five", func(t *testing.T) *Map { return voterMap(t, 7, 0, 3, create(t, "stripe:4+2")) }, 5},
		{"rep:3 and stripe:4+2 on seven", func(t *testing.T) *Map {
			return voterMap(t, 7, 0, 3, create(t, "rep:3"), create(t, "stripe:4+2"))
		}, 5},
		{"split:4+3 tolerates 3: seven", func(t *testing.T) *Map { return voterMap(t, 7, 0, 3, create(t, "split:4+3")) }, 7},
		{"split:4+4 would want nine: MaxVoters", func(t *testing.T) *Map {
			return voterMap(t, 9, 0, 3, create(t, "split:4+4"))
		}, MaxVoters},
		{"the most tolerant scheme decides", func(t *testing.T) *Map {
			return voterMap(t, 7, 0, 1, create(t, "rep:2"), create(t, "split:4+3"), create(t, "rep:3"))
		}, 7},
		{"rep:3 on four nodes: three, not an even four", func(t *testing.T) *Map { return voterMap(t, 4, 0, 3, create(t, "rep:3")) }, 3},
		{"rep:3 on five nodes: all of them", func(t *testing.T) *Map { return voterMap(t, 5, 0, 3, create(t, "rep:3")) }, 5},
		{"a spare may vote", func(t *testing.T) *Map { return voterMap(t, 4, 1, 3, create(t, "rep:3")) }, 5},
		{"failed nodes cannot vote", func(t *testing.T) *Map {
			return voterMap(t, 6, 0, 3, create(t, "rep:3"), MarkFailed{ID: testNode(4).ID}, MarkFailed{ID: testNode(5).ID})
		}, 3},
		{"seven, two failed: five", func(t *testing.T) *Map {
			return voterMap(t, 7, 0, 3, create(t, "stripe:4+2"), MarkFailed{ID: testNode(0).ID}, MarkFailed{ID: testNode(1).ID})
		}, 5},
		{"a spare that replaced a failed node", func(t *testing.T) *Map {
			return voterMap(t, 5, 1, 3, create(t, "rep:3"), MarkFailed{ID: testNode(1).ID})
		}, 5},
		{"a draining node cannot vote", func(t *testing.T) *Map {
			return voterMap(t, 5, 1, 3, create(t, "rep:3"), Promote{ID: testNode(5).ID}, Drain{ID: testNode(2).ID})
		}, 5},
		{"two draining of six", func(t *testing.T) *Map {
			return voterMap(t, 4, 2, 3, create(t, "rep:3"), Promote{ID: testNode(4).ID}, Promote{ID: testNode(5).ID},
				Drain{ID: testNode(0).ID}, Drain{ID: testNode(1).ID})
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := VoterTarget(tc.m(t)); got != tc.want {
				t.Fatalf("VoterTarget = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestVoterPromotions: the non-voters that can vote, in join order, as
// many as the target wants beyond the voters flagged (failed ones
// included: their votes pass to heirs, not to promotions), up to the
// first not heard from.
func TestVoterPromotions(t *testing.T) {
	all := func(NodeID) bool { return true }
	except := func(ids ...int) func(NodeID) bool {
		return func(id NodeID) bool {
			return !slices.ContainsFunc(ids, func(i int) bool { return testNode(i).ID == id })
		}
	}
	for _, tc := range []struct {
		name string
		m    func(t *testing.T) *Map
		live func(NodeID) bool
		want []int
	}{
		{"none only", func(t *testing.T) *Map { return voterMap(t, 7, 0, 3) }, all, nil},
		{"rep:3: two more", func(t *testing.T) *Map { return voterMap(t, 7, 0, 3, create(t, "rep:3")) }, all, []int{3, 4}},
		{"split:4+3: four more", func(t *testing.T) *Map { return voterMap(t, 7, 0, 3, create(t, "split:4+3")) }, all, []int{3, 4, 5, 6}},
		// A better candidate not heard from yet is waited for, not passed
		// over: the group grows the same way whatever the timing.
		{"best candidate not heard from: wait", func(t *testing.T) *Map {
			return voterMap(t, 7, 0, 3, create(t, "rep:3"))
		}, except(3), nil},
		{"second candidate not heard from", func(t *testing.T) *Map {
			return voterMap(t, 7, 0, 3, create(t, "rep:3"))
		}, except(4), []int{3}},
		{"a small cluster: every node", func(t *testing.T) *Map {
			return voterMap(t, 5, 0, 1, create(t, "split:2+2"))
		}, all, []int{1, 2, 3, 4}},
		{"four nodes: three voters", func(t *testing.T) *Map {
			return voterMap(t, 4, 0, 1, create(t, "split:2+2"))
		}, all, []int{1, 2}},
		{"failed non-voter: no candidate", func(t *testing.T) *Map {
			return voterMap(t, 6, 0, 3, create(t, "rep:3"), MarkFailed{ID: testNode(3).ID})
		}, all, []int{4, 5}},
		{"spares are candidates", func(t *testing.T) *Map { return voterMap(t, 4, 2, 3, create(t, "rep:3")) }, all, []int{3, 4}},
		{"a failed voter still counts", func(t *testing.T) *Map {
			return voterMap(t, 7, 0, 5, create(t, "rep:3"), MarkFailed{ID: testNode(0).ID})
		}, all, nil},
		{"draining: no candidate", func(t *testing.T) *Map {
			return voterMap(t, 5, 2, 3, create(t, "rep:3"), Promote{ID: testNode(5).ID}, Drain{ID: testNode(3).ID})
		}, all, []int{4, 5}},
		{"target met", func(t *testing.T) *Map { return voterMap(t, 7, 0, 5, create(t, "rep:3")) }, all, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := VoterPromotions(tc.m(t), tc.live)
			var ids []NodeID
			for _, i := range tc.want {
				ids = append(ids, testNode(i).ID)
			}
			if !slices.Equal(nodeIDs(got), ids) {
				t.Fatalf("VoterPromotions = %v, want %v", nodeIDs(got), ids)
			}
		})
	}
}

// TestVoterHeir: a failed or drained voter's vote goes to the first
// non-voter that can vote and was heard from (a silent one is passed
// over), never to itself; none when no node can take it.
func TestVoterHeir(t *testing.T) {
	m := voterMap(t, 6, 1, 3, MarkFailed{ID: testNode(0).ID}) // the spare, node 6, took node 0's places
	live := func(id NodeID) bool { return id != testNode(3).ID }
	if h, ok := VoterHeir(m, testNode(0).ID, live); !ok || h.ID != testNode(4).ID {
		t.Fatalf("heir of failed voter 0 = %v %v, want node 4 (node 3 silent)", h.ID, ok)
	}
	full := voterMap(t, 5, 0, 5, MarkFailed{ID: testNode(1).ID})
	if h, ok := VoterHeir(full, testNode(1).ID, func(NodeID) bool { return true }); ok {
		t.Fatalf("every live node votes, yet heir %v", h.ID)
	}
	if h, ok := VoterHeir(voterMap(t, 4, 0, 3), testNode(3).ID, func(NodeID) bool { return true }); ok {
		t.Fatalf("the only non-voter is the one leaving, yet heir %v", h.ID)
	}
}

func nodeIDs(ns []Node) []NodeID {
	var out []NodeID
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// TestVotesSpreadOverZones: with nodes joined zone by zone, the votes
// the leader adds go first to the zones with the fewest voters, so that
// five voters over three zones sit two, two and one, and no zone's loss
// takes a quorum (decision 0021's rule, applied to votes).
func TestVotesSpreadOverZones(t *testing.T) {
	m := NewMap(6, 3)
	for i := range 6 {
		node := testNode(i)
		node.Zone = []string{"z1", "z1", "z2", "z2", "z3", "z3"}[i]
		node.Voter = i < 3 // AddMember's first three: z1, z1, z2
		m = mustApply(t, m, AddNode{Node: node})
	}
	m = mustApply(t, m, create(t, "rep:3"))
	got := VoterPromotions(m, func(NodeID) bool { return true })
	if ids := nodeIDs(got); len(ids) != 2 || ids[0] != testNode(4).ID || ids[1] != testNode(5).ID {
		t.Fatalf("promotions %v, want the two nodes of z3 (%s, %s): z1 and z2 vote already", ids, testNode(4).ID, testNode(5).ID)
	}
	perZone := map[string]int{}
	for _, n := range append(slices.Clone(m.Nodes[:3]), got...) {
		perZone[n.Zone]++
	}
	for z, v := range perZone {
		if v > 2 {
			t.Fatalf("zone %s holds %d of five votes: losing it loses the quorum (%v)", z, v, perZone)
		}
	}
}
