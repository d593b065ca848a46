package tests

import (
	"slices"
	"strings"
	"testing"
)

// TestEdgeSemantics covers behaviours an independent review found wrong:
// each case once misbehaved (acknowledged then lost, random winner, broken
// spelling, work after QUIT, case-sensitive type filter).
func TestEdgeSemantics(t *testing.T) {
	c := startCluster(t, 3, clusterOptions{})
	ctx := ctxT(t)
	rdb := c.plainClient(0, 2)

	// A key beyond the limit is refused, not acknowledged and dropped.
	long := strings.Repeat("k", 70000)
	if err := rdb.Set(ctx, long, "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("SET of a 70000-byte key: %v", err)
	}
	if n := dbsizeCluster(t, ctx, rdb); n != 0 {
		t.Fatalf("refused key stored: DBSIZE %d", n)
	}

	// MSET with a repeated key keeps the last value, as Redis does.
	for round := 0; round < 5; round++ {
		must(t, rdb.MSet(ctx, "dup", "1", "dup", "2", "dup", "3", "dup", "4", "dup", "5").Err())
		if v := rdb.Get(ctx, "dup").Val(); v != "5" {
			t.Fatalf("MSET dup ... dup 5 left %q", v)
		}
	}

	// The space-separated SCHEME spelling works like the dotted one.
	must(t, rdb.Set(ctx, "sp", "v", 0).Err())
	if n, err := rdb.Do(ctx, "SCHEME", "MOVE", "sp", "rep:2").Int(); err != nil || n != 1 {
		t.Fatalf("SCHEME MOVE: %d, %v", n, err)
	}
	if of := rdb.Do(ctx, "SCHEME", "OF", "sp").String(); !strings.Contains(of, "rep:2") {
		t.Fatalf("SCHEME OF: %s", of)
	}
	if err := rdb.Do(ctx, "SCHEME", "LIST").Err(); err != nil {
		t.Fatalf("SCHEME LIST: %v", err)
	}

	// Nothing pipelined after QUIT runs.
	if got := rawExchange(t, c.nodes[0].addr(), "QUIT\r\nSET afterquit 1\r\n"); got != "+OK" {
		t.Fatalf("QUIT = %q", got)
	}
	if n := rdb.Exists(ctx, "afterquit").Val(); n != 0 {
		t.Fatal("a command after QUIT ran")
	}

	// SCAN's TYPE filter ignores case (CLUSTER: "sp" may be another node's).
	if !slices.Contains(scanAll(t, ctx, rdb, "MATCH", "sp", "COUNT", 1000, "TYPE", "STRING", "CLUSTER"), "sp") {
		t.Fatal("SCAN TYPE STRING did not find a string key")
	}
}
