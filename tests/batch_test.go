package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPipelinedWritesAreBatched drives the batched write path (a pipeline's
// plain SETs written as one group, server/datapath_sets.go): every write of a long
// pipeline is acknowledged and readable from another node, every scheme
// stores the bytes its formula says (so the replicas and shards of the
// whole group were stored) or, for a stripe scheme, every key's chunk
// matches its parity holders (so the group's chunk updates all arrived),
// and commands mixed with the SETs see them in pipeline order.
func TestPipelinedWritesAreBatched(t *testing.T) {
	c := startCluster(t, 3, clusterOptions{})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	plain := c.plainClient(1, 2)
	value := strings.Repeat("v", 8192)
	for _, sch := range []struct {
		name    string
		formula float64
	}{{"none", 1}, {"rep:3", 3}, {"split:2+1", 1.5}, {"stripe:2+1/65536", 0}} {
		must(t, plain.Do(ctx, "SCHEME.DEFAULT", sch.name).Err())
		c.waitDefault(sch.name)
		key := func(i int) string { return fmt.Sprintf("batch:%s:%d", sch.name, i) }
		// Each key twice in one pipeline: the second SET must win.
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < 100; i++ {
				p.Set(ctx, key(i), "first", 0)
				p.Set(ctx, key(i), fmt.Sprintf("%s%03d", value, i), 0)
			}
			return nil
		})
		must(t, err)
		for _, cmd := range cmds {
			if cmd.(*redis.StatusCmd).Val() != "OK" {
				t.Fatalf("%s: %v", sch.name, cmd)
			}
		}
		for i := 0; i < 100; i++ {
			if got, err := plain.Get(ctx, key(i)).Result(); err != nil || got != fmt.Sprintf("%s%03d", value, i) {
				t.Fatalf("%s: GET %s after the pipeline: %d bytes, %v", sch.name, key(i), len(got), err)
			}
		}
		info, err := plain.Do(ctx, "SCHEME.INFO", sch.name).Result()
		must(t, err)
		m := info.([]any)
		fields := map[string]int64{}
		for j := 0; j+1 < len(m); j += 2 {
			if v, ok := m[j+1].(int64); ok {
				fields[m[j].(string)] = v
			}
		}
		stored, logical := float64(fields["stored_bytes"]), float64(fields["logical_bytes"])
		if fields["keys"] != 100 || logical < 100*8192 {
			t.Fatalf("%s: SCHEME.INFO = %v", sch.name, m)
		}
		if sch.formula == 0 {
			for i := 0; i < 100; i++ {
				must(t, plain.Do(ctx, "SCHEME.VERIFY", key(i)).Err())
			}
		} else if ratio := stored / logical; ratio < sch.formula || ratio > sch.formula*1.05 {
			t.Errorf("%s stores %.3f bytes per logical byte after a batched pipeline, formula %.2f", sch.name, ratio, sch.formula)
		}
		checkPipelineOrder(t, rdb, sch.name)
	}
}

// checkPipelineOrder sends SETs mixed with commands on the same keys in one
// pipeline (one hash tag, so one coordinator) and checks every reply.
func checkPipelineOrder(t *testing.T, rdb *redis.ClusterClient, sch string) {
	ctx := ctxT(t)
	k := func(s string) string { return "{order:" + sch + "}" + s }
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k("a"), "1", 0)
		p.Get(ctx, k("a"))
		p.Set(ctx, k("a"), "2", 0)
		p.Append(ctx, k("a"), "x")
		p.Set(ctx, k("b"), "5", 0)
		p.Incr(ctx, k("b"))
		p.Set(ctx, k("c"), "7", 0)
		p.MSet(ctx, k("c"), "8", k("d"), "9")
		p.Get(ctx, k("c"))
		p.Del(ctx, k("d"))
		p.Set(ctx, k("d"), "10", 0)
		p.Get(ctx, k("d"))
		p.Get(ctx, k("a"))
		return nil
	})
	must(t, err)
	want := []string{"OK", "1", "OK", "2", "OK", "6", "OK", "OK", "8", "1", "OK", "10", "2x"}
	for i, cmd := range cmds {
		var got string
		switch c := cmd.(type) {
		case *redis.StatusCmd:
			got = c.Val()
		case *redis.StringCmd:
			got = c.Val()
		case *redis.IntCmd:
			got = fmt.Sprint(c.Val())
		}
		if got != want[i] {
			t.Fatalf("%s: reply %d (%v) = %q, want %q", sch, i, cmd.Args(), got, want[i])
		}
	}
}

// waitDefault waits until every node's map has the default scheme name: a
// map change reaches the other nodes shortly after the node that made it.
func (c *testCluster) waitDefault(name string) {
	c.t.Helper()
	ctx := ctxT(c.t)
	for i := range c.nodes {
		rdb := c.plainClient(i, 2)
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := rdb.Do(ctx, "SCHEME.DEFAULT").Text()
			if err == nil && got == name {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("node %d: default scheme %q, %v; want %q", i, got, err, name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
