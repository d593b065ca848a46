package tests

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestServerAndClusterCommands covers the connection, server and cluster
// commands a client or operator uses, on one 6-node cluster.
func TestServerAndClusterCommands(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	rdb := c.plainClient(4, 2)
	if v := rdb.Ping(ctx).Val(); v != "PONG" {
		t.Fatalf("PING = %q", v)
	}
	if v := rdb.Echo(ctx, "hi").Val(); v != "hi" {
		t.Fatalf("ECHO = %q", v)
	}
	hello, err := c.plainClient(1, 3).Do(ctx, "HELLO", "3").Result()
	must(t, err)
	if m, ok := hello.(map[any]any); !ok || m["proto"] != int64(3) || m["mode"] != "cluster" {
		t.Fatalf("HELLO 3 = %#v", hello)
	}
	must(t, rdb.Do(ctx, "SELECT", "0").Err())
	// CLIENT
	conn := rdb.Conn()
	defer conn.Close()
	must(t, conn.ClientSetName(ctx, "tester").Err())
	if v := conn.ClientGetName(ctx).Val(); v != "tester" {
		t.Fatalf("CLIENT GETNAME = %q", v)
	}
	id := conn.ClientID(ctx).Val()
	if info := conn.ClientInfo(ctx).Val(); info == nil || info.ID != id || info.Name != "tester" {
		t.Fatalf("CLIENT INFO = %+v (id %d)", info, id)
	}
	if list := rdb.ClientList(ctx).Val(); !strings.Contains(list, "name=tester") {
		t.Fatalf("CLIENT LIST lacks our connection: %q", list)
	}
	// COMMAND, CONFIG, INFO
	if n := rdb.Do(ctx, "COMMAND", "COUNT").Val(); n.(int64) < 40 {
		t.Fatalf("COMMAND COUNT = %v", n)
	}
	info := rdb.Command(ctx).Val()
	if get := info["get"]; get == nil || get.Arity != 2 || get.FirstKeyPos != 1 {
		t.Fatalf("COMMAND get = %+v", get)
	}
	if cfg := rdb.ConfigGet(ctx, "maxmemory*").Val(); cfg["maxmemory-policy"] != "noeviction" {
		t.Fatalf("CONFIG GET maxmemory* = %v", cfg)
	}
	all := rdb.Info(ctx, "everything").Val()
	for _, want := range []string{"# Server", "process_id:", "tcp_port:" + strconv.Itoa(c.nodes[4].port), "run_id:",
		"# Clients", "connected_clients:", "# Memory", "used_memory:", "# Stats", "total_commands_processed:",
		"# Keyspace", "# Memgest", "map_epoch:", "scheme_none:"} {
		if !strings.Contains(all, want) {
			t.Errorf("INFO everything lacks %q", want)
		}
	}
	// CLUSTER
	if slot := rdb.ClusterKeySlot(ctx, "{user1000}.following").Val(); slot != rdb.ClusterKeySlot(ctx, "{user1000}.followers").Val() || slot != 3443 {
		t.Fatalf("CLUSTER KEYSLOT hash tags: %d", slot)
	}
	nodes := rdb.ClusterNodes(ctx).Val()
	if lines := strings.Split(strings.TrimSpace(nodes), "\n"); len(lines) != 6 || !strings.Contains(nodes, "myself,master") {
		t.Fatalf("CLUSTER NODES:\n%s", nodes)
	}
	if ci := rdb.ClusterInfo(ctx).Val(); !strings.Contains(ci, "cluster_state:ok") || !strings.Contains(ci, "cluster_known_nodes:6") {
		t.Fatalf("CLUSTER INFO:\n%s", ci)
	}
	if shards := rdb.ClusterShards(ctx).Val(); len(shards) != 6 || len(shards[0].Nodes) != 1 {
		t.Fatalf("CLUSTER SHARDS = %+v", shards)
	}
	if myid := rdb.Do(ctx, "CLUSTER", "MYID").Val(); !strings.Contains(nodes, fmt.Sprint(myid)+" ") {
		t.Fatalf("CLUSTER MYID %v not in CLUSTER NODES", myid)
	}
	// QUIT closes the connection after +OK.
	if got := rawExchange(t, c.nodes[0].addr(), "QUIT\r\n"); got != "+OK" {
		t.Fatalf("QUIT = %q", got)
	}
}

