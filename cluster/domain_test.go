package cluster

import (
	"fmt"
	"slices"
	"testing"

	"github.com/memgest/memgest/keyslot"
)

// zoned returns testNode(i) in the given zone and host.
func zoned(i int, zone, host string) Node {
	n := testNode(i)
	n.Zone, n.Host = zone, host
	return n
}

// layout is a cluster's nodes in join order.
type layout struct {
	name  string
	nodes []Node
}

func layouts() []layout {
	var out []layout
	grouped := func(name string, sizes ...int) {
		var ns []Node
		for z, size := range sizes {
			for range size {
				ns = append(ns, zoned(len(ns), fmt.Sprintf("zone-%d", z+1), ""))
			}
		}
		out = append(out, layout{name, ns})
	}
	grouped("9 nodes, 3 zones, joined zone by zone", 3, 3, 3)
	grouped("10 nodes, zones of 4, 3, 3", 4, 3, 3)
	grouped("7 nodes, zones of 5 and 2", 5, 2)
	grouped("12 nodes, 2 zones", 6, 6)
	var rr []Node
	for i := range 9 {
		rr = append(rr, zoned(i, fmt.Sprintf("zone-%d", i%3+1), ""))
	}
	out = append(out, layout{"9 nodes, 3 zones, round robin", rr})
	var hosts []Node // two nodes per host, as the issue's `memgest plan` showed
	for i := range 12 {
		hosts = append(hosts, zoned(i, "", fmt.Sprintf("host-%d", i/2)))
	}
	out = append(out, layout{"12 nodes, 2 per host, no zones", hosts})
	var zh []Node
	for i := range 12 {
		zh = append(zh, zoned(i, fmt.Sprintf("zone-%d", i/4+1), fmt.Sprintf("host-%d", i/2)))
	}
	out = append(out, layout{"12 nodes, 3 zones of 2 hosts of 2", zh})
	return out
}

// bestMost is the least possible maximum count any one group can hold when
// l positions go to distinct members of groups of the given sizes.
func bestMost(sizes map[string]int, l int) int {
	for k := 0; ; k++ {
		fit := 0
		for _, s := range sizes {
			fit += min(s, k)
		}
		if fit >= l {
			return k
		}
	}
}

// checkEven fails unless every prefix of ids spreads over the zones and
// hosts of pool as evenly as pool allows.
func checkEven(t *testing.T, what string, pool []Node, ids []NodeID) {
	t.Helper()
	byID := map[NodeID]Node{}
	zoneSize, hostSize := map[string]int{}, map[string]int{}
	for _, n := range pool {
		byID[n.ID] = n
		zoneSize[n.Zone]++
		hostSize[n.hostKey()]++
	}
	symmetric := true // hosts even within even zones: the host spread is optimal too
	for _, n := range pool {
		symmetric = symmetric && hostSize[n.hostKey()]*len(hostSize) == len(pool) && zoneSize[n.Zone]*len(zoneSize) == len(pool)
	}
	zones, hosts := map[string]int{}, map[string]int{}
	mostZ, mostH := 0, 0
	for l, id := range ids {
		n, ok := byID[id]
		if !ok {
			t.Fatalf("%s: %s not in the pool", what, id)
		}
		zones[n.Zone]++
		hosts[n.hostKey()]++
		mostZ, mostH = max(mostZ, zones[n.Zone]), max(mostH, hosts[n.hostKey()])
		if want := bestMost(zoneSize, l+1); mostZ > want {
			t.Fatalf("%s: the first %d positions put %d in one zone, could be %d: %v", what, l+1, mostZ, want, ids)
		}
		if want := bestMost(hostSize, l+1); symmetric && mostH > want {
			t.Fatalf("%s: the first %d positions put %d on one host, could be %d", what, l+1, mostH, want)
		}
	}
}

