package tests

import (
	"strings"
	"testing"
	"time"
)

// TestFailedNonVoterLeavesRaft kills a non-voter (issue 23, item 8). Once
// the map marks it failed, the leader takes it out of the Raft
// configuration (/status shows it in none), so it stops sending it
// heartbeats and logging each failure: its log does not keep growing with
// failed-heartbeat lines. Restarted on its data directory, the node, which
// no leader contacts any more, finds the leader, is readmitted, and is a
// Raft member again. Before, it stayed a member for good and the leader
// logged a failed heartbeat about four times a second.
func TestFailedNonVoterLeavesRaft(t *testing.T) {
	c := startCluster(t, 5, clusterOptions{extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"}})
	victim := c.nonVoters()[0]
	watcher := c.voterIndexes(0)[0]
	if got := c.raftPlace(watcher, victim); got != "nonvoter" {
		t.Fatalf("the victim's place in Raft: %q, want nonvoter", got)
	}
	must(t, c.nodes[victim].cmd.Process.Kill())
	c.waitFailed(watcher, victim, 15*time.Second)
	leader := c.waitRaftPlace(watcher, victim, "", 15*time.Second)
	before := failedHeartbeats(c.nodes[leader].log.String())
	time.Sleep(4 * time.Second)
	if grew := failedHeartbeats(c.nodes[leader].log.String()) - before; grew > 1 {
		t.Fatalf("the leader logged %d more failed heartbeats in 4 s after removing the node:\n%s", grew, c.nodes[leader].log.String())
	}
	t.Logf("the leader logged %d failed heartbeats to the dead node in all", before)

	c.restart(victim)
	c.waitRaftPlace(watcher, victim, "nonvoter", 30*time.Second)
	direct := c.plainClient(victim, 2)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		info, _ := direct.Info(ctxT(t), "memgest").Result()
		if strings.Contains(info, "node_state:up") && strings.Contains(info, "serving:true") {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the restarted node was not readmitted:\n%s\n%s", info, c.nodes[victim].log.String())
		}
	}
}

// failedHeartbeats counts Raft's lines about failing to reach a member.
func failedHeartbeats(log string) int {
	return strings.Count(log, "failed to heartbeat to") + strings.Count(log, "failed to appendEntries to")
}

// raftPlace is node who's place in the Raft configuration ("voter",
// "nonvoter" or "" for none) as node from's /status reports it.
func (c *testCluster) raftPlace(from, who int) string {
	c.t.Helper()
	st, err := c.status(from)
	must(c.t, err)
	for _, n := range st.Nodes {
		if n.ClientAddr == c.nodes[who].addr() {
			return n.Raft
		}
	}
	c.t.Fatalf("node %d is not in node %d's status", who, from)
	return ""
}

// waitRaftPlace waits until the Raft leader, as node from knows it, gives
// node who the place want in its configuration, and returns the leader.
func (c *testCluster) waitRaftPlace(from, who int, want string, timeout time.Duration) int {
	c.t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		leader := c.leader(from)
		got := c.raftPlace(leader, who)
		if got == want {
			return leader
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("node %d's place in the leader's Raft configuration is still %q after %s, want %q", who, got, timeout, want)
		}
	}
}
