package simcluster_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
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

// TestSizePolicyPacked: small values packed into stripe chunks, large
// ones split (KVMD's hybrid mode with memgest's packed scheme for the
// small side); updates cross both ways, through the packed engine's moves
// in and out of the primary store, and every key reads back.
func TestSizePolicyPacked(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	setPolicy(t, c, "SIZE", "64", "stripe:4+2", "split:4+2")
	small, big := strings.Repeat("s", 63), strings.Repeat("b", 64)
	for i := range 6 {
		k := c.KeyOn(i, fmt.Sprintf("packed%d:", i))
		for _, step := range []struct{ v, spec string }{{small, "stripe:4+2"}, {big, "split:4+2"}, {small, "stripe:4+2"}} {
			expect(t, "SET", c.Do(c.AnyLive(), "SET", k, step.v), "+OK")
			expectSpec(t, c, fmt.Sprintf("a %d-byte value", len(step.v)), k, step.spec)
			expectValue(t, "GET", c.Do(c.AnyLive(), "GET", k), step.v)
		}
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
		{"SIZE 10 small", "-ERR syntax error. Try SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above> | TEMPERATURE <hot> <cold> <idle-seconds>]"},
		{"OFF now", "-ERR syntax error. Try SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above> | TEMPERATURE <hot> <cold> <idle-seconds>]"},
		{"LRU 10", "-ERR syntax error. Try SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above> | TEMPERATURE <hot> <cold> <idle-seconds>]"},
		{"SIZE 10 rep:2 nosuch", `-ERR cluster: no scheme named "nosuch"`},
		{"SIZE 10 rep:2 split:9+9", "-ERR cluster: scheme split:9+9 needs 18 nodes, the cluster has 6"},
		{"SIZE 10 rep:2 rep:99", "-ERR cluster: bad spec \"rep:99\": replica count must be 1..16"},
		{"SIZE 10 small rep:3", "-ERR cluster: a size policy needs two different schemes"},
		{"TEMPERATURE small rep:2 0", "-ERR memgest: the idle time must be a positive number of seconds"},
		{"TEMPERATURE small rep:2 99999999", "-ERR cluster: policy idle time must be 1..2592000 seconds, got 99999999"},
		{"TEMPERATURE small rep:3 60", "-ERR cluster: a temperature policy needs two different schemes"},
		{"TEMPERATURE hybrid:4+2 small 60", "-ERR memgest: the hot scheme of a temperature policy cannot be a packed scheme (hybrid:4+2): idle keys are found by scanning the records of the coordinators' primary stores, which a packed scheme's keys do not have"},
		{"TEMPERATURE stripe:4+2 small 60", "-ERR memgest: the hot scheme of a temperature policy cannot be a packed scheme (stripe:4+2): idle keys are found by scanning the records of the coordinators' primary stores, which a packed scheme's keys do not have"},
		{"TEMPERATURE small rep:2", "-ERR syntax error. Try SCHEME.POLICY [OFF | SIZE <bytes> <below> <at-or-above> | TEMPERATURE <hot> <cold> <idle-seconds>]"},
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

// infoSum sums an INFO memgest field over the live nodes.
func infoSum(t *testing.T, c *simcluster.Cluster, field string) int64 {
	t.Helper()
	var sum int64
	for i := range c.Len() {
		if c.Alive(i) {
			sum += infoInt(t, c.Do(i, "INFO", "memgest").Text(), field)
		}
	}
	return sum
}

// awaitSpec waits until every key of keys is stored under spec.
func awaitSpec(t *testing.T, c *simcluster.Cluster, what string, keys []string, spec string) {
	t.Helper()
	c.Until(what, func() (bool, string) {
		for _, k := range keys {
			if got := simcluster.Fields(c.DoQuiet(c.AnyLiveFirst(), "SCHEME.OF", k))["spec"].Text(); got != spec {
				return false, k + " is in " + got
			}
		}
		return true, ""
	})
}

// TestTemperaturePolicy: with SCHEME.POLICY TEMPERATURE rep:3 stripe:4+2
// 10, keys written without SCHEME go to rep:3; on the injected clock, keys
// neither read nor written for more than 10 s move to stripe:4+2 in the
// background, and keys read meanwhile stay; a write moves a cold key back
// at once, PromoteReads reads within the idle time move it back in the
// background, one read does not; a key put in another scheme explicitly
// stays there. INFO counts the moves and the bytes saved.
func TestTemperaturePolicy(t *testing.T) {
	// Advance steps a quarter of the failure timeout at a time, each
	// waiting for every node's lease renewal; nothing fails here.
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6, FailureTimeout: 8 * time.Second})
	setPolicy(t, c, "TEMPERATURE", "rep:3", "stripe:4+2", "10")
	expect(t, "SCHEME.POLICY", c.Do(c.AnyLive(), "SCHEME.POLICY"),
		`["policy" "temperature" "hot" "rep:3" "cold" "stripe:4+2" "idle_seconds" :10]`)
	var warm, idle []string
	values := map[string]string{}
	for i := range 6 {
		for j := range 3 {
			for n, set := range []*[]string{&warm, &idle} {
				k := c.KeyOn(i, fmt.Sprintf("%s%d:%d:", []string{"warm", "idle"}[n], i, j))
				values[k] = value(c, "stripe:4+2", k)
				expect(t, "SET", c.Do(c.AnyLive(), "SET", k, values[k]), "+OK")
				*set = append(*set, k)
			}
		}
	}
	pinned := c.KeyOn(0, "pinned:")
	expect(t, "SET SCHEME", c.Do(c.AnyLive(), "SET", pinned, "v", "SCHEME", "rep:2"), "+OK")
	awaitSpec(t, c, "new keys hot", append(warm, idle...), "rep:3")
	c.Advance(6 * time.Second)
	for _, k := range warm {
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", k), values[k])
	}
	c.Advance(6 * time.Second)
	awaitSpec(t, c, "idle keys cold", idle, "stripe:4+2")
	for _, k := range warm {
		expectSpec(t, c, "a key read within the idle time", k, "rep:3")
	}
	expectSpec(t, c, "a key in a scheme the policy does not name", pinned, "rep:2")
	for _, k := range idle {
		expectValue(t, "GET of a cold key", c.Do(c.AnyLive(), "GET", k), values[k])
	}
	if got := infoSum(t, c, "policy_moves_to_cold"); got != int64(len(idle)) {
		t.Fatalf("policy_moves_to_cold = %d over the nodes, want %d", got, len(idle))
	}
	if saved := infoSum(t, c, "policy_bytes_saved"); saved <= 0 {
		t.Fatalf("policy_bytes_saved = %d after moves from rep:3 to stripe:4+2", saved)
	}
	// SCHEME.INFO of either scheme gives its role and the cluster's moves.
	for spec, role := range map[string]string{"rep:3": "hot", "stripe:4+2": "cold"} {
		want := fmt.Sprintf(`"temperature_role" %q "policy_moves_to_cold" :%d "policy_moves_to_hot" :0 "policy_bytes_saved" :%d`,
			role, len(idle), infoSum(t, c, "policy_bytes_saved"))
		if got := simcluster.Render(c.Do(c.AnyLive(), "SCHEME.INFO", spec)); !strings.Contains(got, want) {
			t.Fatalf("SCHEME.INFO %s = %s, want it to hold %s", spec, got, want)
		}
	}

	// Back to hot: a write at once, PromoteReads reads in the background.
	expect(t, "SET", c.Do(c.AnyLive(), "SET", idle[0], "rewritten"), "+OK")
	expectSpec(t, c, "a cold key written", idle[0], "rep:3")
	for range core.PromoteReads {
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", idle[1]), values[idle[1]])
	}
	expectValue(t, "GET", c.Do(c.AnyLive(), "GET", idle[2]), values[idle[2]]) // once only
	awaitSpec(t, c, "a cold key read often", idle[1:2], "rep:3")
	expectSpec(t, c, "a cold key read once", idle[2], "stripe:4+2")
	if got := infoSum(t, c, "policy_moves_to_hot"); got != 2 {
		t.Fatalf("policy_moves_to_hot = %d, want 2", got)
	}
	setPolicy(t, c, "OFF")
}