// Decision 0021: every choice of a node for a position follows one rule,
// so every prefix of every placement (the positions of every scheme width)
// is spread evenly over zones and hosts: initial placement, spares,
// stand-ins, rebalance. Without domains nothing changes.
func TestPlaceFollowsTheRule(t *testing.T) {
	t.Run("no domains: the rotation", func(t *testing.T) {
		for _, n := range []int{1, 3, 9, 50} {
			ids := testIDs(n)
			for i, sh := range Place(ids, keyslot.Count) {
				if !slices.Equal(sh.Placement, rotate(ids, i)) {
					t.Fatalf("%d nodes, shard %d: %v, want the rotation", n, i, sh.Placement)
				}
			}
		}
	})
	for _, l := range layouts() {
		t.Run(l.name, func(t *testing.T) {
			shards := PlaceNodes(l.nodes, keyslot.Count)
			checkCoverage(t, len(l.nodes), shards)
			first := map[NodeID]int{}
			for _, sh := range shards {
				checkEven(t, fmt.Sprintf("shard %d", sh.ID), l.nodes, sh.Placement)
				first[sh.Placement[0]]++
			}
			for _, n := range l.nodes {
				if first[n.ID] != 1 {
					t.Errorf("node %s coordinates %d shards, want 1", n.ID, first[n.ID])
				}
			}
			if again := PlaceNodes(l.nodes, keyslot.Count); !slices.EqualFunc(shards, again, shardEqual) {
				t.Error("PlaceNodes is not deterministic")
			}
		})
	}
	t.Run("spares", testSparesKeepTheRule)
	t.Run("stand-ins", testStandInsKeepTheRule)
	t.Run("rebalance", testRebalanceKeepsTheRule)
}

// zonedMap forms a map over nodes and creates the schemes.
func zonedMap(t *testing.T, nodes []Node, schemes ...string) *Map {
	t.Helper()
	m := NewMap(len(nodes), 3)
	for _, n := range nodes {
		m = mustApply(t, m, AddNode{Node: n})
	}
	for _, s := range schemes {
		m = mustApply(t, m, CreateScheme{Spec: spec(t, s)})
	}
	return m
}

func threeZones(n int) []Node {
	var ns []Node
	for i := range n {
		ns = append(ns, zoned(i, fmt.Sprintf("zone-%d", i*3/n+1), ""))
	}
	return ns
}

func testSparesKeepTheRule(t *testing.T) {
	nodes := threeZones(9)
	m := zonedMap(t, nodes, "stripe:4+2", "rep:3")
	// Spares in zones 1, 2, 3, joined in that order: the failed node's
	// zone decides, not the join order.
	for i, z := range []string{"zone-1", "zone-2", "zone-3"} {
		m = mustApply(t, m, AddNode{Node: zoned(9+i, z, "")})
	}
	victim := nodes[5] // zone-2
	m = mustApply(t, m, MarkFailed{ID: victim.ID})
	if n, _ := m.Node(testNode(10).ID); n.State != Up {
		t.Fatalf("the zone-2 spare is %s, want up in the failed zone-2 node's places", n.State)
	}
	for _, s := range []string{"stripe:4+2", "rep:3"} {
		if !m.SurvivesDomainLoss(spec(t, s)) {
			t.Errorf("%s no longer survives a zone's loss after a spare took a place", s)
		}
	}
	checkValid(t, m)
}

func testStandInsKeepTheRule(t *testing.T) {
	nodes := threeZones(9)
	m := zonedMap(t, nodes, "stripe:4+2", "rep:3", "rep:2")
	for _, victim := range nodes[:3] { // zone-1, one after the other
		m = mustApply(t, m, MarkFailed{ID: victim.ID})
		var up []Node
		for _, n := range m.Nodes {
			if n.State == Up {
				up = append(up, n)
			}
		}
		for i := range m.Shards {
			for _, w := range []int{2, 3, 6} {
				var ids []NodeID
				for _, h := range m.Holders(&m.Shards[i], w) {
					if h.State == Up {
						ids = append(ids, h.ID)
					}
				}
				checkSpread(t, fmt.Sprintf("shard %d width %d after %s failed", i, w, victim.ID), up, ids)
			}
		}
		checkValid(t, m)
	}
}

