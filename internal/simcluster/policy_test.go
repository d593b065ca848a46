package simcluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
)

// Scheme policies (DESIGN.md §7b, decision 0010) on six nodes in memory.

// specOf is the scheme spec SCHEME.OF names for key.
func specOf(t *testing.T, c *simcluster.Cluster, key string) string {
	t.Helper()
	return simcluster.Fields(c.Do(c.AnyLive(), "SCHEME.OF", key))["spec"].Text()
}

// setPolicy runs SCHEME.POLICY args and waits until every live node's
// map has the change: a node applies the policy from its own map, which
// follows the leader's by a Raft round trip.
func setPolicy(t *testing.T, c *simcluster.Cluster, args ...string) {
	t.Helper()
	expect(t, "SCHEME.POLICY "+strings.Join(args, " "), c.Do(c.AnyLive(), append([]string{"SCHEME.POLICY"}, args...)...), "+OK")
	want := c.Node(c.AnyLiveFirst()).Map().Epoch
	c.WaitMap("the policy applied", func(m *cluster.Map) bool { return m.Epoch >= want })
}

// expectSpec fails the test unless key is stored under spec.
func expectSpec(t *testing.T, c *simcluster.Cluster, what, key, spec string) {
	t.Helper()
	if got := specOf(t, c, key); got != spec {
		t.Fatalf("%s: %s is in %q, want %s", what, key, got, spec)
	}
}

// TestSizePolicy is KVMD §3's hybrid mode: with SCHEME.POLICY SIZE 100
// rep:3 split:4+2, a value under 100 bytes written without SCHEME goes to
// rep:3 and the others to split:4+2, whichever command writes it (SET,
// MSET's unread path, APPEND, INCR, SET with options); an update crossing
// the threshold either way moves the key, and the key keeps its value. An
// explicit SCHEME wins (custom mode): that write goes where it says, and a
// key in a scheme the policy does not name stays there.
func TestSizePolicy(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	small, big := strings.Repeat("s", 99), strings.Repeat("b", 100)
	expect(t, "SCHEME.POLICY", c.Do(c.AnyLive(), "SCHEME.POLICY"), `["policy" "off"]`)
	setPolicy(t, c, "SIZE", "100", "rep:3", "split:4+2")
	expect(t, "SCHEME.POLICY", c.Do(c.AnyLive(), "SCHEME.POLICY"),
		`["policy" "size" "threshold" :100 "below" "rep:3" "at_or_above" "split:4+2"]`)
	for i := range 6 { // keys of every coordinator
		k := c.KeyOn(i, fmt.Sprintf("size%d:", i))
		expect(t, "SET small", c.Do(c.AnyLive(), "SET", k, small), "+OK")
		expectSpec(t, c, "a small new key", k, "rep:3")
		expect(t, "SET big", c.Do(c.AnyLive(), "SET", k, big), "+OK")
		expectSpec(t, c, "an update crossing upwards", k, "split:4+2")
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", k), big)
		expectValue(t, "SET small GET", c.Do(c.AnyLive(), "SET", k, small, "GET"), big)
		expectSpec(t, c, "an update crossing downwards", k, "rep:3")
		expect(t, "APPEND", c.Do(c.AnyLive(), "APPEND", k, "!"), ":100")
		expectSpec(t, c, "an APPEND crossing", k, "split:4+2")
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", k), small+"!")
		n := k + ":n"
		expect(t, "INCR", c.Do(c.AnyLive(), "INCR", n), ":1")
		expectSpec(t, c, "a new counter", n, "rep:3")
		expect(t, "MSET", c.Do(c.AnyLive(), "MSET", k, small, n, big), "+OK")
		expectSpec(t, c, "MSET's small value", k, "rep:3")
		expectSpec(t, c, "MSET's big value", n, "split:4+2")

		// Custom mode: an explicit SCHEME wins over the policy.
		x := k + ":x"
		expect(t, "SET SCHEME", c.Do(c.AnyLive(), "SET", x, big, "SCHEME", "rep:3"), "+OK")
		expectSpec(t, c, "an explicit SCHEME", x, "rep:3")
		expect(t, "SET SCHEME none", c.Do(c.AnyLive(), "SET", x, small, "SCHEME", "none"), "+OK")
		expect(t, "SET big", c.Do(c.AnyLive(), "SET", x, big), "+OK")
		expectSpec(t, c, "a key outside the policy's schemes", x, "none")
		expect(t, "SCHEME.MOVE", c.Do(c.AnyLive(), "SCHEME.MOVE", n, "split:2+1"), ":1")
		expect(t, "SET small", c.Do(c.AnyLive(), "SET", n, small), "+OK")
		expectSpec(t, c, "a key moved out of the policy's schemes", n, "split:2+1")
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", n), small)
	}
	setPolicy(t, c, "OFF")
	k := c.KeyOn(0, "off:")
	expect(t, "SET", c.Do(c.AnyLive(), "SET", k, big), "+OK")
	expectSpec(t, c, "a new key without a policy", k, "none")
}

