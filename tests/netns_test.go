//go:build linux

// TestNetnsCluster runs a memgest cluster as on separate hosts (issue 29,
// "run it on several hosts"): each node is a real `memgest server` process
// in a Linux network namespace of its own, with its own IP address, and
// the nodes talk over a private bridged network, not loopback.
//
// Topology. The test makes, for this run only (names carry the test's PID
// and a random suffix: mgtest-<pid>-<hex>-<role>):
//
//	namespace ...-sw        bridge br0, with one veth port pN per host
//	namespace ...-client    10.X.Y.10   the test's clients and `memgest status`
//	namespace ...-n0..n3    10.X.Y.11-14  data nodes (n0 founds the cluster)
//	namespace ...-spare     10.X.Y.15   a spare that joins later
//	namespace ...-stranger  10.X.Y.16   processes without the cluster secret
//
// 10.X.Y.0/24 is drawn at run time (X in 200..249). Every node listens on
// its own address with memgest's default ports (7001 clients, 17001 peers,
// 27001 HTTP), binds and advertises that address, and runs with peer
// authentication (one --cluster-secret-file) and a --requirepass.
//
// Staying off the host's network: each veth pair is created inside the
// switch namespace with its far end placed at once in its host's
// namespace, and every `ip` command the harness runs is either `ip netns
// add/del` of its own namespaces or `ip -n <its namespace> ...`. Nothing is
// created in, routed through or addressed on the default namespace. The
// test process reaches the nodes by dialing from the client namespace: a
// goroutine locks its OS thread, enters the namespace with setns(2),
// creates the socket (which stays in that namespace) and exits, taking the
// thread with it. Nodes are started with `ip netns exec <ns> memgest ...`,
// which execs memgest itself, so the PID the test holds is the node's (it
// checks /proc/<pid>/exe and /proc/<pid>/ns/net).
//
// Teardown (t.Cleanup): every process the test started is killed by PID,
// then every namespace it created is deleted, which deletes the bridge and
// the veth pairs with them. A run killed before its cleanups (a go test
// timeout) leaves namespaces named mgtest-<pid>-...: `ip netns list`
// shows them, `ip netns del <name>` removes them.
//
// The test skips where namespaces cannot be made (not root, no `ip`, `ip
// netns add` refused, no bridge support); it builds only on Linux.
//
// What it checks: the cluster forms across the namespaces; CLUSTER NODES,
// CLUSTER SLOTS and /status name every node by its own address (never
// 127.0.0.1 or 0.0.0.0), and a cluster-mode client routing by those
// addresses works; keys of rep:3, split:2+1 and stripe:2+1 written with
// random binary values; a process without the secret refuses to start, and
// one with a wrong secret reaches the peer port but is refused (counted
// in memgest_auth_failures_total) and never joins; a spare joins from its
// namespace; a data node is SIGKILLed, `memgest status` shows it failed,
// the spare takes its place and the rebuild completes, and every key reads
// back bit-exact through every surviving node and through the cluster
// client; a sixth node joins and `memgest cluster add-node` rebalances
// slots onto it, then `memgest cluster remove-node` drains a data node out
// of the cluster, and every key still reads back through every live node.
// During each of the two moves, clients on the staying nodes SET, GET and
// DEL other keys of the three schemes, and porcupine checks their history.
package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memgest/memgest/server"
)

// netnsSchemes are the schemes the test writes keys under, with how many
// keys and their largest value.
var netnsSchemes = []struct {
	spec      string
	keys      int
	maxSize   int
	tolerates int
}{
	{"rep:3", 30, 16 << 10, 2},
	{"split:2+1", 30, 64 << 10, 1},
	{"stripe:2+1", 30, 600, 1}, // small objects, packed into 4 KiB chunks
}