// TestScanAndFlushWholeCluster checks that SCAN ... CLUSTER from one node
// visits every key in the cluster exactly as Redis promises, with MATCH and
// COUNT, and that FLUSHALL CLUSTER empties every node (decision 0004; the
// per-node forms are TestKeyspacePerNode's).
func TestScanAndFlushWholeCluster(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	rdb := c.plainClient(2, 2)
	want := map[string]bool{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("scan:%03d", i)
		must(t, rdb.Do(ctx, "SET", k, "v", "SCHEME", schemes[i%3]).Err())
		want[k] = true
	}
	must(t, rdb.Set(ctx, "other", "v", 0).Err())
	seen := map[string]bool{}
	var cursor uint64
	for rounds := 0; ; rounds++ {
		res, err := rdb.Do(ctx, "SCAN", cursor, "MATCH", "scan:*", "COUNT", 25, "CLUSTER").Slice()
		must(t, err)
		next, err := strconv.ParseUint(res[0].(string), 10, 64)
		must(t, err)
		var keys []string
		for _, k := range res[1].([]any) {
			keys = append(keys, k.(string))
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
		if rounds > 10000 {
			t.Fatal("SCAN does not terminate")
		}
	}
	if len(seen) != len(want) || seen["other"] {
		missing := []string{}
		for k := range want {
			if !seen[k] {
				missing = append(missing, k)
			}
		}
		sort.Strings(missing)
		t.Fatalf("SCAN saw %d keys, want %d; missing %v", len(seen), len(want), missing)
	}
	if n := dbsizeCluster(t, ctx, rdb); n != 301 {
		t.Fatalf("DBSIZE CLUSTER = %d", n)
	}
	must(t, rdb.Do(ctx, "FLUSHALL", "CLUSTER").Err())
	for i := range c.nodes {
		if n, err := c.plainClient(i, 2).DBSize(ctx).Result(); err != nil || n != 0 {
			t.Fatalf("node %d: DBSIZE after FLUSHALL CLUSTER = %d, %v", i, n, err)
		}
	}
	if err := rdb.Get(ctx, "scan:001").Err(); err != redis.Nil {
		t.Fatalf("GET after FLUSHALL: %v", err)
	}
}

// TestExpireAtAndSchemeOverhead checks absolute expiry commands and that
// each scheme stores the bytes its formula says (DESIGN.md §8 invariant 5):
// rep:3 three copies, split:4+2 1.5×, within 5% for 8 KiB values.
func TestExpireAtAndSchemeOverhead(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	rdb := c.plainClient(0, 3)
	must(t, rdb.Set(ctx, "ea", "v", 0).Err())
	must(t, rdb.ExpireAt(ctx, "ea", time.Now().Add(time.Hour)).Err())
	if ttl := rdb.TTL(ctx, "ea").Val(); ttl < 59*time.Minute {
		t.Fatalf("TTL after EXPIREAT = %v", ttl)
	}
	must(t, rdb.PExpireAt(ctx, "ea", time.Now().Add(-time.Second)).Err())
	if n := rdb.Exists(ctx, "ea").Val(); n != 0 {
		t.Fatal("PEXPIREAT in the past kept the key")
	}
	value := strings.Repeat("x", 8192)
	for _, sch := range []struct {
		name    string
		formula float64
	}{{"none", 1}, {"rep:3", 3}, {"split:4+2", 1.5}} {
		for i := 0; i < 40; i++ {
			must(t, rdb.Do(ctx, "SET", fmt.Sprintf("ov:%s:%d", sch.name, i), value, "SCHEME", sch.name).Err())
		}
		info, err := rdb.Do(ctx, "SCHEME.INFO", sch.name).Result()
		must(t, err)
		m := info.(map[any]any)
		stored, logical := float64(m["stored_bytes"].(int64)), float64(m["logical_bytes"].(int64))
		if m["keys"].(int64) != 40 || logical < 40*8192 {
			t.Fatalf("%s: SCHEME.INFO = %v", sch.name, m)
		}
		if ratio := stored / logical; ratio < sch.formula || ratio > sch.formula*1.05 {
			t.Errorf("%s stores %.3f bytes per logical byte, formula %.2f", sch.name, ratio, sch.formula)
		}
	}
}
