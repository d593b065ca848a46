package simcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server/resp"
)

// TestKillSequence is issue 4's sequence (tests/killsequence_test.go, with
// 300 keys of each scheme instead of 3,400) on six nodes and a spare:
//
// In steps 1 and 2 a reader on a surviving node reads the rep:3 and
// split:4+2 keys throughout detection, recovery and rebuild: any error but
// -LOST may be retried, nil, -LOST or another value fails the test.
//
//  1. a non-voter dies: the spare takes its places, the rebuild completes;
//  2. a voter dies, with no spare left: survivors stand in, the rebuild
//     completes, the vote passes on;
//  3. two of the five nodes left die at once, drawn from the seed, beyond
//     split:4+2's tolerance for some keys: exactly the split keys left
//     with fewer than four live shards, and the none keys of every dead
//     coordinator, answer -LOST (split ones naming the scheme's lost
//     pieces); every other key reads back its value. Every live node
//     votes by then (rep:3 and split:4+2 call for five voters), so the
//     pair takes two voters, which the control plane survives.
func TestKillSequence(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6, Spares: 1})
	keys := sequenceLoad(t, c, 300)
	c.Settle("loaded") // five voters
	lost := map[string]bool{}
	dead := []int{nonVoter(t, c)}
	killStep(t, c, "step 1", keys, lost, dead)
	dead = append(dead, voter(t, c))
	killStep(t, c, "step 2", keys, lost, dead[1:])
	rest := c.LiveNodes() // the spare, placed in step 1, too
	c.Rand().Shuffle(len(rest), func(a, b int) { rest[a], rest[b] = rest[b], rest[a] })
	rest = rest[:2]
	slices.Sort(rest)
	splitHolders(t, c, keys, rest, lost)
	killStep(t, c, "step 3", keys, lost, rest)
}

// sequenceLoad writes perScheme keys of none, rep:3 and split:4+2.
func sequenceLoad(t *testing.T, c *simcluster.Cluster, perScheme int) []*written {
	t.Helper()
	return writeKeys(t, c, []string{"none", "rep:3", "split:4+2"}, perScheme)
}

// writeKeys writes perScheme keys "<spec>:<i>" of each of specs and waits
// until the directory names those it keeps entries for, twice.
func writeKeys(t *testing.T, c *simcluster.Cluster, specs []string, perScheme int) []*written {
	t.Helper()
	var keys []*written
	for _, spec := range specs {
		for i := range perScheme {
			k := fmt.Sprintf("%s:%d", spec, i)
			w := &written{key: k, spec: spec, value: value(c, spec, k)}
			if r := c.DoQuiet(c.AnyLive(), "SET", k, w.value, "SCHEME", spec); r.Text() != "OK" {
				t.Fatalf("SET %s = %s", k, simcluster.Render(r))
			}
			keys = append(keys, w)
		}
	}
	c.AwaitDirectory(2 * directoryNamed(keys))
	return keys
}

// voter draws a live voter from the seed.
func voter(t *testing.T, c *simcluster.Cluster) int {
	t.Helper()
	var voters []int
	for i := range c.Len() {
		if c.Alive(i) && c.MapNode(i).Voter {
			voters = append(voters, i)
		}
	}
	return voters[c.Rand().IntN(len(voters))]
}

// splitHolders marks lost the split keys that keep fewer than four live
// shards once victims die too.
func splitHolders(t *testing.T, c *simcluster.Cluster, keys []*written, victims []int, lost map[string]bool) {
	t.Helper()
	for _, w := range keys {
		if w.spec != "split:4+2" {
			continue
		}
		live := 0
		for _, p := range simcluster.Fields(c.DoQuiet(c.AnyLiveFirst(), "SCHEME.OF", w.key))["pieces"].Items() {
			row := p.Items()
			holder := c.Index(cluster.NodeID(row[2].Text()))
			if row[0].Text() == "shard" && c.Alive(holder) && !slices.Contains(victims, holder) {
				live++
			}
		}
		if live < 4 {
			lost[w.key] = true
		}
	}
}

// killStep kills victims at once (after marking lost the none keys they
// coordinate), fails them over, waits for the rebuild, and checks every
// key: -LOST exactly where lost says, its value elsewhere.
func killStep(t *testing.T, c *simcluster.Cluster, step string, keys []*written, lost map[string]bool, victims []int) {
	t.Helper()
	for _, w := range keys {
		if w.spec == "none" && slices.Contains(victims, c.Coordinator(w.key)) {
			lost[w.key] = true
		}
	}
	var halt func() string
	if len(victims) == 1 { // within every redundant scheme's tolerance
		halt = readThroughout(c, keys, survivor(c, victims))
	}
	for _, v := range victims {
		c.Kill(v)
	}
	c.FailOver(victims...)
	c.Settle(step)
	if halt != nil {
		if bad := halt(); bad != "" {
			t.Fatalf("%s: a read during the failover: %s", step, bad)
		}
	}
	reader, nLost := c.AnyLive(), 0
	for _, w := range keys {
		r := c.DoQuiet(reader, "GET", w.key)
		switch {
		case lost[w.key] && strings.HasPrefix(r.Text(), "LOST"):
			nLost++
			if w.spec == "split:4+2" && !strings.Contains(r.Text(), "split:4+2 lost") {
				t.Fatalf("%s: lost split key %s = %s; want the scheme and the pieces lost named", step, w.key, r.Text())
			}
		case lost[w.key]:
			t.Fatalf("%s: GET %s (%s), lost = %s, want -LOST", step, w.key, w.spec, simcluster.Render(r))
		case r.Kind() != resp.KindBulk || r.Text() != w.value:
			t.Fatalf("%s: GET %s (%s) = %s, want its value", step, w.key, w.spec, simcluster.Render(r))
		}
	}
	c.Note("%s: %d keys -LOST", step, nLost)
	t.Logf("%s: nodes %v killed, %d of %d keys -LOST as expected", step, victims, nLost, len(keys))
}

// survivor is the lowest-index live node that is not a victim.
func survivor(c *simcluster.Cluster, victims []int) int {
	for i := range c.Len() {
		if c.Alive(i) && !slices.Contains(victims, i) {
			return i
		}
	}
	return -1
}

// readThroughout reads the rep:3 and split:4+2 keys on node reader, round
// after round, untraced, until the returned halt is called; halt returns
// the first bad answer (nil, -LOST or another value), or "".
func readThroughout(c *simcluster.Cluster, keys []*written, reader int) (halt func() string) {
	stop, done := make(chan struct{}), make(chan string)
	go func() {
		bad := ""
		for {
			for _, w := range keys {
				if w.spec == "none" || bad != "" {
					continue
				}
				r := c.DoQuiet(reader, "GET", w.key)
				if r.IsNil() || strings.HasPrefix(r.Text(), "LOST") || (r.Kind() == resp.KindBulk && r.Text() != w.value) {
					bad = w.key + " = " + simcluster.Render(r)
				}
			}
			select {
			case <-stop:
				done <- bad
				return
			default:
			}
		}
	}()
	return func() string {
		close(stop)
		return <-done
	}
}
