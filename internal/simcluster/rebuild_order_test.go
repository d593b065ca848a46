package simcluster_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/repair"
)

// orderSchemes are the schemes of TestRebuildOrderLeastRedundancyFirst:
// one kind of each rebuild path (copies, decodes, stripe lists, hybrid
// lists), and rep:4, whose keys keep two failures to spare where a
// neighbour of theirs failed.
// The stripe and hybrid ones have 512-byte chunks, so that a node's keys
// fill several, at several of its list positions.
var orderSchemes = []string{"rep:3", "rep:4", "split:4+2", "stripe:4+2/512", "hybrid:4+2/512"}

// orderKeys is how many keys of each of orderSchemes each node
// coordinates, and orderTolerance their scheme's tolerance.
var (
	orderKeys      = map[string]int{"rep:3": 12, "rep:4": 12, "split:4+2": 12, "stripe:4+2/512": 40, "hybrid:4+2/512": 40}
	orderTolerance = map[string]int64{"rep:3": 2, "rep:4": 3, "split:4+2": 2, "stripe:4+2/512": 2, "hybrid:4+2/512": 2}
)

// TestRebuildOrderLeastRedundancyFirst (issue 43, item 5): eight data
// nodes, each coordinating keys of every scheme of orderSchemes; two ring
// neighbours a and a+1 (at most one a voter) die at once. Node a+2 takes
// over both their shards, whose keys are left with 0 failures to spare
// (shard a: rep:3, split:4+2, stripe:4+2 lost two positions), 1 (shard
// a's rep:4 and hybrid:4+2, shard a+1's rep:3, split, stripe, hybrid) or
// 2 (shard a+1's rep:4); the other nodes' shards lose one or two
// positions. Every node's rebuild event log must show each step of a
// level ended before any step of a higher level began (within one round,
// one plan of the node's work), across shards and kinds; node a+2's must
// hold steps of levels 0, 1 and 2, from both shards, copies, decodes and a
// stripe list among its level-0 steps. Once rebuilt, every key reads back
// with its scheme's full tolerance.
func TestRebuildOrderLeastRedundancyFirst(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 8,
		Configure: func(_ int, cfg *server.Config) { cfg.RebuildRate = 64 << 10 }}) // slow enough to watch the gauge
	var keys []*written
	for i := range c.Len() {
		for _, spec := range orderSchemes {
			for j := range orderKeys[spec] {
				k := c.KeyOn(i, fmt.Sprintf("o%d:%s:%d:", i, spec, j))
				w := &written{key: k, spec: spec, value: orderValue(c, spec, k)}
				expect(t, "SET "+k, c.Do(c.AnyLive(), "SET", k, w.value, "SCHEME", spec), "+OK")
				keys = append(keys, w)
			}
		}
	}
	c.AwaitDirectory(2 * 12 * 3 * c.Len()) // the rep and split keys
	victims := neighboursWithOneVoter(t, c)
	successor := (victims[1] + 1) % c.Len()
	for _, v := range victims {
		c.Kill(v)
	}
	c.FailOver(victims...)
	samples := samplePending(t, c, successor)
	awaitReadable(t, c, keys)
	c.Settle("rebuilt")
	for i := range c.Len() {
		if c.Alive(i) {
			checkLevelOrder(t, i, c.Node(i).RebuildEvents())
			if p := pendingOf(t, c, i); slices.ContainsFunc(p, func(b int64) bool { return b != 0 }) {
				t.Fatalf("node %d still has bytes to rebuild once rebuilt: %v", i, p)
			}
		}
	}
	checkSuccessorWork(t, c.Node(successor).RebuildEvents())
	checkPendingSamples(t, samples)

	for _, w := range keys {
		expectValue(t, "GET "+w.key+" after the rebuild", c.Do(c.AnyLive(), "GET", w.key), w.value)
		f := simcluster.Fields(c.Do(c.AnyLive(), "SCHEME.OF", w.key))
		if want := orderTolerance[w.spec]; f["tolerates"].Int() != want {
			t.Fatalf("SCHEME.OF %s after the rebuild: tolerates %d, want %d", w.key, f["tolerates"].Int(), want)
		}
		if v := simcluster.Fields(c.Do(c.AnyLive(), "SCHEME.VERIFY", w.key)); v["unavailable"].Int() != 0 || len(v["problems"].Items()) != 0 {
			t.Fatalf("SCHEME.VERIFY %s after the rebuild: %s", w.key, simcluster.Render(c.Do(c.AnyLive(), "SCHEME.VERIFY", w.key)))
		}
	}
}

// pendingOf is node i's INFO rebuild_pending_bytes, by level.
func pendingOf(t *testing.T, c *simcluster.Cluster, i int) []int64 {
	t.Helper()
	var out []int64
	for part := range strings.SplitSeq(field(t, c.DoQuiet(i, "INFO", "memgest").Text(), "rebuild_pending_bytes"), ",") {
		level, b, _ := strings.Cut(part, "=")
		v, err := strconv.ParseInt(b, 10, 64)
		if err != nil || level != strconv.Itoa(len(out)) {
			t.Fatalf("INFO rebuild_pending_bytes has %q", part)
		}
		out = append(out, v)
	}
	return out
}