func TestNetnsCluster(t *testing.T) {
	began := time.Now()
	lab := newNetLab(t)
	client := lab.addHost("client")
	var dataHosts []*netHost
	for i := range 4 {
		dataHosts = append(dataHosts, lab.addHost("n"+strconv.Itoa(i)))
	}
	spareHost := lab.addHost("spare")
	strangerHost := lab.addHost("stranger")
	t.Logf("lab %s: %d namespaces on %s0/24 in %s", lab.id, len(lab.made), lab.subnet, time.Since(began).Round(time.Millisecond))

	// Step 1: four nodes in four namespaces form a cluster, each known by
	// its own address. A 2 s failure timeout (as TestKillSequenceSixNodes's): a
	// race-built node starved of CPU by the rest of the suite is not
	// marked failed, and the victim's failure costs a second more.
	c := startNSCluster(t, lab, client, dataHosts, "--failure-timeout", "2s", "--heartbeat-interval", "100ms")
	data := slices.Clone(c.nodes)
	t.Logf("cluster of %d formed %s after the start", len(data), time.Since(began).Round(time.Millisecond))
	c.checkAddresses(data, data)

	// Step 2: keys under each scheme, written by a cluster-mode client that
	// routes by the addresses the nodes advertise.
	want := c.writeKeys(1)
	c.checkKeys(want, c.nodes[1])

	// Step 3: peer authentication across hosts.
	c.checkStrangersRefused(strangerHost)

	// Step 4: a spare joins from a fifth namespace.
	spare := c.start(spareHost, c.serverArgs(spareHost, c.secret, "--join", c.nodes[0].peerAddr(), "--spare"))
	c.waitFormed(30*time.Second, 5)
	if out, rows := c.statusTable(c.nodes[0]); rows[spare.addr()]["STATE"] != "spare" {
		t.Fatalf("memgest status does not show %s as a spare:\n%s", spare.addr(), out)
	}

	// Step 5: a data node dies (SIGKILL); the spare replaces it.
	victim, watcher := c.pickVictim(data)
	victim.kill()
	killedAt := time.Now()
	c.waitFailed(watcher, victim, 15*time.Second)
	t.Logf("%s marked failed %s after the kill", victim.addr(), time.Since(killedAt).Round(time.Millisecond))
	survivors := slices.DeleteFunc(slices.Clone(c.nodes), func(nd *nsNode) bool { return nd == victim })
	waitRecovered(t, c.plain(watcher), want)
	c.waitSpareInUse(watcher, victim, spare, 30*time.Second)
	t.Logf("spare %s in use and rebuild done %s after the kill", spare.addr(), time.Since(killedAt).Round(time.Millisecond))
	c.checkStatusAfterFailure(watcher, victim, spare)
	c.checkKeys(want, survivors...)
	coordinators := slices.DeleteFunc(slices.Clone(data), func(nd *nsNode) bool { return nd == victim })
	c.checkAddresses(survivors, append(coordinators, spare))

	// Step 6: a node joins from a sixth namespace, and `memgest cluster
	// add-node`, run from the client namespace, makes it a data node and
	// rebalances slots onto it while they serve.
	newHost := lab.addHost("n4")
	grown := c.start(newHost, c.serverArgs(newHost, c.secret, "--join", watcher.peerAddr()))
	c.waitFormed(30*time.Second, len(c.nodes))
	load := startMoveLoad(t, c.plainEach(survivors), "grow", 24, netnsSpecs(), 2*time.Millisecond, 6)
	if out, err := c.cli("cluster", "add-node", grown.addr(), "--addr", watcher.addr(), "--pass", c.pass); err != nil {
		t.Fatalf("memgest cluster add-node: %v\n%s", err, out)
	}
	grownAt := time.Now()
	c.waitStatus(watcher, 60*time.Second, "the rebalance onto "+grown.addr(), func(st server.Status) bool {
		i := nodeLine(st, grown)
		return st.ShardsImporting == 0 && st.Rebalance == "" && i >= 0 && st.Nodes[i].Slots > 0
	})
	t.Logf("%s added and slots rebalanced in %s", grown.addr(), time.Since(grownAt).Round(time.Millisecond))
	load.check(t, "the load during the rebalance")
	live := append(slices.Clone(survivors), grown)
	coordinators = append(coordinators, spare, grown)
	c.checkKeys(want, live...)
	c.waitSlotsAgree(live, 30*time.Second)
	c.checkAddresses(live, coordinators)

	// Step 7: `memgest cluster remove-node` drains a data node: its slots
	// and pieces move away, it leaves Raft and the map, and its process
	// is stopped.
	leaving := coordinators[0]
	if leaving == watcher {
		leaving = coordinators[1]
	}
	staying := slices.DeleteFunc(slices.Clone(live), func(nd *nsNode) bool { return nd == leaving })
	load = startMoveLoad(t, c.plainEach(staying), "drain", 24, netnsSpecs(), 2*time.Millisecond, 7)
	if out, err := c.cli("cluster", "remove-node", leaving.addr(), "--addr", watcher.addr(), "--pass", c.pass); err != nil {
		t.Fatalf("memgest cluster remove-node: %v\n%s", err, out)
	}
	drainedAt := time.Now()
	c.waitStatus(watcher, 90*time.Second, "the drain of "+leaving.addr(), func(st server.Status) bool {
		i := nodeLine(st, leaving)
		return st.ShardsImporting == 0 && st.Rebalance == "" && i >= 0 && st.Nodes[i].State == "left"
	})
	t.Logf("%s drained and removed in %s", leaving.addr(), time.Since(drainedAt).Round(time.Millisecond))
	load.check(t, "the load during the drain")
	leaving.kill()
	c.nodes = slices.DeleteFunc(c.nodes, func(nd *nsNode) bool { return nd == leaving })
	c.removed = append(c.removed, leaving)
	live = slices.DeleteFunc(live, func(nd *nsNode) bool { return nd == leaving })
	coordinators = slices.DeleteFunc(coordinators, func(nd *nsNode) bool { return nd == leaving })
	c.checkKeys(want, live...)
	c.waitSlotsAgree(live, 30*time.Second)
	c.checkAddresses(live, coordinators)

	t.Logf("TestNetnsCluster: %s in all", time.Since(began).Round(time.Millisecond))
}

