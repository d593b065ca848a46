package tests

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyOn returns a key whose coordinator is node i, with the given prefix.
func (c *testCluster) keyOn(t *testing.T, rdb *redis.ClusterClient, i int, prefix string) string {
	t.Helper()
	ctx := ctxT(t)
	for j := 0; j < 10000; j++ {
		k := fmt.Sprintf("%s%d", prefix, j)
		cl, err := rdb.MasterForKey(ctx, k)
		must(t, err)
		if cl.Options().Addr == c.nodes[i].addr() {
			return k
		}
	}
	t.Fatalf("no key found on node %d", i)
	return ""
}

// nonVoters lists the indexes of the nodes that are not Raft voters.
func (c *testCluster) nonVoters() []int {
	c.t.Helper()
	st, err := c.status(0)
	must(c.t, err)
	var out []int
	for i, nd := range c.nodes {
		for _, n := range st.Nodes {
			if n.ClientAddr == nd.addr() && !n.Voter {
				out = append(out, i)
			}
		}
	}
	return out
}

// waitNodeState waits until node from's map gives node who the state, and
// returns how long that took.
func (c *testCluster) waitNodeState(from, who int, state string, timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	for {
		st, err := c.status(from)
		if err == nil {
			for _, n := range st.Nodes {
				if n.State == state && n.ClientAddr == c.nodes[who].addr() {
					return time.Since(start)
				}
			}
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("node %d not %s in node %d's map after %s: %+v, %v", who, state, from, timeout, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFailureDetectionAndFencing kills one node and pauses another past the
// failure timeout. The control plane marks each failed; the shards they
// coordinated are refused with TRYAGAIN (recovering), never answered with a
// missing or stale value; every other key keeps working; and the paused
// node, resumed, serves nothing.
func TestFailureDetectionAndFencing(t *testing.T) {
	c := startCluster(t, 5, clusterOptions{extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"}})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	must(t, rdb.Do(ctx, "SCHEME.DEFAULT", "rep:3").Err())
	c.waitDefault("rep:3")

	nonVoters := c.nonVoters()
	if len(nonVoters) < 2 {
		t.Fatalf("want two non-voters of five nodes, have %v", nonVoters)
	}
	killed, paused := nonVoters[0], nonVoters[1]
	watcher := 0 // a voter, which neither fault touches
	for slices.Contains(nonVoters, watcher) {
		watcher++
	}
	onKilled := c.keyOn(t, rdb, killed, "dead:")
	onPaused := c.keyOn(t, rdb, paused, "paused:")
	elsewhere := c.keyOn(t, rdb, watcher, "alive:")
	for _, k := range []string{onKilled, onPaused, elsewhere} {
		must(t, rdb.Set(ctx, k, "v:"+k, 0).Err())
	}

	must(t, c.nodes[killed].cmd.Process.Kill())
	took := c.waitNodeState(watcher, killed, "failed", 15*time.Second)
	t.Logf("kill -9 detected and the node marked failed in %s (timeout 1s)", took)
	viaWatcher := c.plainClient(watcher, 2)
	err := viaWatcher.Get(ctx, onKilled).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		t.Fatalf("GET of a key of the failed node's shard = %v; want TRYAGAIN (recovering), never a value or nil", err)
	}
	if v, err := viaWatcher.Get(ctx, elsewhere).Result(); err != nil || v != "v:"+elsewhere {
		t.Fatalf("GET of a key on a live node = %q, %v", v, err)
	}

	must(t, c.nodes[paused].cmd.Process.Signal(syscall.SIGSTOP))
	took = c.waitNodeState(watcher, paused, "failed", 15*time.Second)
	t.Logf("SIGSTOP detected and the node marked failed in %s", took)
	must(t, c.nodes[paused].cmd.Process.Signal(syscall.SIGCONT))
	direct := c.plainClient(paused, 2)
	for i := 0; i < 20; i++ {
		v, err := direct.Get(ctx, onPaused).Result()
		if err == nil || errors.Is(err, redis.Nil) {
			t.Fatalf("the resumed, fenced node answered GET with %q, %v", v, err)
		}
		if err := direct.Set(ctx, onPaused, "stale write", 0).Err(); err == nil {
			t.Fatal("the resumed, fenced node accepted a write")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v, err := viaWatcher.Get(ctx, elsewhere).Result(); err != nil || v != "v:"+elsewhere {
		t.Fatalf("GET of a key on a live node after the pause = %q, %v", v, err)
	}
	if out, err := viaWatcher.Do(ctx, "CLUSTER", "NODES").Text(); err != nil || strings.Count(out, ",fail") != 2 {
		t.Fatalf("CLUSTER NODES does not flag both failed nodes: %v\n%s", err, out)
	}
}
