package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRestartedNodeRejoins kills a node, lets the survivors stand in for it
// and rebuild, then restarts it on the same data directory (same id, empty
// memory). The leader readmits it to its old places; the rebuild fills them;
// every rep:3 and split:2+1 key reads back through it; the none keys it
// coordinated are reported lost, not silently missing; and after a second
// node dies every redundant key still reads back.
func TestRestartedNodeRejoins(t *testing.T) {
	c := startCluster(t, 5, clusterOptions{extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"}})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	victim := c.nonVoters()[0]
	want := map[string]string{}
	var noneOnVictim []string
	// The none keys first: their directory entries go out up to 20 ms
	// after the write (failure-model.md), so let that window pass.
	for i := 0; i < 5; i++ {
		k := c.keyOn(t, rdb, victim, fmt.Sprintf("none%d:", i))
		must(t, rdb.Set(ctx, k, "only copy", 0).Err())
		noneOnVictim = append(noneOnVictim, k)
	}
	time.Sleep(100 * time.Millisecond)
	for i := 0; i < 60; i++ {
		for _, sch := range []string{"rep:3", "split:2+1"} {
			k := fmt.Sprintf("%s:%d", sch, i)
			want[k] = strings.Repeat("v", i*30) + k
			must(t, rdb.Do(ctx, "SET", k, want[k], "SCHEME", sch).Err())
		}
	}
	watcher := c.voterIndexes(0)[0] // never killed

	must(t, c.nodes[victim].cmd.Process.Kill())
	c.waitFailed(watcher, victim, 15*time.Second)
	c.waitRebuilt(watcher, 30*time.Second)

	start := time.Now()
	c.restart(victim)
	direct := c.plainClient(victim, 2)
	for {
		info, _ := direct.Info(ctx, "memgest").Result()
		if strings.Contains(info, "node_state:up") && strings.Contains(info, "serving:true") {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the restarted node was not readmitted:\n%s\n%s", info, c.nodes[victim].log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("restarted node readmitted and serving %s after its start", time.Since(start))
	c.waitRebuilt(watcher, 30*time.Second)
	if out, err := direct.Do(ctx, "CLUSTER", "NODES").Text(); err != nil || strings.Contains(out, "fail") {
		t.Fatalf("CLUSTER NODES after the rejoin still flags a failed node: %v\n%s", err, out)
	}
	waitRecovered(t, direct, want)
	for _, k := range noneOnVictim {
		if err := direct.Get(ctx, k).Err(); err == nil || !strings.HasPrefix(err.Error(), "LOST") {
			t.Fatalf("none key %s of the restarted node = %v; want -LOST", k, err)
		}
	}

	// The rejoined node holds its pieces again: another node can die. Its
	// vote may be the leader's to give back (rep:3 calls for five voters,
	// and the victim's was dropped, no node being left to take it): a
	// voter may die all the same.
	other := slices.IndexFunc(c.nodes, func(nd *node) bool { return nd != c.nodes[victim] && nd != c.nodes[watcher] })
	must(t, c.nodes[other].cmd.Process.Kill())
	c.waitFailed(watcher, other, 15*time.Second)
	waitRecovered(t, c.plainClient(watcher, 2), want)
}

// TestRestartUnderANewLeader kills the Raft leader and another node at
// once, and restarts that node at once on its data directory: it comes
// back empty under a leader that never heard its old incarnation. It must
// not serve its keys from its empty memory; it is failed over like any
// restarted node, and every rep:3 key it coordinated reads back.
func TestRestartUnderANewLeader(t *testing.T) {
	c := startCluster(t, 5, clusterOptions{extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"}})
	leader := c.leader(0)
	victim := c.nonVoters()[0]
	want := c.rep3KeysOn(t, victim, 20)
	var watcher int // a voter that survives
	for _, v := range c.voterIndexes(victim) {
		if v != leader {
			watcher = v
		}
	}
	must(t, c.nodes[leader].cmd.Process.Kill())
	must(t, c.nodes[victim].cmd.Process.Kill())
	c.restart(victim)
	time.Sleep(3 * time.Second) // a new leader, and the victim back under it
	waitRecovered(t, c.plainClient(watcher, 2), want)
	waitRecovered(t, c.plainClient(victim, 2), want)
}

// TestRestartedLeaderIsFailedOver kills the Raft leader and restarts it at
// once on its data directory. Whether or not it is elected again, it must
// not serve its keys from its empty memory: a restarted leader hands the
// leadership off and is failed over like any restarted node.
func TestRestartedLeaderIsFailedOver(t *testing.T) {
	c := startCluster(t, 5, clusterOptions{extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"}})
	leader := c.leader(0)
	want := c.rep3KeysOn(t, leader, 20)
	must(t, c.nodes[leader].cmd.Process.Kill())
	c.restart(leader)
	time.Sleep(3 * time.Second)
	for i := range c.nodes {
		waitRecovered(t, c.plainClient(i, 2), want)
	}
}

// rep3KeysOn writes n rep:3 keys that node i coordinates and returns them
// with their values.
func (c *testCluster) rep3KeysOn(t *testing.T, i, n int) map[string]string {
	t.Helper()
	ctx := ctxT(t)
	rdb := c.clusterClient()
	want := map[string]string{}
	for j := 0; j < n; j++ {
		k := c.keyOn(t, rdb, i, fmt.Sprintf("r%d:", j))
		want[k] = "value of " + k
		must(t, rdb.Do(ctx, "SET", k, want[k], "SCHEME", "rep:3").Err())
	}
	return want
}
