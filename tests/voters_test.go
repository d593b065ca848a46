package tests

import (
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestTwoVotersDieAtOnce is issue 43's item 4 with real processes: seven
// nodes found a cluster with --voters 3; once rep:3 and stripe:4+2 keys
// exist (each tolerates two failures) the leader has given two more nodes
// a vote. kill -9 of the leader and another voter at once then leaves a
// quorum: a new leader marks both failed, their votes pass to the two
// non-voters, every key reads back (TRYAGAIN only while its shard
// recovers) and takes a new value, and /status and `memgest status` say
// the control plane has its quorum and five voters. Three more voters
// killed at once leave two of five: no leader, and /status, `memgest
// status` and /ready say so plainly, while keys answer CLUSTERDOWN.
// Before, with three voters, the first pair left no leader for good and
// status said "cluster ok".
func TestTwoVotersDieAtOnce(t *testing.T) {
	c := startCluster(t, 7, clusterOptions{extra: []string{"--failure-timeout", "2s", "--heartbeat-interval", "100ms"}})
	st, err := c.status(0)
	must(t, err)
	if st.VoterTarget != 3 || !st.Quorum {
		t.Fatalf("a new cluster: voter target %d, quorum %v; want 3 (--voters) and a quorum", st.VoterTarget, st.Quorum)
	}
	keys := writeVoterKeys(t, c.plainClient(0, 2), "v1:")
	c.waitControlPlane(0, 5, 30*time.Second)

	leader := c.leader(0)
	voters := slices.DeleteFunc(c.voterIndexes(0), func(i int) bool { return i == leader })
	victims := []int{leader, voters[len(voters)-1]}
	watcher := c.nonVoters()[0]
	t.Logf("killing the leader %d and voter %d; watching from non-voter %d", victims[0], victims[1], watcher)
	for _, v := range victims {
		must(t, c.nodes[v].cmd.Process.Kill())
	}
	for _, v := range victims {
		t.Logf("node %d marked failed after %s", v, c.waitFailed(watcher, v, 30*time.Second))
	}
	cl := c.plainClient(watcher, 2)
	t.Logf("every key read back %s after the failures were marked", waitRecovered(t, cl, keys))
	rewriteVoterKeys(t, cl, keys)
	for k, v := range writeVoterKeys(t, cl, "v2:") {
		keys[k] = v
	}
	c.waitControlPlane(watcher, 5, 30*time.Second)
	if out := c.statusCommand(t, watcher); !strings.HasPrefix(out, "cluster ok") || !strings.Contains(out, "5 of 5 voters up, 5 wanted") {
		t.Fatalf("memgest status after the pair: %q", out)
	}

	var more []int // every live voter but the watcher and one other
	for _, v := range c.voterIndexes(watcher) {
		if v != watcher {
			more = append(more, v)
		}
	}
	more = more[1:]
	t.Logf("killing voters %v at once: two of five left", more)
	for _, v := range more {
		must(t, c.nodes[v].cmd.Process.Kill())
	}
	c.waitNoQuorum(watcher, 30*time.Second)
	c.waitReady(watcher, http.StatusServiceUnavailable, "no quorum", 30*time.Second)
	if out := c.statusCommand(t, watcher); !strings.HasPrefix(out, "cluster DOWN: NO RAFT QUORUM") || !strings.Contains(out, "2 of 5 voters up") {
		t.Fatalf("memgest status without a quorum: %q", out)
	}
	for k := range keys {
		if err := cl.Get(ctxT(t), k).Err(); err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			t.Fatalf("GET %s without a quorum: %v, want CLUSTERDOWN", k, err)
		}
	}
}

// writeVoterKeys writes 40 rep:3 and 40 stripe:4+2 keys through cl and
// returns their values.
func writeVoterKeys(t *testing.T, cl *redis.Client, prefix string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	for _, spec := range []string{"rep:3", "stripe:4+2"} {
		for i := range 40 {
			k := fmt.Sprintf("%s%s:%d", prefix, spec, i)
			v := strings.Repeat(k, 1+i%5)
			must(t, cl.Do(ctxT(t), "SET", k, v, "SCHEME", spec).Err())
			keys[k] = v
		}
	}
	return keys
}

// rewriteVoterKeys gives every key a new value and reads it back.
func rewriteVoterKeys(t *testing.T, cl *redis.Client, keys map[string]string) {
	t.Helper()
	for k := range keys {
		v := "again:" + k
		must(t, cl.Set(ctxT(t), k, v, 0).Err())
		if got, err := cl.Get(ctxT(t), k).Result(); err != nil || got != v {
			t.Fatalf("GET %s after SET = %q, %v; want %q", k, got, err, v)
		}
		keys[k] = v
	}
}

// waitControlPlane waits until node from's /status reports a quorum and
// want voters, all answering, as many as the map calls for.
func (c *testCluster) waitControlPlane(from, want int, timeout time.Duration) {
	c.t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		st, err := c.status(from)
		if err == nil && st.Quorum && st.Voters == want && st.VotersUp == want && st.VoterTarget == want {
			return
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("node %d's status: quorum %v, voters %d (%d up), target %d after %s; want %d (%v)",
				from, st.Quorum, st.Voters, st.VotersUp, st.VoterTarget, timeout, want, err)
		}
	}
}

// waitNoQuorum waits until node from's /status says it has known no Raft
// leader for some time.
func (c *testCluster) waitNoQuorum(from int, timeout time.Duration) {
	c.t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		st, err := c.status(from)
		if err == nil && !st.Quorum && st.Leader == "" && st.NoLeaderSeconds > 0 {
			return
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("node %d's status after %s: quorum %v, leader %q, no leader for %.1fs (%v)",
				from, timeout, st.Quorum, st.Leader, st.NoLeaderSeconds, err)
		}
	}
}

// statusCommand runs `memgest status` against node i and returns the
// first line it printed.
func (c *testCluster) statusCommand(t *testing.T, i int) string {
	t.Helper()
	out, err := exec.Command(binary, "status", "--addr", "127.0.0.1:"+strconv.Itoa(c.nodes[i].httpPort)).CombinedOutput()
	if err != nil {
		t.Fatalf("memgest status: %v\n%s", err, out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return first
}

// waitVotersGrown waits until node from's /status has a quorum and as
// many voters, all answering, as the map calls for: the leader has given
// the votes its schemes' tolerance wants (cluster.VoterTarget), so a test
// that picks victims by their vote sees the voters they will keep.
func (c *testCluster) waitVotersGrown(from int) {
	c.t.Helper()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		st, err := c.status(from)
		if err == nil && st.Quorum && st.Voters == st.VoterTarget && st.VotersUp == st.VoterTarget {
			return
		}
		if time.Since(start) > 30*time.Second {
			c.t.Fatalf("node %d's status after 30 s: quorum %v, voters %d (%d up), target %d (%v)",
				from, st.Quorum, st.Voters, st.VotersUp, st.VoterTarget, err)
		}
	}
}
