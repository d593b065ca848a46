package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgest/memgest/keyslot"
	"github.com/redis/go-redis/v9"
)

// Decision 0004: SCAN, DBSIZE and FLUSHALL answer for the node they are
// sent to (the keys of the slots it coordinates), and take a trailing
// CLUSTER option to answer for the whole cluster.

// keyspaceSchemes are the schemes TestKeyspacePerNode mixes (small stripe
// and hybrid chunks, so that most are sealed), and keyspacePerScheme how
// many keys each gets.
var keyspaceSchemes = []string{"none", "rep:3", "split:4+2", "stripe:4+2/256", "hybrid:4+2/256", "stripe:4+2/256@batch"}

const keyspacePerScheme = 60

// dbsizeCluster is DBSIZE CLUSTER through rdb: the whole cluster's keys.
func dbsizeCluster(t *testing.T, ctx context.Context, rdb *redis.Client) int64 {
	t.Helper()
	n, err := rdb.Do(ctx, "DBSIZE", "CLUSTER").Int64()
	must(t, err)
	return n
}

// keyspace is what TestKeyspacePerNode wrote: value by key, and each
// key's master (client address) by CLUSTER SLOTS.
type keyspace struct {
	values map[string]string
	master map[string]string
}

// onMaster counts the keys whose master is addr.
func (ks keyspace) onMaster(addr string) int {
	n := 0
	for _, a := range ks.master {
		if a == addr {
			n++
		}
	}
	return n
}

// writeKeyspace writes keyspacePerScheme keys of every keyspaceSchemes
// scheme through cc, values of one length per scheme, and returns them
// with each key's master.
func writeKeyspace(t *testing.T, ctx context.Context, cc *redis.ClusterClient) keyspace {
	t.Helper()
	ks := keyspace{values: map[string]string{}, master: map[string]string{}}
	_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, sch := range keyspaceSchemes {
			for i := 0; i < keyspacePerScheme; i++ {
				k := fmt.Sprintf("ks:%s:%03d", sch, i)
				v := fmt.Sprintf("%s-%03d-%s", sch, i, strings.Repeat("v", 40))
				ks.values[k] = v
				p.Do(ctx, "SET", k, v, "SCHEME", sch)
			}
		}
		return nil
	})
	must(t, err)
	slots, err := cc.ClusterSlots(ctx).Result()
	must(t, err)
	for k := range ks.values {
		s := keyslot.Of([]byte(k))
		for _, r := range slots {
			if s >= r.Start && s <= r.End {
				ks.master[k] = r.Nodes[0].Addr
			}
		}
		if ks.master[k] == "" {
			t.Fatalf("CLUSTER SLOTS names no master for slot %d", s)
		}
	}
	return ks
}

// scanAll runs a whole SCAN iteration through rdb with the options opts
// (after the cursor) and returns every key it returned, in order, repeats
// included.
func scanAll(t *testing.T, ctx context.Context, rdb *redis.Client, opts ...any) []string {
	t.Helper()
	keys, err := scanKeys(ctx, rdb, opts...)
	must(t, err)
	return keys
}

// scanKeys is scanAll for a goroutine that may not fail the test.
func scanKeys(ctx context.Context, rdb *redis.Client, opts ...any) ([]string, error) {
	var out []string
	cursor := "0"
	for rounds := 0; rounds < 10000; rounds++ {
		res, err := rdb.Do(ctx, append([]any{"SCAN", cursor}, opts...)...).Slice()
		if err != nil {
			return out, err
		}
		cursor = res[0].(string)
		for _, k := range res[1].([]any) {
			out = append(out, k.(string))
		}
		if cursor == "0" {
			return out, nil
		}
	}
	return out, fmt.Errorf("SCAN through %s does not terminate", rdb.Options().Addr)
}

// ksScan are the SCAN options that list TestKeyspacePerNode's keys.
var ksScan = []any{"MATCH", "ks:*", "COUNT", 17}

