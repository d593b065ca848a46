package repair

import (
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

func TestHeldLacks(t *testing.T) {
	h := held{pieces: map[string][]heldPiece{"k": {{node: "a", index: 1, version: 5}}},
		listed: map[cluster.NodeID]bool{"a": true, "b": true}}
	node := func(id string) cluster.Node { return cluster.Node{ID: cluster.NodeID(id)} }
	if h.lacks([]byte("k"), kind.Target{Index: 1, Node: node("a")}, 5) {
		t.Error("a held piece counted as lacking")
	}
	for _, c := range []struct {
		t kind.Target
		v uint64
	}{{kind.Target{Index: 1, Node: node("a")}, 6}, {kind.Target{Index: 2, Node: node("a")}, 5}, {kind.Target{Index: 1, Node: node("b")}, 5}} {
		if !h.lacks([]byte("k"), c.t, c.v) {
			t.Errorf("%+v at version %d: a piece of another version, index or node counted as held", c.t, c.v)
		}
	}
	if h.lacks([]byte("k"), kind.Target{Index: 1, Node: node("c")}, 5) {
		t.Error("a node that was not listed (it kept its position) counted as lacking")
	}
}

// TestRecoveryUnderwayWaitsOnlyForLiveRecoveries: rebuilds wait while a
// failed coordinator's shard is being recovered, but not for a shard with
// no live node left to recover it.
func TestRecoveryUnderwayWaitsOnlyForLiveRecoveries(t *testing.T) {
	m := testMap(t, 3)
	if recoveryUnderway(m) {
		t.Fatal("a healthy map has a recovery under way")
	}
	m = kindtest.Apply(t, m, cluster.MarkFailed{ID: m.Nodes[0].ID})
	if m.RecoveringShards() == 0 || !recoveryUnderway(m) {
		t.Fatalf("after a coordinator failed: %d shards recovering, under way %v", m.RecoveringShards(), recoveryUnderway(m))
	}
	m = kindtest.Apply(t, m, cluster.MarkFailed{ID: m.Nodes[1].ID})
	m = kindtest.Apply(t, m, cluster.MarkFailed{ID: m.Nodes[2].ID})
	if m.RecoveringShards() == 0 || recoveryUnderway(m) {
		t.Fatalf("with every node failed: %d shards recovering, under way %v (nobody can recover them)",
			m.RecoveringShards(), recoveryUnderway(m))
	}
}
