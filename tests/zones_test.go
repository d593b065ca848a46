package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestZoneLossRealProcesses is issue 43 §3 on real processes (decision
// 0021): 9 nodes in 3 zones, joined zone by zone (the layout in which the
// ring's rotation alone put rep:3's copies of some shards in one zone),
// keys of rep:3, stripe:4+2, hybrid:4+2 and split:4+2; every node of one
// zone is killed at once. No acknowledged key is lost or wrong, and the
// cluster serves all of them. The zone killed holds no Raft voter (the
// first three nodes vote): zone-aware voters are not this test's subject.
func TestZoneLossRealProcesses(t *testing.T) {
	zone := func(i int) string { return fmt.Sprintf("zone-%d", i/3+1) }
	c := startCluster(t, 9, clusterOptions{
		extra:   []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"},
		perNode: func(i int) []string { return []string{"--zone", zone(i)} },
	})
	ctx := ctxT(t)
	st, err := c.status(0)
	must(t, err)
	for _, n := range st.Nodes {
		if i := c.byAddr(n.ClientAddr); n.Zone != zone(i) {
			t.Fatalf("status --json: node %d in zone %q, want %s", i, n.Zone, zone(i))
		}
	}
	rdb := c.plainClient(0, 3)
	hello, err := rdb.Do(ctx, "HELLO", "3").Result()
	must(t, err)
	if m, ok := hello.(map[any]any); !ok || m["availability_zone"] != "zone-1" {
		t.Fatalf("HELLO = %v, want availability_zone zone-1", hello)
	}
	specs := []string{"rep:3", "stripe:4+2", "hybrid:4+2", "split:4+2"}
	values := map[string]string{}
	for _, spec := range specs {
		alias := "z" + strings.NewReplacer(":", "", "+", "").Replace(spec)
		must(t, rdb.Do(ctx, "SCHEME.CREATE", alias, spec).Err())
		info, err := rdb.Do(ctx, "SCHEME.INFO", alias).Result()
		must(t, err)
		if m, _ := info.(map[any]any); m["survives_domain_loss"] != int64(1) {
			t.Fatalf("SCHEME.INFO %s = %v, want survives_domain_loss 1", spec, info)
		}
		for i := range 50 {
			k := fmt.Sprintf("%s:%d", spec, i)
			v := strings.Repeat(fmt.Sprintf("%s-%d.", spec, i), 1+i%40)
			must(t, rdb.Do(ctx, "SET", k, v, "SCHEME", alias).Err())
			values[k] = v
		}
	}
	for _, i := range []int{3, 4, 5} { // zone-2, at once
		must(t, c.nodes[i].cmd.Process.Kill())
	}
	for _, i := range []int{3, 4, 5} {
		c.waitFailed(0, i, 20*time.Second)
	}
	c.waitRebuilt(0, 40*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for k, v := range values {
		for {
			got, err := rdb.Get(ctx, k).Result()
			if err == nil && got == v {
				break
			}
			if err == nil || strings.HasPrefix(err.Error(), "LOST") || err.Error() == "redis: nil" || time.Now().After(deadline) {
				t.Fatalf("after zone-2's loss: GET %s = %.40q, %v; want its value", k, got, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("zone-2 (3 of 9 nodes) killed at once: all %d keys read back", len(values))
}