// TestTemperatureMovesUnderReads (DESIGN.md §8.2, §8.4): keys move between
// a temperature policy's schemes in both directions — idle ones to cold
// in the background after each jump of the clock past the idle time, cold
// ones back when written or read often — while three clients read them
// and one writes them. Every read answers a value, never nil or an error,
// and the history is linearizable per key (porcupine).
func TestTemperatureMovesUnderReads(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6, FailureTimeout: 20 * time.Second})
	setPolicy(t, c, "TEMPERATURE", "rep:3", "stripe:4+2", "2")
	start := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	var failures []string
	do := func(client int, in regOp) { // client i talks to node i (the seeded Rand is not for goroutines)
		args := []string{"GET", in.key}
		if in.set {
			args = []string{"SET", in.key, in.value}
		}
		call := time.Since(start).Nanoseconds()
		r := c.DoQuiet(client, args...)
		ret := time.Since(start).Nanoseconds()
		out := regOut{value: r.Text(), exists: r.Kind() == resp.KindBulk}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case in.set && r.Text() != "OK", !in.set && r.Kind() != resp.KindBulk:
			failures = append(failures, fmt.Sprintf("%s → %s", strings.Join(args, " "), simcluster.Render(r)))
		}
		history = append(history, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	}
	var keys []string
	for i := range 6 {
		k := c.KeyOn(i, fmt.Sprintf("temp%d:", i))
		keys = append(keys, k)
		do(0, regOp{key: k, value: "v0", set: true})
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for client := 1; client <= 4; client++ {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond): // a pace that leaves keys idle between the clock's jumps
				}
				k := keys[(n+client)%len(keys)]
				if client == 4 { // the writer, at a fifth of a reader's rate
					if n%5 == 0 {
						do(client, regOp{key: k, value: fmt.Sprintf("v%d", n), set: true})
					}
					continue
				}
				do(client, regOp{key: k})
			}
		})
	}
	c.Until("moves both ways under reads", func() (bool, string) {
		cold, hot := infoSum(t, c, "policy_moves_to_cold"), infoSum(t, c, "policy_moves_to_hot")
		if cold >= 12 && hot >= 12 {
			return true, ""
		}
		c.Advance(3 * time.Second) // one step: every key not read since is idle
		return false, fmt.Sprintf("%d moves to cold, %d to hot", cold, hot)
	})
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d commands failed during the moves, the first: %s", len(failures), failures[0])
	}
	if res := porcupine.CheckOperationsTimeout(register, history, checkTimeout); res != porcupine.Ok {
		t.Fatalf("the history of %d operations: %s%s", len(history), res, illegalKeys(history))
	}
	t.Logf("%d operations, %d moves to cold, %d to hot", len(history), infoSum(t, c, "policy_moves_to_cold"), infoSum(t, c, "policy_moves_to_hot"))
}

