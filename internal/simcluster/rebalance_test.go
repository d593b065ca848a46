package simcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
)

// Growing by one node and shrinking by one, through the commands an
// operator sends (decision 0016): NODE.PROMOTE and REBALANCE give the new
// node its share of the slots; NODE.DRAIN moves everything off a voter,
// which hands its vote over and leaves Raft and the map. Keys of every
// scheme read back bit-exact, and readers never miss one meanwhile. Under
// each move, clients SET, GET and DEL other keys of every scheme, and
// their history is linearizable (porcupine).
func TestRebalanceGrowsAndDrainsByCommand(t *testing.T) {
	c := simcluster.Start(t, 2929, simcluster.Options{Nodes: 6, Spares: 1})
	spare := c.Len() - 1
	want := writeEverySchemeKeys(t, c, 180)

	before := c.Node(0).Map()
	stop, check := readWhile(t, c, want, func() []int { return c.LiveNodes() }, false)
	stopLoad, checkLoad := startRegisterLoad(t, c, "lingrow", 48, 3, c.LiveNodes)
	expect(t, "NODE.PROMOTE", c.Do(0, "NODE.PROMOTE", string(c.Node(spare).NodeID)), "+OK")
	expect(t, "REBALANCE", c.Do(0, "REBALANCE", "PARALLEL", "3"), "+OK")
	c.WaitMap("the rebalance done", func(m *cluster.Map) bool { return m.Rebalance == nil && !m.Migrating() })
	stop()
	stopLoad()
	check("during the rebalance")
	m := c.Node(0).Map()
	requireMoved(t, before, m, checkLoad("the load during the rebalance"))
	if got, share := coordinatedSlots(m, c.Node(spare).NodeID), 16384/7; got < share-64 || got > share+64 {
		t.Fatalf("the new node coordinates %d slots, its share is %d", got, share)
	}
	readAll(t, c, want, "after growing")

	leaving := -1
	for i := range 6 {
		if n, _ := m.Node(c.Node(i).NodeID); n.Voter && !c.Node(i).IsLeader() {
			leaving = i
			break
		}
	}
	stayers := func() []int {
		var out []int
		for i := range c.Len() {
			if i != leaving {
				out = append(out, i)
			}
		}
		return out
	}
	before = m
	stop, check = readWhile(t, c, want, stayers, false)
	stopLoad, checkLoad = startRegisterLoad(t, c, "lindrain", 48, 3, stayers)
	expect(t, "NODE.DRAIN", c.Do(0, "NODE.DRAIN", string(c.Node(leaving).NodeID)), "+OK")
	gone := c.Node(leaving).NodeID
	c.Until("the drained node removed", func() (bool, string) {
		// Asked of a node that stays: the drained one left Raft.
		m := c.Node(stayers()[0]).Map()
		n, _ := m.Node(gone)
		var sh []string
		for _, s := range m.Shards {
			if !s.Retired {
				var p []string
				for _, id := range s.Placement {
					p = append(p, fmt.Sprint(c.Index(id)))
				}
				sh = append(sh, fmt.Sprintf("%d[%d-%d imp=%v from=%d]%v", s.ID, s.First, s.Last, s.Importing, s.From, p))
			}
		}
		return n.State == cluster.Left && !m.Migrating() && m.Rebalance == nil, fmt.Sprintf("epoch %d: %s %v", m.Epoch, n.State, sh)
	})
	// It stayed in Raft until the map said so (Plane.HandOverVote), so it
	// knows: it redirects rather than forward from a map it can no
	// longer keep up to date.
	c.Until("the drained node sees itself left", func() (bool, string) {
		n, _ := c.Node(leaving).Map().Node(gone)
		return n.State == cluster.Left, n.State.String()
	})
	if r := c.Do(leaving, "GET", "lindrain:0"); !strings.HasPrefix(r.Text(), "MOVED ") {
		t.Errorf("GET on the drained node: %s, want MOVED to the key's coordinator", simcluster.Render(r))
	}
	stop()
	stopLoad()
	c.Kill(leaving) // the operator stops the process

	check("during the drain")
	m = c.Node(stayers()[0]).Map()
	requireMoved(t, before, m, checkLoad("the load during the drain"))
	requireVoters(t, m, 5, "after the drain") // its schemes tolerate two failures (cluster.VoterTarget)
	for _, i := range stayers() {
		if got, share := coordinatedSlots(m, c.Node(i).NodeID), 16384/6; got < share-64 || got > share+64 {
			t.Errorf("node %d coordinates %d slots after the drain, its share is %d", i, got, share)
		}
	}
	for _, sh := range m.Shards {
		if !sh.Retired && slices.Contains(sh.Placement, gone) {
			t.Errorf("shard %d still places the drained node", sh.ID)
		}
	}
	// Nor does a retired shard's stripe list it held a position of still
	// hold objects (decision 0003: any data node appends to any list it
	// has a data position in), which would have lost that position for
	// good: the nodes moved them out before it left.
	for _, i := range stayers() {
		for _, g := range c.Node(i).StripeLists() {
			if sh := m.Shards[g]; sh.Retired && slices.Contains(sh.Placement, gone) {
				t.Errorf("node %d still holds stripe objects in list %d, a retired shard that placed the drained node", i, g)
			}
		}
	}
	for _, i := range stayers() {
		if got := simcluster.Render(c.Do(i, "GET", "absent-key")); got != "nil" {
			t.Fatalf("node %d: %s", i, got)
		}
	}
	readAllOn(t, c, want, "after the drain", stayers())
}

