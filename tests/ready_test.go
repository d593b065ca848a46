package tests

import (
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadyProbe: a node's GET /ready answers 503 "forming" until the
// cluster forms and 200 "ready" after, without the cluster's password
// (which /status needs), and 405 to other methods (the Kubernetes
// readiness probe of deploy/k8s).
func TestReadyProbe(t *testing.T) {
	c := &testCluster{t: t, secret: writeSecret(t), pass: "sesame"}
	t.Cleanup(c.stop)
	ports := freePorts(t, 6)
	for i := range 2 {
		nd := &node{port: ports[3*i], peerPort: ports[3*i+1], httpPort: ports[3*i+2]}
		args := []string{"server", "--bind", "127.0.0.1",
			"--port", strconv.Itoa(nd.port), "--peer-port", strconv.Itoa(nd.peerPort),
			"--http-port", strconv.Itoa(nd.httpPort), "--data-dir", t.TempDir(), "--log-level", nodeLogLevel(),
			"--failure-timeout", "5s", "--cluster-secret-file", c.secret}
		if i == 0 {
			args = append(args, "--bootstrap-expect", "2", "--voters", "1", "--requirepass", c.pass)
		} else {
			args = append(args, "--join", c.nodes[0].peerAddr())
		}
		c.start(nd, args)
		if i == 0 {
			// Alone, the founder waits for the second node.
			c.waitReady(0, http.StatusServiceUnavailable, "forming", 30*time.Second)
		}
	}
	c.waitFormed(60 * time.Second)
	for i := range c.nodes {
		c.waitReady(i, http.StatusOK, "ready\n", 30*time.Second)
	}
	if resp, err := c.httpGet(0, "/status", ""); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/status without the password: %v, %v; want 401", resp.Status, err)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(c.nodes[0].httpPort) + "/ready"
	resp, err := http.Post(url, "text/plain", nil)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /ready: %s, want 405", resp.Status)
	}
}

// waitReady polls node i's /ready, without a password, until it answers
// code with a body starting with body, and returns the bodies it got
// before, once each.
func (c *testCluster) waitReady(i, code int, body string, timeout time.Duration) []string {
	c.t.Helper()
	var seen []string
	start := time.Now()
	for {
		resp, err := c.httpGet(i, "/ready", "")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == code && strings.HasPrefix(string(b), body) {
				return seen
			}
			if got := resp.Status + " " + strings.TrimSpace(string(b)); !slices.Contains(seen, got) {
				seen = append(seen, got)
			}
		}
		if time.Since(start) > timeout {
			c.t.Fatalf("node %d's /ready did not answer %d %q in %s; it answered %q (last error %v)",
				i, code, body, timeout, seen, err) // stop prints the nodes' logs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLostVolumeRejoinsAtItsAddress: a node restarted on an empty data
// directory comes back with a new id at its old addresses (a Kubernetes
// pod whose volume was lost). It used to be refused for good ("address
// already used by node …"). Now the old identity, failed and still
// placed, leaves once the new one has taken its places (decision 0017);
// the new node is rebuilt, turns ready only then, and every rep:3 key the
// old identity coordinated reads back through it. The victim is a voter,
// so Raft takes a member at its address only once its vote has passed to
// the non-voter.
func TestLostVolumeRejoinsAtItsAddress(t *testing.T) {
	c := startCluster(t, 4, clusterOptions{extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"}})
	leader := c.leader(0)
	victim := -1
	for _, v := range c.voterIndexes(0) {
		if v != 0 && v != leader { // node 0 founded the cluster: wiped, it would found another
			victim = v
			break
		}
	}
	if victim < 0 {
		t.Fatal("no voter to kill but the founder and the leader")
	}
	want := c.rep3KeysOn(t, victim, 20)
	oldID := c.idOf(leader, c.nodes[victim].addr())

	must(t, c.nodes[victim].cmd.Process.Kill())
	c.waitFailed(leader, victim, 15*time.Second)
	dir := c.nodes[victim].args[slices.Index(c.nodes[victim].args, "--data-dir")+1]
	must(t, os.RemoveAll(dir))
	must(t, os.MkdirAll(dir, 0o700))
	start := time.Now()
	c.restart(victim)
	seen := c.waitReady(victim, http.StatusOK, "ready\n", 60*time.Second)
	t.Logf("the new identity turned ready %s after its start; /ready answered %q before", time.Since(start), seen)

	st, err := c.status(leader)
	must(t, err)
	var reborn bool
	for _, n := range st.Nodes {
		switch {
		case n.ID == oldID && (n.State != "left" || !strings.HasSuffix(n.ClientAddr, ".invalid:0")):
			t.Fatalf("the old identity is %s at %s; want left at a freed address", n.State, n.ClientAddr)
		case n.ClientAddr == c.nodes[victim].addr():
			reborn = n.ID != oldID && n.State == "up"
		}
	}
	if !reborn {
		t.Fatalf("no new identity up at the victim's address: %+v", st.Nodes)
	}
	c.waitRebuilt(leader, 30*time.Second)
	waitRecovered(t, c.plainClient(victim, 2), want)
}

// idOf is the id of the node at client address addr in node from's map.
func (c *testCluster) idOf(from int, addr string) string {
	c.t.Helper()
	st, err := c.status(from)
	must(c.t, err)
	for _, n := range st.Nodes {
		if n.ClientAddr == addr {
			return n.ID
		}
	}
	c.t.Fatalf("no node at %s", addr)
	return ""
}