// checkOnce fails unless got holds every key of want exactly once and
// nothing else.
func checkOnce(t *testing.T, what string, got []string, want map[string]string) {
	t.Helper()
	seen := map[string]int{}
	for _, k := range got {
		seen[k]++
	}
	var wrong []string
	for k, n := range seen {
		if _, ok := want[k]; !ok || n != 1 {
			wrong = append(wrong, fmt.Sprintf("%s×%d", k, n))
		}
	}
	for k := range want {
		if seen[k] == 0 {
			wrong = append(wrong, k+"×0")
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Fatalf("%s: %d keys for %d; wrong counts: %v", what, len(got), len(want), wrong[:min(len(wrong), 12)])
	}
}

// TestKeyspacePerNode checks decision 0004 on six nodes with none, rep:3,
// split:4+2 and stripe:4+2 keys: go-redis's ClusterClient (ForEachMaster
// with SCAN, DBSize) and redis-py's RedisCluster (scan_iter, dbsize) see
// every key once; the CLUSTER forms give a plain client the totals; a
// FLUSHALL sent to one node empties exactly its slots, in every scheme
// with the redundancy on the other nodes, and nothing else.
func TestKeyspacePerNode(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{extra: []string{"--enable-debug-command"}})
	ctx := ctxT(t)
	cc := c.clusterClient()
	ks := writeKeyspace(t, ctx, cc)
	total := int64(len(ks.values))

	t.Run("go-redis", func(t *testing.T) {
		var mu sync.Mutex
		var all []string
		must(t, cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			keys, err := scanKeys(ctx, m, ksScan...)
			if err != nil {
				return err
			}
			addr := m.Options().Addr
			for _, k := range keys {
				if ks.master[k] != addr {
					return fmt.Errorf("SCAN on %s returned %s, a key of %s's slots", addr, k, ks.master[k])
				}
			}
			n, err := m.DBSize(ctx).Result()
			if err == nil && n != int64(ks.onMaster(addr)) {
				err = fmt.Errorf("DBSIZE on %s = %d, want the %d keys of its slots", addr, n, ks.onMaster(addr))
			}
			mu.Lock()
			all = append(all, keys...)
			mu.Unlock()
			return err
		}))
		checkOnce(t, "ForEachMaster SCAN", all, ks.values)
		if n, err := cc.DBSize(ctx).Result(); err != nil || n != total {
			t.Fatalf("ClusterClient.DBSize = %d, %v; want %d", n, err, total)
		}
	})

	t.Run("cluster-wide", func(t *testing.T) {
		rdb := c.plainClient(3, 2)
		checkOnce(t, "SCAN ... CLUSTER", scanAll(t, ctx, rdb, slices.Concat(ksScan, []any{"CLUSTER"})...), ks.values)
		if n := dbsizeCluster(t, ctx, rdb); n != total {
			t.Fatalf("DBSIZE CLUSTER = %d, want %d", n, total)
		}
		// A cursor of one form is refused by the other.
		res, err := rdb.Do(ctx, "SCAN", 0, "COUNT", 1, "CLUSTER").Slice()
		must(t, err)
		cur := res[0].(string)
		if err := rdb.Do(ctx, "SCAN", cur).Err(); err == nil || !strings.Contains(err.Error(), "invalid cursor") {
			t.Fatalf("SCAN %s without CLUSTER: %v", cur, err)
		}
		res, err = rdb.Do(ctx, "SCAN", 0, "COUNT", 1).Slice()
		must(t, err)
		if cur := res[0].(string); cur != "0" {
			if err := rdb.Do(ctx, "SCAN", cur, "CLUSTER").Err(); err == nil || !strings.Contains(err.Error(), "invalid cursor") {
				t.Fatalf("SCAN %s CLUSTER with a node's cursor: %v", cur, err)
			}
		}
		for _, bad := range [][]any{{"FLUSHALL", "CLUSTER", "CLUSTER"}, {"FLUSHALL", "ASYNC", "SYNC"}, {"SCAN", 0, "CLUSTERS"}} {
			if err := rdb.Do(ctx, bad...).Err(); err == nil || err.Error() != "ERR syntax error" {
				t.Fatalf("%v: %v, want ERR syntax error", bad, err)
			}
		}
		// DBSIZE takes no argument in Redis: anything but memgest's CLUSTER
		// is Redis's arity error.
		if err := rdb.Do(ctx, "DBSIZE", "ALL").Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'dbsize' command" {
			t.Fatalf("DBSIZE ALL: %v", err)
		}
		if n := dbsizeCluster(t, ctx, rdb); n != total {
			t.Fatalf("bad input changed the keyspace: DBSIZE CLUSTER = %d", n)
		}
	})

	t.Run("redis-py", func(t *testing.T) {
		got := runPyClient(t, c, "keyspace.py", "read", "ks:*")
		var scanned []string
		must(t, json.Unmarshal(got["scan"], &scanned))
		checkOnce(t, "RedisCluster.scan_iter", scanned, ks.values)
		var def string
		var dbDefault, dbPrimaries int64
		byNode := map[string]int64{}
		must(t, json.Unmarshal(got["default_node"], &def))
		must(t, json.Unmarshal(got["dbsize_default"], &dbDefault))
		must(t, json.Unmarshal(got["dbsize_primaries"], &dbPrimaries))
		must(t, json.Unmarshal(got["dbsize_by_node"], &byNode))
		if dbPrimaries != total {
			t.Fatalf("RedisCluster.dbsize(target_nodes=PRIMARIES) = %d, want %d", dbPrimaries, total)
		}
		if want := int64(ks.onMaster(def)); dbDefault != want {
			t.Fatalf("RedisCluster.dbsize() = %d; its default node %s serves %d keys", dbDefault, def, want)
		}
		for addr, n := range byNode {
			if n != int64(ks.onMaster(addr)) {
				t.Fatalf("RedisCluster.dbsize(target_nodes=%s) = %d, want %d", addr, n, ks.onMaster(addr))
			}
		}
	})

	t.Run("flushall-one-node", func(t *testing.T) {
		checkFlushOneNode(t, ctx, c, cc, ks)
	})

	t.Run("redis-py-flushall", func(t *testing.T) {
		got := runPyClient(t, c, "keyspace.py", "flushall")
		var byNode map[string]bool // FLUSHALL went to every primary
		must(t, json.Unmarshal(got["flushall"], &byNode))
		if len(byNode) != len(c.nodes) || slices.Contains(slices.Collect(maps.Values(byNode)), false) ||
			string(got["dbsize_primaries"]) != "0" {
			t.Fatalf("RedisCluster.flushall() = %s, then dbsize over the primaries %s", got["flushall"], got["dbsize_primaries"])
		}
	})

	t.Run("flushall-cluster", func(t *testing.T) {
		writeKeyspace(t, ctx, cc)
		rdb := c.plainClient(1, 2)
		must(t, rdb.Do(ctx, "FLUSHALL", "ASYNC", "CLUSTER").Err())
		if n := dbsizeCluster(t, ctx, rdb); n != 0 {
			t.Fatalf("DBSIZE CLUSTER after FLUSHALL CLUSTER = %d", n)
		}
	})
}