// netnsSpecs are the specs of netnsSchemes.
func netnsSpecs() []string {
	var out []string
	for _, s := range netnsSchemes {
		out = append(out, s.spec)
	}
	return out
}

// plainEach is a plain client to each of nodes.
func (c *nsCluster) plainEach(nodes []*nsNode) []*redis.Client {
	var out []*redis.Client
	for _, nd := range nodes {
		out = append(out, c.plain(nd))
	}
	return out
}

// waitSlotsAgree waits until every node of nodes answers CLUSTER SLOTS with
// the same assignment of slot ranges to masters (what `redis-cli --cluster
// check` calls "All nodes agree about slots configuration"): the maps that
// a rebalance or a drain left converge. An error answer never counts as
// agreeing. It fails after timeout, naming the nodes whose answers differ.
func (c *nsCluster) waitSlotsAgree(nodes []*nsNode, timeout time.Duration) {
	c.t.Helper()
	clients := c.plainEach(nodes)
	deadline := time.Now().Add(timeout)
	for {
		answers := map[string][]string{} // the assignment → the nodes that answered it
		failed := false
		for i, nd := range nodes {
			a, err := slotAssignment(clients[i])
			if err != nil {
				a, failed = "error: "+err.Error(), true
			}
			answers[a] = append(answers[a], nd.addr())
		}
		if len(answers) == 1 && !failed {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("CLUSTER SLOTS still differs between nodes after %s: %v", timeout, answers)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// slotAssignment is a node's CLUSTER SLOTS, asked through rdb, as
// "first-last master" lines in slot order.
func slotAssignment(rdb *redis.Client) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	lines := make([]string, 0, len(slots))
	for _, s := range slots {
		master := "none"
		if len(s.Nodes) > 0 {
			master = s.Nodes[0].Addr
		}
		lines = append(lines, fmt.Sprintf("%05d-%05d %s", s.Start, s.End, master))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

// checkAddresses asks each of asked for CLUSTER NODES, CLUSTER SLOTS and
// /status, and checks every node is named by its own lab address (never
// 127.0.0.1 or 0.0.0.0), with its own ports, and that the slots are
// coordinated by exactly coordinators.
func (c *nsCluster) checkAddresses(asked, coordinators []*nsNode) {
	c.t.Helper()
	ctx := ctxT(c.t)
	known := map[string]*nsNode{}
	for _, nd := range c.nodes {
		known[nd.addr()] = nd
	}
	for _, nd := range asked {
		rdb := c.plain(nd)
		out, err := rdb.ClusterNodes(ctx).Result()
		must(c.t, err)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(c.nodes) {
			c.t.Fatalf("CLUSTER NODES of %s has %d lines, want %d:\n%s", nd.addr(), len(lines), len(c.nodes), out)
		}
		self := 0
		for _, line := range lines {
			f := strings.Fields(line)
			if len(f) < 8 {
				c.t.Fatalf("CLUSTER NODES of %s: line %q", nd.addr(), line)
			}
			addr, cport, _ := strings.Cut(f[1], "@")
			if known[addr] == nil || cport != strconv.Itoa(nsPeerPort) {
				c.t.Fatalf("CLUSTER NODES of %s names %s, not a node's own address and peer port:\n%s", nd.addr(), f[1], out)
			}
			if strings.Contains(f[2], "myself") {
				self++
				if addr != nd.addr() {
					c.t.Fatalf("CLUSTER NODES of %s: myself is %s", nd.addr(), addr)
				}
			}
		}
		if self != 1 {
			c.t.Fatalf("CLUSTER NODES of %s: %d lines flagged myself:\n%s", nd.addr(), self, out)
		}

		slots, err := rdb.ClusterSlots(ctx).Result()
		must(c.t, err)
		covered, holders := 0, map[string]bool{}
		for _, s := range slots {
			for _, n := range s.Nodes {
				if known[n.Addr] == nil {
					c.t.Fatalf("CLUSTER SLOTS of %s names %s, not a node's own address", nd.addr(), n.Addr)
				}
				holders[n.Addr] = true
			}
			covered += s.End - s.Start + 1
		}
		if covered != 16384 {
			c.t.Fatalf("CLUSTER SLOTS of %s covers %d slots", nd.addr(), covered)
		}
		for _, co := range coordinators {
			if !holders[co.addr()] {
				c.t.Fatalf("CLUSTER SLOTS of %s: %s coordinates no slot (holders %v)", nd.addr(), co.addr(), holders)
			}
		}
		if len(holders) != len(coordinators) {
			c.t.Fatalf("CLUSTER SLOTS of %s: slots on %v, want exactly %d coordinators", nd.addr(), holders, len(coordinators))
		}

		st, err := c.status(nd)
		must(c.t, err)
		for _, gone := range c.removed {
			known[gone.addr()] = gone
		}
		for _, n := range st.Nodes {
			if known[n.ClientAddr] == nil {
				c.t.Fatalf("/status of %s names %s, not a node's own address", nd.addr(), n.ClientAddr)
			}
		}
	}
}

// writeKeys writes each scheme's keys with random binary values through a
// cluster-mode client and checks each key's scheme; it returns the values.
func (c *nsCluster) writeKeys(seed uint64) map[string]string {
	c.t.Helper()
	ctx := ctxT(c.t)
	rdb := c.clusterClient()
	rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
	want := map[string]string{}
	for _, s := range netnsSchemes {
		for i := range s.keys {
			k := fmt.Sprintf("netns:%s:%d", s.spec, i)
			v := make([]byte, 1+rng.IntN(s.maxSize))
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			v[0] = 'v' // never memgest's reserved typed-value prefix (\x00\xffmgo)
			must(c.t, rdb.Do(ctx, "SET", k, v, "SCHEME", s.spec).Err())
			want[k] = string(v)
			// Its scheme, and its pieces on distinct nodes: it tolerates
			// the scheme's failures.
			of, err := rdb.Do(ctx, "SCHEME.OF", k).Result()
			f := replyFields(of)
			if err != nil || f["scheme"] != s.spec || f["tolerates"] != int64(s.tolerates) {
				c.t.Fatalf("SCHEME.OF %s = %v, %v; want scheme %s tolerating %d", k, of, err, s.spec, s.tolerates)
			}
		}
	}
	return want
}

// replyFields is a RESP3 map reply, or a RESP2 array of field-value pairs,
// by field.
func replyFields(v any) map[string]any {
	out := map[string]any{}
	switch v := v.(type) {
	case map[any]any:
		for k, x := range v {
			out[fmt.Sprint(k)] = x
		}
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = v[i+1]
		}
	}
	return out
}

// checkKeys reads every key of want through each of via (which forwards
// those it does not coordinate) and through a cluster-mode client, and
// checks each value bit for bit.
func (c *nsCluster) checkKeys(want map[string]string, via ...*nsNode) {
	c.t.Helper()
	ctx := ctxT(c.t)
	check := func(name string, get func(k string) (string, error)) {
		for k, v := range want {
			got, err := get(k)
			if err != nil || got != v {
				c.t.Fatalf("GET %s via %s = %d bytes (equal: %v), %v; want %d bytes", k, name, len(got), got == v, err, len(v))
			}
		}
	}
	for _, nd := range via {
		rdb := c.plain(nd)
		check(nd.addr(), func(k string) (string, error) { return rdb.Get(ctx, k).Result() })
	}
	cl := c.clusterClient()
	check("a cluster client", func(k string) (string, error) { return cl.Get(ctx, k).Result() })
}

// checkStrangersRefused starts memgest on h, a host of the lab network
// that can reach every node, first without the cluster secret (it must
// refuse to start), then with a wrong one: its join reaches n0's peer port
// and is refused there, and the cluster's membership does not change.
func (c *nsCluster) checkStrangersRefused(h *netHost) {
	c.t.Helper()
	before, err := c.status(c.nodes[0])
	must(c.t, err)
	join := []string{"--join", c.nodes[0].peerAddr()}

	noSecret := c.launch(h, c.serverArgs(h, "", join...))
	c.t.Cleanup(func() { noSecret.kill() })
	select {
	case <-noSecret.done:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("memgest without the cluster secret did not exit:\n%s", noSecret.log.String())
	}
	if !strings.Contains(noSecret.log.String(), "--cluster-secret-file") {
		c.t.Fatalf("memgest without the cluster secret exited without naming --cluster-secret-file:\n%s", noSecret.log.String())
	}

	wrong := filepath.Join(c.t.TempDir(), "wrong-secret")
	must(c.t, os.WriteFile(wrong, []byte("a secret that is not this cluster's\n"), 0o600))
	refused := c.authFailures(c.nodes[0], "peer")
	stranger := c.launch(h, c.serverArgs(h, wrong, join...))
	c.t.Cleanup(func() {
		stranger.kill()
		if c.t.Failed() {
			c.t.Logf("log of the stranger %s:\n%s", h.ip, stranger.log.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); c.authFailures(c.nodes[0], "peer") == refused; time.Sleep(50 * time.Millisecond) {
		if !stranger.alive() {
			c.t.Fatalf("the stranger with a wrong secret exited before trying to join:\n%s", stranger.log.String())
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s refused no peer connection from the stranger %s in 30 s", c.nodes[0].addr(), h.ip)
		}
	}
	for _, nd := range c.nodes {
		st, err := c.status(nd)
		must(c.t, err)
		if len(st.Nodes) != len(before.Nodes) {
			c.t.Fatalf("after the stranger's join, %s lists %d nodes, want %d", nd.addr(), len(st.Nodes), len(before.Nodes))
		}
		for _, n := range st.Nodes {
			if strings.HasPrefix(n.ClientAddr, h.ip+":") {
				c.t.Fatalf("the stranger %s joined: %+v", h.ip, n)
			}
		}
	}
	stranger.kill()
}

// pickVictim picks a data node that is not a Raft voter, else one that
// does not lead (no election to wait for either way: with keys of schemes
// that tolerate two failures every node may vote), and a surviving data
// node to watch from.
func (c *nsCluster) pickVictim(data []*nsNode) (victim, watcher *nsNode) {
	c.t.Helper()
	st, err := c.status(data[0])
	must(c.t, err)
	for _, voting := range []bool{false, true} {
		for _, nd := range data {
			if i := nodeLine(st, nd); i >= 0 && st.Nodes[i].Voter == voting && nd.peerAddr() != st.Leader && victim == nil {
				victim = nd
			}
		}
	}
	if victim == nil {
		c.t.Fatalf("every data node leads: %+v", st.Nodes)
	}
	watcher = data[slices.IndexFunc(data, func(nd *nsNode) bool { return nd != victim })]
	return victim, watcher
}

// waitFailed waits until from's CLUSTER NODES flags who failed.
func (c *nsCluster) waitFailed(from, who *nsNode, timeout time.Duration) {
	c.t.Helper()
	ctx := ctxT(c.t)
	rdb := c.plain(from)
	deadline := time.Now().Add(timeout)
	for {
		out, err := rdb.ClusterNodes(ctx).Result()
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[1], who.addr()+"@") && strings.Contains(f[2], "fail") {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not failed in %s's CLUSTER NODES after %s: %v\n%s", who.addr(), from.addr(), timeout, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSpareInUse waits until from's /status shows victim failed, the spare
// up in its place, every other node back to normal, and the rebuild of
// what the victim held done.
func (c *nsCluster) waitSpareInUse(from, victim, spare *nsNode, timeout time.Duration) {
	c.t.Helper()
	c.waitStatus(from, timeout, "spare in use and rebuild done", func(st server.Status) bool {
		v, s := nodeLine(st, victim), nodeLine(st, spare)
		if v < 0 || s < 0 || st.Nodes[v].State != "failed" || st.Nodes[s].State != "up" || st.Nodes[s].Slots == 0 {
			return false
		}
		for i, n := range st.Nodes {
			if i != v && n.Phase != "normal" {
				return false
			}
		}
		r := st.Rebuild
		return st.ShardsRebuilding == 0 && r.KeysTotal > 0 && r.KeysDone == r.KeysTotal && st.Serving()
	})
}

// checkStatusAfterFailure runs `memgest status` from the client namespace
// and checks it shows the victim failed, the spare up with slots and keys,
// and the rebuild done.
func (c *nsCluster) checkStatusAfterFailure(from, victim, spare *nsNode) {
	c.t.Helper()
	out, rows := c.statusTable(from)
	v, s := rows[victim.addr()], rows[spare.addr()]
	if v["STATE"] != "failed" {
		c.t.Fatalf("memgest status does not show %s failed:\n%s", victim.addr(), out)
	}
	if s["STATE"] != "up" || s["SLOTS"] == "0" || s["KEYS"] == "0" {
		c.t.Fatalf("memgest status does not show the spare %s up with slots and keys:\n%s", spare.addr(), out)
	}
	if !strings.Contains(out, "REBUILD done") {
		c.t.Fatalf("memgest status shows no finished rebuild:\n%s", out)
	}
	c.t.Logf("memgest status after the failure, from the client namespace:\n%s", out)
}
