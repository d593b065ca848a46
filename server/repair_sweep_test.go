package server

import (
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/repair"
	"github.com/memgest/memgest/store"
)

// TestAuditVerdicts: the coordinator drops exactly the pieces no committed
// version needs where they are, and keeps every piece while in doubt.
func TestAuditVerdicts(t *testing.T) {
	m := testMap(t, 4)
	rep, split := schemeID(t, m, "rep:3"), schemeID(t, m, "split:2+1")
	key := []byte("k")
	sh := m.ShardOf(keyslot.Of(key))
	coord, _ := m.Coordinator(sh.First)
	n := leasedNode(t, m)
	n.NodeID = coord.ID
	n.Primary, n.Pieces, n.Inflight = store.New(), store.New(), core.NewInflight()
	repSpec, _ := m.SchemeByID(rep)
	targets, _ := kindFor(t, repSpec).Targets(m, key)
	replicaHolder := targets[0].Node.ID
	var outsider cluster.NodeID // up, and no replica holder of the key
	for _, node := range m.Nodes {
		if node.ID != coord.ID && !slicesContainsNode(targets, node.ID) {
			outsider = node.ID
		}
	}
	splitSpec, _ := m.SchemeByID(split)
	shards, _ := kindFor(t, splitSpec).Targets(m, key)

	commit := func(scheme uint16, v uint64, flags uint8) {
		if err := n.Primary.Put(key, []byte("v"), store.Meta{Version: v, Scheme: scheme, Flags: flags}); err != nil {
			t.Fatal(err)
		}
	}
	verdict := func(holder cluster.NodeID, it repair.AuditItem) bool {
		it.Key = key
		drop, _ := n.repair.AuditVerdicts(holder, []repair.AuditItem{it})
		return drop[0]
	}
	replica := func(v uint64) repair.AuditItem {
		return repair.AuditItem{Shard: uint16(sh.ID), Scheme: rep, Version: v, Kind: core.PieceKindReplica}
	}
	shard := func(v uint64, i int) repair.AuditItem {
		return repair.AuditItem{Shard: uint16(sh.ID), Scheme: split, Version: v, Kind: core.PieceKindShard, Index: uint8(i)}
	}

	if !verdict(replicaHolder, replica(5)) {
		t.Error("a replica of a key that does not exist is kept")
	}
	type verdictCase struct {
		name   string
		holder cluster.NodeID
		it     repair.AuditItem
		drop   bool
	}
	check := func(cases []verdictCase) {
		for _, c := range cases {
			if got := verdict(c.holder, c.it); got != c.drop {
				t.Errorf("%s: drop %v, want %v", c.name, got, c.drop)
			}
		}
	}
	commit(rep, 5, 0)
	check([]verdictCase{
		{"the committed replica where it belongs", replicaHolder, replica(5), false},
		{"a replica on the coordinator itself", coord.ID, replica(5), true},
		{"a replica on a node that is no holder", outsider, replica(5), true},
		{"a shard of a scheme the key left", shards[0].Node.ID, shard(3, 0), true},
	})
	commit(split, 7, 0)
	check([]verdictCase{
		{"the committed shard at its position", shards[1].Node.ID, shard(7, 1), false},
		{"an older shard", shards[1].Node.ID, shard(6, 1), true},
		{"a shard of a newer write that never committed", shards[1].Node.ID, shard(8, 1), true},
		{"the committed shard at another position's node", shards[0].Node.ID, shard(7, 1), true},
		{"a replica of the scheme the key left", replicaHolder, replica(5), true},
	})

	// Another shard's piece of the key (the other end of a migration) is
	// that shard's coordinator's to judge.
	other := replica(4)
	other.Shard = uint16(sh.ID + 1)
	if verdict(replicaHolder, other) {
		t.Error("a replica of the key named by another shard was judged by this shard's coordinator")
	}

	// In doubt, keep: a write in flight, a stub, a lease gone.
	s := n.Inflight.Shard(key)
	s.Mu.Lock()
	p := s.Begin(key, 9)
	s.Mu.Unlock()
	if verdict(shards[1].Node.ID, shard(6, 1)) {
		t.Error("a piece was dropped while a write of its key was in flight")
	}
	s.Mu.Lock()
	s.End(key, p)
	s.Mu.Unlock()
	commit(split, 7, core.RecordStub)
	if verdict(shards[1].Node.ID, shard(6, 1)) {
		t.Error("a piece was dropped while the key's record is a stub")
	}
	commit(split, 7, 0)
	n.Cfg.FailureTimeout = time.Hour
	if verdict(shards[1].Node.ID, shard(6, 1)) {
		t.Error("a node that started less than two failure timeouts ago gave a verdict")
	}
	n.Cfg.FailureTimeout = 0
	n.Lease.Until.Store(0)
	if verdict(shards[1].Node.ID, shard(6, 1)) {
		t.Error("a coordinator without a lease gave a verdict")
	}
}

func slicesContainsNode(ts []kind.Target, id cluster.NodeID) bool {
	for _, t := range ts {
		if t.Node.ID == id {
			return true
		}
	}
	return false
}