// checkFlushOneNode sends FLUSHALL to one node and checks that exactly the
// keys of its slots went, with their pieces, and every other key reads
// back as written.
func checkFlushOneNode(t *testing.T, ctx context.Context, c *testCluster, cc *redis.ClusterClient, ks keyspace) {
	const j = 4
	addr := c.nodes[j].addr()
	rdb := c.plainClient(j, 2)
	before := map[string]map[string]any{}
	for _, sch := range keyspaceSchemes {
		before[sch] = schemeInfo(t, rdb, sch)
	}
	if p, _ := before["stripe:4+2/256"]["parity_bytes"].(int64); p == 0 {
		t.Fatal("no stripe chunk is sealed: the test needs parity to update")
	}
	must(t, rdb.FlushAll(ctx).Err())
	kept := map[string]string{}
	for k, v := range ks.values {
		got, err := cc.Get(ctx, k).Result()
		switch {
		case ks.master[k] == addr && err != redis.Nil:
			t.Fatalf("%s of the flushed node's slots: %q, %v", k, got, err)
		case ks.master[k] != addr && (err != nil || got != v):
			t.Fatalf("%s of another node's slots: %q, %v; want %q", k, got, err, v)
		case ks.master[k] != addr:
			kept[k] = v
		}
	}
	if len(kept) == len(ks.values) || len(kept) == 0 {
		t.Fatalf("node %d serves %d of %d keys: the test needs some on each side", j, len(ks.values)-len(kept), len(ks.values))
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE on the flushed node = %d, %v", n, err)
	}
	if n := dbsizeCluster(t, ctx, rdb); n != int64(len(kept)) {
		t.Fatalf("DBSIZE CLUSTER after one node's FLUSHALL = %d, want %d", n, len(kept))
	}
	checkOnce(t, "SCAN ... CLUSTER after one node's FLUSHALL", scanAll(t, ctx, rdb, slices.Concat(ksScan, []any{"CLUSTER"})...), kept)
	for _, sch := range keyspaceSchemes {
		checkSchemeShrank(t, rdb, sch, before[sch], kept)
	}
	waitStripesAgree(t, ctx, c) // the flushed objects left the parity too
	for k := range kept {
		if !strings.HasPrefix(k, "ks:none:") {
			must(t, cc.Do(ctx, "SCHEME.VERIFY", k).Err())
		}
	}
}