// writeEverySchemeKeys writes n keys spread over none, rep:3, split:4+2
// and stripe:4+2, some with a TTL, and returns their values.
func writeEverySchemeKeys(t *testing.T, c *simcluster.Cluster, n int) map[string]string {
	t.Helper()
	schemes := []string{"none", "rep:3", "split:4+2", "stripe:4+2"}
	want := map[string]string{}
	for i := range n {
		k := fmt.Sprintf("grow:%d", i)
		v := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i%200))
		args := []string{"SET", k, v, "SCHEME", schemes[i%len(schemes)]}
		if i%7 == 0 {
			args = append(args, "EX", "3600")
		}
		expect(t, "SET "+k, c.Do(i%c.Len(), args...), "+OK")
		want[k] = v
	}
	return want
}

// readWhile reads want's keys in a loop through nodes() until stop; check
// fails the test with the first wrong answer (a MOVED or TRYAGAIN of maps
// in flux is what a client follows or retries, not an error; with
// failing, so is a forward to a node that died before the map said so).
func readWhile(t *testing.T, c *simcluster.Cluster, want map[string]string, nodes func() []int, failing bool) (stop func(), check func(string)) {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var done atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Pointer[string]
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !done.Load() && bad.Load() == nil; i++ {
			ns := nodes()
			k := keys[i%len(keys)]
			got := c.DoQuiet(ns[i%len(ns)], "GET", k).Text()
			if strings.HasPrefix(got, "MOVED ") || strings.HasPrefix(got, "TRYAGAIN ") ||
				(failing && strings.HasPrefix(got, "ERR memgest: forwarding to coordinator")) {
				continue
			}
			if got != want[k] {
				msg := fmt.Sprintf("GET %s (slot %d) = %.80s", k, keyslot.Of([]byte(k)), got)
				bad.Store(&msg)
			}
		}
	}()
	stop = func() { done.Store(true); wg.Wait() }
	t.Cleanup(stop) // a test that ends early stops its reader before its nodes
	return stop, func(when string) {
		t.Helper()
		if m := bad.Load(); m != nil {
			t.Fatalf("%s: %s", when, *m)
		}
	}
}

