package simcluster_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

var migrationFailureSeeds = flag.Int("migrationfail.seeds", 1,
	"run TestMigrationSurvivesFailures with this many seeds (from 2930): each places the migration and the victims anew")

// A coordinator dying in the middle of a migration (decision 0016): the
// importer's, the source's, or the Raft leader's (which plans the
// migrations; with the first seed it is also the source's coordinator).
// Every key of a redundant scheme reads back bit-exact during and after,
// the migration resumes on the successor and ends, and a key deleted
// while the victim was down stays deleted (the importer may hold a stale
// copy of it: dropDeleted, and the recovery's reconciliation).
//
// Before pieces were named by their shard this failed about one run in 20
// to 45 (decision 0016): `go test ./internal/simcluster -run
// TestMigrationSurvivesFailures -migrationfail.seeds=60` runs many.
func TestMigrationSurvivesFailures(t *testing.T) {
	for seed := uint64(2930); seed < 2930+uint64(*migrationFailureSeeds); seed++ {
		for _, victim := range []string{"importer", "source", "leader"} {
			t.Run(fmt.Sprintf("%s/seed=%d", victim, seed), func(t *testing.T) { migrationFailure(t, seed, victim) })
		}
	}
}

func migrationFailure(t *testing.T, seed uint64, victim string) {
	c := simcluster.Start(t, seed, simcluster.Options{Nodes: 6, Spares: 1})
	spare := c.Len() - 1
	schemes := []string{"rep:3", "split:4+2", "stripe:4+2"}
	want := map[string]string{}
	for i := range 240 {
		k := fmt.Sprintf("fail:%d", i)
		v := fmt.Sprintf("%d:%s", i, strings.Repeat("v", 1500+i))
		expect(t, "SET "+k, c.Do(i%6, "SET", k, v, "SCHEME", schemes[i%len(schemes)]), "+OK")
		want[k] = v
	}
	// One slow migration at a time (64 KiB/s), so the failure lands in one.
	expect(t, "NODE.PROMOTE", c.Do(0, "NODE.PROMOTE", string(c.Node(spare).NodeID)), "+OK")
	expect(t, "REBALANCE", c.Do(0, "REBALANCE", "RATE", fmt.Sprint(cluster.MinMigrateRate), "PARALLEL", "1"), "+OK")
	var imp cluster.Shard
	var src, dst int
	c.Until("a migration under way with keys moved", func() (bool, string) {
		m := c.Node(0).Map()
		for _, sh := range m.Shards {
			if !sh.Importing {
				continue
			}
			s, _ := m.CoordinatorOf(&m.Shards[sh.From])
			d, _ := m.CoordinatorOf(&sh)
			imp, src, dst = sh, c.Index(s.ID), c.Index(d.ID)
			return c.Node(src).Migration.KeysDone.Load() > 0, "keys moved"
		}
		return false, "no migration"
	})
	kill := map[string]int{"source": src, "importer": dst, "leader": c.Leader()}[victim]
	if victim == "leader" {
		kill = leaderApart(t, c, src, dst)
	}
	var alive []int // fixed before the kill: the readers must not race it
	for _, i := range c.LiveNodes() {
		if i != kill {
			alive = append(alive, i)
		}
	}
	stayers := func() []int { return alive }
	// Keys of the migrating range to delete once the node is down: the
	// source may still hold them, and the importer's new coordinator must
	// not bring them back. The readers leave them alone.
	var doomed []string
	read := map[string]string{}
	for k, v := range want {
		if s := keyslot.Of([]byte(k)); s >= imp.First && s <= imp.Last && len(doomed) < 6 {
			doomed = append(doomed, k)
		} else {
			read[k] = v
		}
	}
	stop, check := readWhile(t, c, read, stayers, true)
	c.Kill(kill)
	c.FailOver(kill)

	// TRYAGAIN while the importing shard recovers, or while the importer
	// has not confirmed a deletion at the source yet; anything else is an
	// answer.
	retried := func(what string, args ...string) string {
		var r string
		c.Until(what, func() (bool, string) {
			r = simcluster.Render(c.DoQuiet(stayers()[0], args...))
			return !strings.HasPrefix(r, "-TRYAGAIN"), r
		})
		return r
	}
	for _, k := range doomed {
		if r := retried("DEL "+k, "DEL", k); r != ":1" {
			t.Fatalf("DEL %s = %s", k, r)
		}
		delete(want, k)
		if r := retried("GET "+k, "GET", k); r != simcluster.Render(resp.Nil()) {
			t.Errorf("deleted key %s reads %s right after its DEL", k, r)
		}
	}
	expect(t, "REBALANCE", c.Do(stayers()[0], "REBALANCE", "RATE", fmt.Sprint(64<<20)), "+OK")
	c.Until("the rebalance done", func() (bool, string) {
		m := c.Node(stayers()[0]).Map()
		return m.Rebalance == nil && !m.Migrating() && m.RecoveringShards() == 0 && m.RebuildingShards() == 0,
			fmt.Sprintf("epoch %d, importing %d", m.Epoch, len(m.Importing()))
	})
	stop()
	check("while " + victim + " failed")
	readAllOn(t, c, want, "after the migration", stayers())
	for _, k := range doomed {
		if r := c.Do(stayers()[0], "GET", k); !r.IsNil() {
			t.Errorf("deleted key %s reads %s after the migration", k, simcluster.Render(r))
		}
	}
	if len(doomed) == 0 {
		t.Fatal("no key of the migrating range to delete")
	}
}

// leaderApart makes the Raft leader a voter that coordinates neither end of
// the migration (src, dst), handing leadership over if it must, and
// returns it: killing it then tests the plan's coordinator alone.
func leaderApart(t *testing.T, c *simcluster.Cluster, src, dst int) int {
	t.Helper()
	leader := c.Leader()
	if leader != src && leader != dst {
		return leader
	}
	members, err := c.Node(leader).Ctl.Members()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if to := c.Index(m.ID); m.Voter && to != src && to != dst {
			if err := c.Node(leader).Ctl.TransferLeadership(context.Background(), m.ID); err != nil {
				t.Fatalf("handing Raft leadership to %s: %v", m.ID, err)
			}
			c.Until("the new leader", func() (bool, string) { return c.Leader() == to, fmt.Sprint(c.Leader()) })
			return to
		}
	}
	t.Fatal("no voter apart from the migration's ends")
	return -1
}