// samplePending reads node i's bytes still to rebuild by level every few
// milliseconds until the shards it coordinates are rebuilt.
func samplePending(t *testing.T, c *simcluster.Cluster, i int) [][]int64 {
	t.Helper()
	var out [][]int64
	c.Until("node's shards rebuilt", func() (bool, string) {
		out = append(out, pendingOf(t, c, i))
		m := c.Node(i).Map()
		for _, sh := range m.Shards {
			if co, ok := m.CoordinatorOf(&sh); ok && co.ID == c.Node(i).ID() && (len(sh.Rebuild) > 0 || sh.Recovering) {
				return false, fmt.Sprintf("shard %d: rebuild %v, recovering %v", sh.ID, sh.Rebuild, sh.Recovering)
			}
		}
		return true, ""
	})
	return out
}

// checkPendingSamples fails the test unless the successor's gauge showed
// bytes at level 0, then none there with bytes left at level 1, and
// never fewer at a level than an earlier sample showed while a lower
// level still had bytes (nothing of a level done before the levels
// below), within one plan (a plan starts when a level rises).
func checkPendingSamples(t *testing.T, samples [][]int64) {
	t.Helper()
	sawLevel0, sawOrder := false, false
	for i, s := range samples {
		sawLevel0 = sawLevel0 || s[0] > 0
		sawOrder = sawOrder || sawLevel0 && s[0] == 0 && s[1] > 0
		if i == 0 || rose(samples[i-1], s) {
			continue
		}
		for lo := range s {
			for hi := lo + 1; hi < len(s) && s[lo] > 0; hi++ {
				if s[hi] < samples[i-1][hi] {
					t.Fatalf("level %d went from %d to %d bytes while level %d still had %d (samples %v then %v)",
						hi, samples[i-1][hi], s[hi], lo, s[lo], samples[i-1], s)
				}
			}
		}
	}
	t.Logf("%d samples of the successor's bytes to rebuild, the first %v, the last %v", len(samples), samples[0], samples[len(samples)-1])
	if !sawLevel0 || !sawOrder {
		t.Fatalf("in %d samples of the successor's bytes to rebuild: level 0 seen pending %v, then done with level 1 pending %v",
			len(samples), sawLevel0, sawOrder)
	}
}

// rose says whether some level has more bytes in s than in prev: a new
// plan.
func rose(prev, s []int64) bool {
	for l := range s {
		if l < len(prev) && s[l] > prev[l] {
			return true
		}
	}
	return false
}

// TestRebuildReplansAfterASecondFailure (issue 43: "after a second
// failure, the keys with no redundancy left must be re-protected
// first"): eight nodes with rep:3 and split:4+2 keys; node a dies, and
// while a+1 (its successor) rebuilds a's keys, which have a failure to
// spare, at a slow --rebuild-rate, a+2 dies too, leaving some of them
// with none. The running round stops before the next begins (none of
// its steps ends after one of the next begins), and the next, planned
// on the new map, starts at level 0; within each round the levels go in
// order. Every key then reads back with its full tolerance.
func TestRebuildReplansAfterASecondFailure(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 8,
		Configure: func(_ int, cfg *server.Config) { cfg.RebuildRate = 16 << 10 }})
	var keys []*written
	for i := range c.Len() {
		for _, spec := range []string{"rep:3", "split:4+2"} {
			for j := range 12 {
				k := c.KeyOn(i, fmt.Sprintf("s%d:%s:%d:", i, spec, j))
				w := &written{key: k, spec: spec, value: value(c, spec, k)}
				expect(t, "SET "+k, c.Do(c.AnyLive(), "SET", k, w.value, "SCHEME", spec), "+OK")
				keys = append(keys, w)
			}
		}
	}
	c.AwaitDirectory(2 * 12 * 2 * c.Len())
	victims := ringWithOneVoter(t, c, 0, 2)
	successor := (victims[0] + 1) % c.Len()
	c.Kill(victims[0])
	c.FailOver(victims[0])
	c.Until("the successor's rebuild under way", func() (bool, string) {
		return len(c.Node(successor).RebuildEvents()) > 0, "no step yet"
	})
	c.Kill(victims[1])
	c.FailOver(victims[1])
	awaitReadable(t, c, keys)
	c.Settle("rebuilt")
	events := c.Node(successor).RebuildEvents()
	checkLevelOrder(t, successor, events)
	checkRoundsApart(t, events)
	for _, w := range keys {
		expectValue(t, "GET "+w.key+" after the rebuild", c.Do(c.AnyLive(), "GET", w.key), w.value)
		checkSchemeOf(t, c, w.key, w.spec, 2)
	}
}