// TestTemperaturePolicySurvivesFailover: a temperature policy outlives the
// Raft leader, which coordinated some keys; once failed over, the keys'
// new coordinators cool them when idle, and they keep their values.
func TestTemperaturePolicySurvivesFailover(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6, Spares: 1})
	setPolicy(t, c, "TEMPERATURE", "rep:3", "split:3+2", "5")
	leader := c.Leader()
	var keys []string
	for j := range 4 {
		k := c.KeyOn(leader, fmt.Sprintf("tf%d:", j))
		expect(t, "SET", c.Do(c.AnyLive(), "SET", k, k), "+OK")
		keys = append(keys, k)
	}
	awaitSpec(t, c, "new keys hot", keys, "rep:3")
	c.Kill(leader)
	c.FailOver(leader)
	c.Settle("failed over")
	expect(t, "SCHEME.POLICY after the failover", c.Do(c.AnyLive(), "SCHEME.POLICY"),
		`["policy" "temperature" "hot" "rep:3" "cold" "split:3+2" "idle_seconds" :5]`)
	c.Advance(8 * time.Second)
	awaitSpec(t, c, "idle keys cooled by their new coordinators", keys, "split:3+2")
	for _, k := range keys {
		expectValue(t, "GET", c.Do(c.AnyLive(), "GET", k), k)
	}
}