// checkSpread fails unless the nodes ids (a scheme's up holders, in no
// particular order) spread over the zones of pool as evenly as pool
// allows.
func checkSpread(t *testing.T, what string, pool []Node, ids []NodeID) {
	t.Helper()
	size, count := map[string]int{}, map[string]int{}
	for _, n := range pool {
		size[n.Zone]++
		if slices.Contains(ids, n.ID) {
			count[n.Zone]++
		}
	}
	for z, c := range count {
		if want := bestMost(size, len(ids)); c > want {
			t.Fatalf("%s: %d holders in %s, could be %d", what, c, z, want)
		}
	}
}

func testRebalanceKeepsTheRule(t *testing.T) {
	nodes := threeZones(9)
	m := zonedMap(t, nodes, "stripe:4+2", "rep:3")
	for i, z := range []string{"zone-1", "zone-2", "zone-3"} {
		n := zoned(9+i, z, "")
		m = mustApply(t, m, AddNode{Node: n}, Promote{ID: n.ID})
	}
	m = mustApply(t, m, Drain{ID: nodes[4].ID})
	m = runRebalance(t, m)
	if m.placedNode(nodes[4].ID) {
		t.Fatal("the drained node is still placed")
	}
	var data []Node
	for _, n := range m.Nodes {
		if n.State == Up {
			data = append(data, n)
		}
	}
	moved := 0
	for _, sh := range m.Shards {
		if !sh.Retired && sh.ID >= len(nodes) { // a shard a migration placed
			checkEven(t, fmt.Sprintf("migrated shard %d", sh.ID), data, sh.Placement[:m.widestScheme()])
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("the rebalance placed no shard")
	}
	for _, s := range []string{"stripe:4+2", "rep:3"} {
		if !m.SurvivesDomainLoss(spec(t, s)) {
			t.Errorf("%s does not survive a zone's loss after the rebalance", s)
		}
	}
}

// SurvivesDomainLoss: 9 nodes in 3 zones hold every scheme of width ≤ 6
// and tolerance ≥ width/3; a width-8 scheme of tolerance 2 puts 3
// positions in some zone.
func TestSurvivesDomainLoss(t *testing.T) {
	m := zonedMap(t, threeZones(9), "rep:3", "stripe:4+2", "hybrid:4+2", "split:4+2", "stripe:6+2", "rep:1")
	if got := m.DomainKind(); got != "zone" {
		t.Errorf("DomainKind %q, want zone", got)
	}
	for s, want := range map[string]bool{"rep:3": true, "stripe:4+2": true, "hybrid:4+2": true, "split:4+2": true, "stripe:6+2": false, "rep:1": false} {
		if got := m.SurvivesDomainLoss(spec(t, s)); got != want {
			t.Errorf("%s: survives %v, want %v", s, got, want)
		}
	}
	plain := formed(t, 9, 0)
	if got := plain.DomainKind(); got != "node" {
		t.Errorf("no domains: DomainKind %q, want node", got)
	}
	if !plain.SurvivesDomainLoss(spec(t, "rep:2")) || plain.SurvivesDomainLoss(spec(t, "rep:1")) {
		t.Error("without domains a node is its own domain")
	}
}

// CheckNode refuses zone and host names the map could not show.
func TestDomainNamesChecked(t *testing.T) {
	for _, bad := range []string{"zone a", "zone\n", string(make([]byte, MaxDomainLen+1))} {
		if err := CheckNode(zoned(1, bad, "")); err == nil {
			t.Errorf("zone %q accepted", bad)
		}
		if err := CheckNode(zoned(1, "", bad)); err == nil {
			t.Errorf("host %q accepted", bad)
		}
	}
	if err := CheckNode(zoned(1, "us-east-1a", "k8s/node-3.example")); err != nil {
		t.Error(err)
	}
}

// A joining node's domains travel in its AddNode.
func TestAddNodeCarriesDomains(t *testing.T) {
	in := AddNode{Node: zoned(3, "zone-2", "rack-7")}
	b, err := EncodeCommand(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeCommand(b)
	if got := out.(AddNode).Node; err != nil || got.Zone != "zone-2" || got.Host != "rack-7" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
}