// ringWithOneVoter returns the data nodes at ring offsets from a start
// drawn from the seed, the first such set with at most one Raft voter.
func ringWithOneVoter(t *testing.T, c *simcluster.Cluster, offsets ...int) []int {
	t.Helper()
	start := c.Rand().IntN(c.Len())
	for s := range c.Len() {
		var out []int
		voters := 0
		for _, o := range offsets {
			v := (start + s + o) % c.Len()
			out = append(out, v)
			if c.MapNode(v).Voter {
				voters++
			}
		}
		if voters <= 1 {
			return out
		}
	}
	t.Fatalf("every rotation of %v has two voters", offsets)
	return nil
}

// checkRoundsApart fails the test unless the log holds two rounds at
// least, each ending before the next begins, the last starting at
// level 0.
func checkRoundsApart(t *testing.T, events []repair.RebuildEvent) {
	t.Helper()
	first, last := map[uint64]uint64{}, map[uint64]uint64{}
	var rounds []uint64
	for _, e := range events {
		if _, ok := first[e.Round]; !ok {
			rounds = append(rounds, e.Round)
			first[e.Round] = e.Begin
		}
		first[e.Round], last[e.Round] = min(first[e.Round], e.Begin), max(last[e.Round], e.End)
	}
	slices.Sort(rounds)
	if len(rounds) < 2 {
		t.Fatalf("the successor's rebuild ran rounds %v; want a second planned after the second failure", rounds)
	}
	for i := 1; i < len(rounds); i++ {
		if last[rounds[i-1]] > first[rounds[i]] {
			t.Fatalf("round %d's steps went on (until step %d) after round %d began (step %d)", rounds[i-1], last[rounds[i-1]], rounds[i], first[rounds[i]])
		}
	}
	final := rounds[len(rounds)-1]
	for _, e := range events {
		if e.Round == final && e.Begin == first[final] && e.Level != 0 {
			t.Fatalf("the last round began with %s of shard %d at level %d, want level 0", e.What, e.Shard, e.Level)
		}
	}
}

// orderValue is a value for key of spec, as value draws one for the
// scheme of scenarios_test.go it is like.
func orderValue(c *simcluster.Cluster, spec, key string) string {
	like := map[string]string{"rep:4": "rep:3", "stripe:4+2/512": "stripe:4+2", "hybrid:4+2/512": "hybrid:4+2"}
	if l, ok := like[spec]; ok {
		spec = l
	}
	return value(c, spec, key)
}

// neighboursWithOneVoter returns two data nodes next to each other on the
// ring (a and a+1) of which at most one is a Raft voter.
func neighboursWithOneVoter(t *testing.T, c *simcluster.Cluster) []int {
	t.Helper()
	start := c.Rand().IntN(c.Len())
	for s := range c.Len() {
		a, b := (start+s)%c.Len(), (start+s+1)%c.Len()
		if !c.MapNode(a).Voter || !c.MapNode(b).Voter {
			return []int{a, b}
		}
	}
	t.Fatal("every two neighbours are voters")
	return nil
}

// checkLevelOrder fails the test if, within a round of node i's rebuild,
// a step of a level began before every step of a lower level had ended.
func checkLevelOrder(t *testing.T, i int, events []repair.RebuildEvent) {
	t.Helper()
	byRound := map[uint64][]repair.RebuildEvent{}
	for _, e := range events {
		byRound[e.Round] = append(byRound[e.Round], e)
	}
	for round, evs := range byRound {
		for _, lo := range evs {
			for _, hi := range evs {
				if hi.Level > lo.Level && hi.Begin < lo.End {
					t.Fatalf("node %d, round %d: %s of shard %d at level %d began (step %d) before %s of shard %d at level %d ended (step %d)",
						i, round, hi.What, hi.Shard, hi.Level, hi.Begin, lo.What, lo.Shard, lo.Level, lo.End)
				}
			}
		}
	}
}

// checkSuccessorWork fails the test unless the victims' successor rebuilt
// pieces at levels 0, 1 and 2, of two shards at least, with copies,
// decodes and a stripe list among its level-0 steps: the order checked
// was one across shards and kinds.
func checkSuccessorWork(t *testing.T, events []repair.RebuildEvent) {
	t.Helper()
	levels, shards, zero := map[int]bool{}, map[int]bool{}, map[string]bool{}
	for _, e := range events {
		levels[e.Level], shards[e.Shard] = true, true
		if e.Level == 0 {
			zero[strings.Fields(e.What)[0]] = true
		}
	}
	var kinds []string
	for w := range zero {
		kinds = append(kinds, w)
	}
	slices.Sort(kinds)
	if !levels[0] || !levels[1] || !levels[2] || len(shards) < 2 || !zero["copies"] || !zero["decodes"] || !zero["list"] {
		t.Fatalf("the successor's rebuild: levels %v, shards %v, level-0 steps %v; want levels 0-2 of two shards, with copies, decodes and a stripe list at 0",
			levels, shards, kinds)
	}
}