// TestSizePolicyWithNone: a policy whose small scheme is none takes the
// write path that commits without reading the key first (writeUnpeeked);
// it must still send big values to rep:3 and move a key whose update
// crosses down into none, and a key in rep:3 outside the policy stays.
func TestSizePolicyWithNone(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	expect(t, "SCHEME.DEFAULT", c.Do(c.AnyLive(), "SCHEME.DEFAULT", "rep:2"), "+OK")
	setPolicy(t, c, "size", "8", "none", "rep:3")
	for i := range 6 {
		k := c.KeyOn(i, fmt.Sprintf("n%d:", i))
		expect(t, "SET small", c.Do(c.AnyLive(), "SET", k, "tiny"), "+OK")
		expectSpec(t, c, "small", k, "none")
		expect(t, "SET big", c.Do(c.AnyLive(), "SET", k, "not so tiny"), "+OK")
		expectSpec(t, c, "big", k, "rep:3")
		expect(t, "SET small", c.Do(c.AnyLive(), "SET", k, "tiny"), "+OK")
		expectSpec(t, c, "crossing down into none", k, "none")
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", k), "tiny")
	}
}

// TestSchemePolicyBadInput (DESIGN.md §8.6): malformed SCHEME.POLICY
// commands and policies the map refuses get a clear error and change
// nothing, neither the policy nor the catalogue; a scheme a policy names
// cannot be dropped.
func TestSchemePolicyBadInput(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	expect(t, "SCHEME.CREATE", c.Do(c.AnyLive(), "SCHEME.CREATE", "small", "rep:3"), "+OK")
	setPolicy(t, c, "SIZE", "4096", "small", "stripe:4+2")
	policy, list := simcluster.Render(c.Do(0, "SCHEME.POLICY")), simcluster.Render(c.Do(0, "SCHEME.LIST"))
	for _, tc := range []struct{ args, want string }{
		{"SIZE 0 small rep:2", "-ERR memgest: the threshold must be a positive number of bytes"},
		{"SIZE ten small rep:2", "-ERR memgest: the threshold must be a positive number of bytes"},
		{"SIZE 2000000000000 small rep:2", "-ERR cluster: policy threshold must be 1..1099511627776 bytes, got 2000000000000"},
		{"SIZE 10 small", "-ERR syntax error. Try SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above>]"},
		{"OFF now", "-ERR syntax error. Try SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above>]"},
		{"LRU 10", "-ERR syntax error. Try SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above>]"},
		{"SIZE 10 rep:2 nosuch", `-ERR cluster: no scheme named "nosuch"`},
		{"SIZE 10 rep:2 split:9+9", "-ERR cluster: scheme split:9+9 needs 18 nodes, the cluster has 6"},
		{"SIZE 10 rep:2 rep:99", "-ERR cluster: bad spec \"rep:99\": replica count must be 1..16"},
		{"SIZE 10 small rep:3", "-ERR cluster: a size policy needs two different schemes"},
	} {
		expect(t, "SCHEME.POLICY "+tc.args, c.Do(c.AnyLive(), append([]string{"SCHEME.POLICY"}, strings.Fields(tc.args)...)...), tc.want)
	}
	expect(t, "SCHEME.DROP", c.Do(c.AnyLive(), "SCHEME.DROP", "small"),
		"-ERR cluster: scheme small is named by the size policy; change the policy first (SCHEME.POLICY)")
	expect(t, "the policy after bad input", c.Do(c.AnyLive(), "SCHEME.POLICY"), policy)
	expect(t, "the catalogue after bad input", c.Do(c.AnyLive(), "SCHEME.LIST"), list)
}

// TestSizePolicySurvivesFailover: the policy is cluster configuration,
// kept in the map that Raft replicates. The Raft leader, coordinator of
// some keys, dies; once it is failed over, every survivor shows the same
// policy, and the keys it coordinated follow it under their new
// coordinator: an update crossing the threshold moves them.
func TestSizePolicySurvivesFailover(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6, Spares: 1})
	setPolicy(t, c, "SIZE", "64", "rep:3", "split:3+2")
	want := simcluster.Render(c.Do(c.AnyLive(), "SCHEME.POLICY"))
	leader := c.Leader()
	if leader < 0 {
		t.Fatal("no leader")
	}
	var keys []string
	for j := range 4 {
		k := c.KeyOn(leader, fmt.Sprintf("fo%d:", j))
		expect(t, "SET", c.Do(c.AnyLive(), "SET", k, "small"), "+OK")
		keys = append(keys, k)
	}
	c.Kill(leader)
	c.FailOver(leader)
	c.Settle("failed over")
	for i := range c.Len() {
		if c.Alive(i) {
			expect(t, fmt.Sprintf("SCHEME.POLICY on node %d", i), c.Do(i, "SCHEME.POLICY"), want)
		}
	}
	big := strings.Repeat("v", 64)
	for _, k := range keys {
		expectValue(t, "GET after the failover", c.Do(c.AnyLive(), "GET", k), "small")
		expect(t, "SET big", c.Do(c.AnyLive(), "SET", k, big), "+OK")
		expectSpec(t, c, "crossing after the failover", k, "split:3+2")
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", k), big)
	}
}
