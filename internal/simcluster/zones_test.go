package simcluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/resp"
)

// zoneSchemes are the redundant schemes of issue 43 §3, each tolerating
// the loss of a third of 9 nodes spread over 3 zones.
var zoneSchemes = []string{"rep:3", "stripe:4+2", "hybrid:4+2", "split:4+2"}

// TestZoneLossLosesNothing is issue 43 §3 in one process (decision 0021):
// 9 nodes in 3 zones, keys of every redundant scheme; every node of one
// zone dies at once. The placement rule put no more of any shard's
// positions in one zone than each scheme tolerates, so no key is lost,
// every key reads back its value, and SCHEME.INFO said so beforehand.
// The nodes join zone by zone, the layout in which the ring's rotation
// alone would put rep:3's three copies of some shards in one zone; the
// zone lost is the one without Raft voters (the first three nodes),
// whose zone-aware choice is not this test's subject.
func TestZoneLossLosesNothing(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 9,
		Configure: func(i int, cfg *server.Config) { cfg.Zone = fmt.Sprintf("zone-%d", i/3+1) }})
	for _, spec := range zoneSchemes {
		if r := c.Do(0, "SCHEME.CREATE", "z"+strings.NewReplacer(":", "", "+", "").Replace(spec), spec); r.Text() != "OK" {
			t.Fatalf("SCHEME.CREATE %s = %s", spec, simcluster.Render(r))
		}
		info := simcluster.Fields(c.Do(0, "SCHEME.INFO", spec))
		if got := info["survives_domain_loss"].Int(); got != 1 || info["failure_domain"].Text() != "zone" {
			t.Fatalf("SCHEME.INFO %s: survives_domain_loss %d, failure_domain %s; want 1, zone", spec, got, info["failure_domain"].Text())
		}
	}
	keys := writeKeys(t, c, zoneSchemes, 60)
	var zone []int // zone-2's nodes
	for i := range c.Len() {
		if c.MapNode(i).Zone == "zone-2" {
			zone = append(zone, i)
		}
	}
	if len(zone) != 3 {
		t.Fatalf("zone-2 holds nodes %v, want 3", zone)
	}
	for _, v := range zone {
		c.Kill(v)
	}
	c.FailOver(zone...)
	c.Settle("zone-2 lost")
	reader := c.AnyLive()
	for _, w := range keys {
		r := c.DoQuiet(reader, "GET", w.key)
		if r.Kind() != resp.KindBulk || r.Text() != w.value {
			t.Fatalf("after zone-2's loss: GET %s (%s) = %s, want its value", w.key, w.spec, simcluster.Render(r))
		}
	}
	for _, w := range keys {
		if strings.HasPrefix(w.spec, "rep:") {
			if r := c.DoQuiet(reader, "SET", w.key, w.value+"!"); r.Text() != "OK" {
				t.Fatalf("SET %s after the loss = %s", w.key, simcluster.Render(r))
			}
		}
	}
}