func readAll(t *testing.T, c *simcluster.Cluster, want map[string]string, when string) {
	t.Helper()
	readAllOn(t, c, want, when, c.LiveNodes())
}

// readAllOn reads every key of want through each of nodes in turn.
func readAllOn(t *testing.T, c *simcluster.Cluster, want map[string]string, when string, nodes []int) {
	t.Helper()
	i := 0
	for k, v := range want {
		if got := c.Do(nodes[i%len(nodes)], "GET", k).Text(); got != v {
			t.Fatalf("%s: GET %s = %.80q, want %.80q", when, k, got, v)
		}
		i++
	}
}

// requireMoved fails the test unless some of keys changed coordinator
// between the maps before and after: a load whose keys all stayed put
// tested nothing of the move.
func requireMoved(t *testing.T, before, after *cluster.Map, keys []string) {
	t.Helper()
	moved := 0
	for _, k := range keys {
		s := keyslot.Of([]byte(k))
		from, _ := before.Coordinator(s)
		to, _ := after.Coordinator(s)
		if from.ID != to.ID {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("none of the load's %d keys moved", len(keys))
	}
	t.Logf("%d of the load's %d keys moved", moved, len(keys))
}

// coordinatedSlots counts the slots m routes to id.
func coordinatedSlots(m *cluster.Map, id cluster.NodeID) int {
	n := 0
	for s := range keyslot.Count {
		if c, ok := m.Coordinator(s); ok && c.ID == id {
			n++
		}
	}
	return n
}

// Draining the Raft leader: it hands leadership to another voter first
// (handOverLeadership), whose rebalance loop hands its vote over and
// removes it, so that no entry it committed waits for an election to be
// known as committed. Keys of every scheme read back on the nodes that
// stay, and the old leader, which saw itself marked left, redirects.
func TestDrainTheLeader(t *testing.T) {
	c := simcluster.Start(t, 2930, simcluster.Options{Nodes: 6, Spares: 1})
	want := writeEverySchemeKeys(t, c, 60)
	expect(t, "NODE.PROMOTE", c.Do(0, "NODE.PROMOTE", string(c.Node(c.Len()-1).NodeID)), "+OK")
	leader := c.Leader()
	gone := c.Node(leader).NodeID
	var stayers []int
	for i := range c.Len() {
		if i != leader {
			stayers = append(stayers, i)
		}
	}
	expect(t, "NODE.DRAIN", c.Do(leader, "NODE.DRAIN", string(gone)), "+OK")
	c.Until("the drained leader removed", func() (bool, string) {
		m := c.Node(stayers[0]).Map()
		n, _ := m.Node(gone)
		return n.State == cluster.Left && !m.Migrating() && m.Rebalance == nil, fmt.Sprintf("epoch %d: %s", m.Epoch, n.State)
	})
	c.Until("the old leader sees itself left", func() (bool, string) {
		n, _ := c.Node(leader).Map().Node(gone)
		return n.State == cluster.Left, n.State.String()
	})
	if c.Node(leader).IsLeader() {
		t.Fatal("the drained node still leads")
	}
	m := c.Node(stayers[0]).Map()
	requireVoters(t, m, 5, "after draining the leader") // rep:3 keys: five voters (cluster.VoterTarget)
	if r := c.Do(leader, "GET", "absent-key"); !strings.HasPrefix(r.Text(), "MOVED ") {
		t.Errorf("GET on the drained leader: %s, want MOVED", simcluster.Render(r))
	}
	readAllOn(t, c, want, "after draining the leader", stayers)
}

// requireVoters fails the test unless m has want up voters.
func requireVoters(t *testing.T, m *cluster.Map, want int, when string) {
	t.Helper()
	voters := 0
	for _, n := range m.Nodes {
		if n.Voter && n.State == cluster.Up {
			voters++
		}
	}
	if voters != want {
		t.Errorf("%d voters %s, want %d", voters, when, want)
	}
}
