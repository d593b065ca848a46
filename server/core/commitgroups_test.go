package core

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
)

// TestCommitGroupMergesPipelines: a pipeline's batch that joins an open
// group goes out in the same frame per node as the leader's, its writes
// numbered after the leader's, and each member gets back exactly its own
// writes' errors.
func TestCommitGroupMergesPipelines(t *testing.T) {
	nodeA, nodeB, nodeC := cluster.Node{ID: "a"}, cluster.Node{ID: "b"}, cluster.Node{ID: "c"}
	rep := func(key string) kind.Piece {
		return kind.Piece{Key: []byte(key), Scheme: 7, Version: 1, Data: []byte("v-" + key)}
	}
	var lead, follow PieceBatch
	lead.Put([]kind.Target{{Index: 0, Node: nodeA}, {Index: 1, Node: nodeB}}, []kind.Piece{rep("k0"), rep("k0")}, 0)
	lead.Put([]kind.Target{{Index: 0, Node: nodeA}, {Index: 1, Node: nodeB}}, []kind.Piece{rep("k1"), rep("k1")}, 1)
	follow.Put([]kind.Target{{Index: 1, Node: nodeB}, {Index: 2, Node: nodeC}}, []kind.Piece{rep("j0"), rep("j0")}, 0)

	var gs commitGroups
	gs.yield = func() { // the leader waits for the follower to join
		for {
			gs.mu.Lock()
			owners := gs.open.owners
			gs.mu.Unlock()
			if owners == 3 {
				return
			}
			runtime.Gosched()
		}
	}
	sends := 0
	sent := map[cluster.NodeID][]string{}
	var owners map[cluster.NodeID][]int
	send := func(b *PieceBatch, n int) []error {
		sends++
		owners = map[cluster.NodeID][]int{}
		for _, d := range b.dests {
			ps, err := peer.DecodePutPieces(d.request().Whole())
			if err != nil {
				t.Errorf("node %s: %v", d.node.ID, err)
			}
			for _, p := range ps {
				sent[d.node.ID] = append(sent[d.node.ID], string(p.Key))
			}
			owners[d.node.ID] = d.owners
		}
		errs := make([]error, n)
		if n == 3 {
			errs[2] = errors.New("refused j0")
		}
		return errs
	}
	gs.sendFn = send
	leaderErrs := make(chan []error)
	go func() { leaderErrs <- gs.join(context.Background(), nil, 2, lead.into) }()
	for { // the follower joins once the leader has opened the group
		gs.mu.Lock()
		open := gs.open != nil
		gs.mu.Unlock()
		if open {
			break
		}
		runtime.Gosched()
	}
	followErrs := gs.join(context.Background(), nil, 1, follow.into)
	got := <-leaderErrs

	if sends != 1 {
		t.Fatalf("%d sends, want one for the group", sends)
	}
	want := map[cluster.NodeID][]string{"a": {"k0", "k1"}, "b": {"k0", "k1", "j0"}, "c": {"j0"}}
	wantOwners := map[cluster.NodeID][]int{"a": {0, 1}, "b": {0, 1, 2}, "c": {2}}
	for id := range want {
		if !slices.Equal(sent[id], want[id]) || !slices.Equal(owners[id], wantOwners[id]) {
			t.Errorf("node %s got %v for writes %v, want %v for %v", id, sent[id], owners[id], want[id], wantOwners[id])
		}
	}
	if len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Errorf("leader's errors %v, want two nils", got)
	}
	if len(followErrs) != 1 || fmt.Sprint(followErrs[0]) != "refused j0" {
		t.Errorf("follower's errors %v, want its own refusal", followErrs)
	}
}
