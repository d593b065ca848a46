package cluster

import (
	"reflect"
	"slices"
	"testing"
)

func TestMarkFailedHandsShardsToTheNextNode(t *testing.T) {
	m := formed(t, 4, 0)
	victim := m.Nodes[1].ID
	var owned []int
	for i, sh := range m.Shards {
		if c, _ := m.Coordinator(sh.First); c.ID == victim {
			owned = append(owned, i)
		}
	}
	if len(owned) == 0 {
		t.Fatal("the victim coordinates no shard")
	}
	next := mustApply(t, m, MarkFailed{ID: victim})
	checkValid(t, next)
	if next.Epoch != m.Epoch+1 {
		t.Fatalf("epoch %d → %d", m.Epoch, next.Epoch)
	}
	if n, _ := next.Node(victim); n.State != Failed {
		t.Fatalf("victim state %v", n.State)
	}
	for i, sh := range next.Shards {
		c, ok := next.Coordinator(sh.First)
		if !ok || c.ID == victim {
			t.Fatalf("shard %d still coordinated by the failed node", i)
		}
		isOwned := slices.Contains(owned, i)
		if sh.Recovering != isOwned {
			t.Fatalf("shard %d recovering=%v, owned by the victim=%v", i, sh.Recovering, isOwned)
		}
		if isOwned && c.ID != sh.Placement[1] {
			t.Fatalf("shard %d went to %s, not the placement's next node %s", i, c.ID, sh.Placement[1])
		}
	}
	if next.RecoveringShards() != len(owned) || m.RecoveringShards() != 0 {
		t.Fatalf("RecoveringShards %d, want %d", next.RecoveringShards(), len(owned))
	}
	if again := mustApply(t, next, MarkFailed{ID: victim}); again.Epoch != next.Epoch {
		t.Fatal("marking a failed node again changed the map")
	}

	sh := next.Shards[owned[0]]
	heir := sh.Placement[1]
	if same := mustApply(t, next, ShardRecovered{Shard: sh.ID, By: victim}); same.Epoch != next.Epoch {
		t.Fatal("a recovery reported by a node that is not the coordinator was applied")
	}
	done := mustApply(t, next, ShardRecovered{Shard: sh.ID, By: heir})
	checkValid(t, done)
	if done.Shards[owned[0]].Recovering {
		t.Fatal("ShardRecovered by the coordinator left the shard recovering")
	}
	if _, err := Apply(next, ShardRecovered{Shard: len(next.Shards), By: heir}); err == nil {
		t.Fatal("a recovery of a shard that does not exist was accepted")
	}
	if _, err := Apply(next, MarkFailed{ID: testNode(99).ID}); err == nil {
		t.Fatal("an unknown node was marked failed")
	}
	for _, c := range []Command{MarkFailed{ID: victim}, ShardRecovered{Shard: 2, By: heir, StripesPending: true}, StripesRestored{Shard: 1, By: heir}} {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DecodeCommand(b); err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip of %+v: %+v, %v", c, got, err)
		}
	}
}

