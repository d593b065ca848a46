package simcluster_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

// TestLossReportsOutliveTheRecoverer (issue 43 §2): keys lost beyond
// their tolerance answer -LOST; the nodes that recovered the victims'
// shards, and so kept the reports, then fail too. Every key that answered
// -LOST still does — the reports are in the map, not in a dead node's
// memory (decision 0005 kept them there, and such keys read as absent) —
// and every other key answers its value or -LOST, never nil.
func TestLossReportsOutliveTheRecoverer(t *testing.T) {
	seed := simcluster.Seed(t)
	// (The voter-and-directory pattern is left out: with some seeds, 447569
	// among them, the second failure leaves a shard recovering for good —
	// its stripe holders disagree on updates the dead recoverer was
	// sending, with too few left to settle them — a fault of beyond-
	// tolerance recovery, not of the reports; issue 43's note.)
	for _, p := range []lossPattern{
		{name: "data-and-parity-holders", offsets: []int{0, 1, 2}, spares: 2},
	} {
		t.Run(p.name, func(t *testing.T) {
			c := simcluster.Start(t, seed, simcluster.Options{Nodes: 6, Spares: p.spares})
			keys := lossLoad(t, c, false)
			c.Settle("loaded") // the voters grown to the schemes' tolerance
			victims := p.victims(t, c)
			c.AwaitDirectory(2 * directoryNamed(keys))
			for _, v := range victims {
				c.Kill(v)
			}
			c.FailOver(victims...)
			lost := readLossy(t, c, keys, nil)
			recoverers := map[int]bool{}
			for _, w := range keys {
				if w.lost {
					recoverers[c.Coordinator(w.key)] = true
				}
			}
			if lost == 0 {
				t.Fatal("no key was lost beyond tolerance")
			}
			second := lossRecoverer(t, c, recoverers)
			c.Settle("rebuilt")
			c.Kill(second)
			c.FailOver(second)
			stillLost := 0
			for _, w := range keys {
				if !w.lost {
					continue
				}
				r := readPast(c, w.key)
				if !r.IsError() || !strings.HasPrefix(r.Text(), "LOST") {
					t.Fatalf("GET %s (%s), lost before node %d failed = %s, want -LOST", w.key, w.spec, second, simcluster.Render(r))
				}
				stillLost++
			}
			readLossy(t, c, keys, nil)
			// A lost key deleted now reads as absent, and the map says so
			// for any later coordinator (cluster.ClearLost).
			i := slices.IndexFunc(keys, func(w *written) bool { return w.lost })
			if r := c.Do(c.AnyLive(), "DEL", keys[i].key); r.IsError() {
				t.Fatalf("DEL of a lost key = %s", simcluster.Render(r))
			}
			slot := int(keyslot.Of([]byte(keys[i].key)))
			c.WaitMap("the deleted key cleared in the map", func(m *cluster.Map) bool {
				if len(m.LossesOf(slot, slot)) == 0 {
					return false // a lost key's slot has a report: none is no clearing
				}
				for _, l := range m.LossesOf(slot, slot) {
					if !slices.Contains(l.Cleared, keys[i].key) {
						return false
					}
				}
				return true
			})
			if r := readPast(c, keys[i].key); !r.IsNil() {
				t.Fatalf("GET %s after its DEL = %s, want nil", keys[i].key, simcluster.Render(r))
			}
			t.Logf("victims %v, then %d: %d keys -LOST before, all %d still", victims, second, lost, stillLost)
		})
	}
}

// lossRecoverer picks the node that coordinates the most lost keys among
// recoverers, a Raft non-voter if one is: killing it must leave the
// control plane a quorum.
func lossRecoverer(t *testing.T, c *simcluster.Cluster, recoverers map[int]bool) int {
	t.Helper()
	var picks []int
	for i := range recoverers {
		picks = append(picks, i)
	}
	slices.Sort(picks)
	if i := slices.IndexFunc(picks, func(i int) bool { return !c.MapNode(i).Voter }); i >= 0 {
		return picks[i]
	}
	return picks[0]
}

// readPast reads key until it answers other than TRYAGAIN.
func readPast(c *simcluster.Cluster, key string) resp.Reply {
	reader := c.AnyLive()
	var r resp.Reply
	c.Until("GET "+key+" answers other than TRYAGAIN", func() (bool, string) {
		r = c.DoQuiet(reader, "GET", key)
		return !strings.HasPrefix(r.Text(), "TRYAGAIN"), r.Text()
	})
	return r
}