// waitStripesAgree waits until DEBUG STRIPES finds no problem on any node:
// a deletion's stripe updates reach the parity holders in the background,
// so right after FLUSHALL they may still be on their way.
func waitStripesAgree(t *testing.T, ctx context.Context, c *testCluster) {
	t.Helper()
	for i := range c.nodes {
		var res []any
		var err error
		for {
			res, err = c.plainClient(i, 2).Do(ctx, "DEBUG", "STRIPES").Slice()
			if err == nil && len(res) == 2 && res[1].(int64) == 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("DEBUG STRIPES on node %d: %v, %v (checked, problems)", i, res, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// checkSchemeShrank checks SCHEME.INFO sch after a FLUSHALL that kept
// kept: keys, and the redundancy pieces (rep, split) or live stripe
// objects, in proportion to the keys left (every key of sch had a value of
// one length).
func checkSchemeShrank(t *testing.T, rdb *redis.Client, sch string, before map[string]any, kept map[string]string) {
	t.Helper()
	left := int64(0)
	for k := range kept {
		if strings.HasPrefix(k, "ks:"+sch+":") {
			left++
		}
	}
	after := schemeInfo(t, rdb, sch)
	if after["keys"] != left {
		t.Fatalf("%s: SCHEME.INFO keys %v after FLUSHALL, want %d", sch, after["keys"], left)
	}
	for _, field := range []string{"pieces", "object_bytes"} {
		was, _ := before[field].(int64)
		now, _ := after[field].(int64)
		if was%keyspacePerScheme != 0 {
			t.Fatalf("%s: %s %d before FLUSHALL for %d keys", sch, field, was, keyspacePerScheme)
		}
		if want := was / keyspacePerScheme * left; now != want {
			t.Fatalf("%s: SCHEME.INFO %s %d after FLUSHALL, want %d (%d before, for %d keys; %d left)",
				sch, field, now, want, was, keyspacePerScheme, left)
		}
	}
}