func TestSpareTakesTheFailedNodesPlaces(t *testing.T) {
	m := NewMap(3, 3)
	spare := testNode(9)
	m = mustApply(t, m, AddNode{Node: testNode(0)}, AddNode{Node: spare, Spare: true}, AddNode{Node: testNode(1)})
	if m.State != Forming {
		t.Fatal("a spare counted toward the expected nodes")
	}
	m = mustApply(t, m, AddNode{Node: testNode(2)})
	if m.State != OK {
		t.Fatal("three up nodes did not form the cluster")
	}
	if n, _ := m.Node(spare.ID); n.State != Spare {
		t.Fatalf("a node added as a spare is %v", n.State)
	}
	victim := testNode(1).ID
	next := mustApply(t, m, MarkFailed{ID: victim})
	checkValid(t, next)
	if n, _ := next.Node(spare.ID); n.State != Up {
		t.Fatalf("the spare is %v after replacing a failed node", n.State)
	}
	for i, sh := range next.Shards {
		if !slices.Contains(sh.Placement, spare.ID) || slices.Contains(sh.Placement, victim) {
			t.Fatalf("shard %d placement %v: the spare did not take the failed node's place", i, sh.Placement)
		}
		j := slices.Index(m.Shards[i].Placement, victim)
		if next.Shards[i].Placement[j] != spare.ID {
			t.Fatalf("shard %d: the spare is not at the failed node's position %d", i, j)
		}
		if wasCoord := j == 0; sh.Recovering != wasCoord {
			t.Fatalf("shard %d recovering=%v, failed node was its coordinator=%v", i, sh.Recovering, wasCoord)
		}
		if c, _ := next.Coordinator(sh.First); j == 0 && c.ID != spare.ID {
			t.Fatalf("shard %d: coordinator %s, want the spare", i, c.ID)
		}
	}
	for i, sh := range next.Shards {
		j := slices.Index(m.Shards[i].Placement, victim)
		if !slices.Equal(sh.Rebuild, []int{j}) {
			t.Fatalf("shard %d rebuild %v, want the spare's position [%d]", i, sh.Rebuild, j)
		}
	}
	sh0 := next.Shards[0]
	coord, _ := next.Coordinator(sh0.First)
	other := testNode(0).ID
	if other == coord.ID {
		other = testNode(2).ID
	}
	if same := mustApply(t, next, RebuildDone{Shard: 0, By: other, Positions: sh0.Rebuild, Round: sh0.RebuildRound}); same.Epoch != next.Epoch {
		t.Fatal("RebuildDone from a node that is not the coordinator was applied")
	}
	if stale := mustApply(t, next, RebuildDone{Shard: 0, By: coord.ID, Positions: sh0.Rebuild, Round: sh0.RebuildRound - 1}); stale.Epoch != next.Epoch {
		t.Fatal("RebuildDone planned in an earlier round (before a position changed hands) was applied")
	}
	done := mustApply(t, next, RebuildDone{Shard: 0, By: coord.ID, Positions: sh0.Rebuild, Round: sh0.RebuildRound})
	checkValid(t, done)
	if next.RebuildingShards() != len(next.Shards) || done.RebuildingShards() != len(next.Shards)-1 {
		t.Fatalf("RebuildingShards %d then %d", next.RebuildingShards(), done.RebuildingShards())
	}
	if done.Shards[0].Rebuild != nil || done.Shards[1].Rebuild == nil {
		t.Fatalf("RebuildDone cleared %v and %v", done.Shards[0].Rebuild, done.Shards[1].Rebuild)
	}
	// A second failure with no spare left: the next node takes over.
	again := mustApply(t, next, MarkFailed{ID: testNode(2).ID})
	checkValid(t, again)
	if again.countState(Up) != 2 {
		t.Fatalf("%d nodes up after a second failure without spares", again.countState(Up))
	}
	b, err := EncodeCommand(AddNode{Node: spare, Spare: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeCommand(b); err != nil || !got.(AddNode).Spare {
		t.Fatalf("AddNode round trip lost Spare: %+v, %v", got, err)
	}
}

func TestSetVotersRecordsSuffrage(t *testing.T) {
	m := formed(t, 4, 0)
	a, b := m.Nodes[0].ID, m.Nodes[3].ID
	next := mustApply(t, m, SetVoters{Nodes: []VoterFlag{{ID: a, Voter: false}, {ID: b, Voter: true}}})
	checkValid(t, next)
	if na, _ := next.Node(a); na.Voter {
		t.Fatal("the old voter kept its flag")
	}
	if nb, _ := next.Node(b); !nb.Voter {
		t.Fatal("the new voter has no flag")
	}
	if same := mustApply(t, next, SetVoters{Nodes: []VoterFlag{{ID: b, Voter: true}}}); same.Epoch != next.Epoch {
		t.Fatal("an unchanged flag changed the map")
	}
	if _, err := Apply(next, SetVoters{Nodes: []VoterFlag{{ID: testNode(99).ID, Voter: true}}}); err == nil {
		t.Fatal("an unknown node was made a voter")
	}
}

// TestStripesPendingOutlivesTheRecovery: a recovery that deferred stripe
// keys leaves the shard flagged until its coordinator says they are
// restored; nobody else can clear it, nor can a restore reported before
// the recovery ended.
func TestStripesPendingOutlivesTheRecovery(t *testing.T) {
	m := NewMap(3, 3)
	m = mustApply(t, m, AddNode{Node: testNode(0)}, AddNode{Node: testNode(1)}, AddNode{Node: testNode(2)})
	sh := m.Shards[0]
	victim, heir := sh.Placement[0], sh.Placement[1]
	m = mustApply(t, m, MarkFailed{ID: victim})
	if early := mustApply(t, m, StripesRestored{Shard: sh.ID, By: heir}); early.Epoch != m.Epoch {
		t.Fatal("a restore reported during the recovery changed the map")
	}
	m = mustApply(t, m, ShardRecovered{Shard: sh.ID, By: heir, StripesPending: true})
	if !m.Shards[sh.ID].StripesPending || m.Shards[sh.ID].Recovering || m.StripesPendingShards() != 1 {
		t.Fatalf("after a deferring recovery: %+v, %d pending", m.Shards[sh.ID], m.StripesPendingShards())
	}
	if other := mustApply(t, m, StripesRestored{Shard: sh.ID, By: victim}); !other.Shards[sh.ID].StripesPending {
		t.Fatal("a node that is not the coordinator cleared the flag")
	}
	m = mustApply(t, m, StripesRestored{Shard: sh.ID, By: heir})
	if m.Shards[sh.ID].StripesPending || m.StripesPendingShards() != 0 {
		t.Fatal("StripesRestored by the coordinator left the flag")
	}
}
