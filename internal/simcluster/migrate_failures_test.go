package simcluster_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
)

// The importer's coordinator dying in the middle of a migration (decision
// 0016): every key of a redundant scheme reads back bit-exact during and
// after, the migration resumes on its successor and ends, and a key
// deleted at the source while the importer failed over stays deleted (the
// successor may have recovered a stale copy of it from the pieces both
// placements share: dropDeleted, and the recovery's reconciliation).
//
// Not safe yet (decision 0016, "Open"), so it runs only with
// MEMGEST_MIGRATION_FAILURES=1, to reproduce: the importer's failure failed
// once in CI (a DEL of a moved rep:3 key answered 0 on the importer's
// successor: the key missing there), after 19 runs passed here; the
// source's coordinator dying (with this seed also the Raft leader) passed
// 44 runs of 45, the other reading a rep:3 key LOST.
func TestMigrationSurvivesFailures(t *testing.T) {
	if os.Getenv("MEMGEST_MIGRATION_FAILURES") == "" {
		t.Skip("failover mid-migration is not safe yet (decision 0016, Open); MEMGEST_MIGRATION_FAILURES=1 runs it")
	}
	for _, victim := range []string{"importer", "source", "leader"} {
		t.Run(victim, func(t *testing.T) { migrationFailure(t, victim) })
	}
}

func migrationFailure(t *testing.T, victim string) {
	c := simcluster.Start(t, 2930, simcluster.Options{Nodes: 6, Spares: 1})
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
	if victim == "leader" && (kill == src || kill == dst) {
		t.Logf("the leader is the %s's coordinator too", map[bool]string{true: "source", false: "importer"}[kill == src])
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

	for _, k := range doomed {
		var r string
		c.Until("DEL "+k, func() (bool, string) { // TRYAGAIN while the shard recovers
			r = simcluster.Render(c.DoQuiet(stayers()[0], "DEL", k))
			return !strings.HasPrefix(r, "-TRYAGAIN"), r
		})
		if r != ":1" {
			t.Fatalf("DEL %s = %s", k, r)
		}
		delete(want, k)
		if r := c.Do(stayers()[0], "GET", k); !r.IsNil() {
			t.Errorf("deleted key %s reads %s right after its DEL", k, simcluster.Render(r))
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
