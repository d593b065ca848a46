package simcluster_test

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/memgest/memgest/internal/simcluster"
)

var hashCostReport = flag.String("hashcost.report", "", "write TestHashFieldUpdateCost's table (markdown) to this file")

// What one field update of a hash costs in peer bytes, by scheme (issue
// 28, decision 0012): a hash is rewritten whole, and its scheme stores the
// new value as it stores any. A packed scheme updates an object in place
// with a parity delta of the bytes that changed when its length stays (a
// field's value replaced by one as long); otherwise — and always for rep
// and split — the whole value is sent again. The test checks that
// difference and, with -hashcost.report, writes the table
// docs/benchmarks/hash-updates.md quotes.
func TestHashFieldUpdateCost(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	const fields, valueLen, updates = 20, 100, 50
	var rows []string
	cost := map[string][2]float64{}
	for _, spec := range []string{"rep:3", "split:4+2", "stripe:4+2", "hybrid:4+2", "stripe:4+2@batch"} {
		h := newHashSession(t, c, spec)
		k := h.key("costly")
		args := []string{}
		for f := range fields {
			args = append(args, fmt.Sprint("field", f), strings.Repeat("a", valueLen))
		}
		h.create(k, args...)
		sameLen := measurePeerBytes(t, c, func(i int) {
			h.do("HSET", k, fmt.Sprint("field", i%fields), strings.Repeat(string(rune('b'+i%20)), valueLen))
		}, updates)
		grown := measurePeerBytes(t, c, func(i int) {
			h.do("HSET", k, fmt.Sprint("field", i%fields), strings.Repeat("c", valueLen+1+i))
		}, updates)
		cost[spec] = [2]float64{sameLen, grown}
		rows = append(rows, fmt.Sprintf("| %s | %.0f | %.0f |", spec, sameLen, grown))
	}
	encoded := fields*(1+len("field10")+1+valueLen) + 9
	report := fmt.Sprintf("# Hash field updates: peer bytes by scheme\n\n"+
		"`go test ./internal/simcluster -run TestHashFieldUpdateCost -hashcost.report=$PWD/docs/benchmarks/hash-updates.md` "+
		"(six in-process nodes; decision 0012).\n\nPeer bytes per HSET of one field of a %d-field hash (%d-byte values, about %d bytes encoded), "+
		"%d updates each, summed over the six nodes' memgest_peer_redundancy_bytes_total:\n\n"+
		"| scheme | same-length value | longer value |\n|---|---|---|\n%s\n", fields, valueLen, encoded, updates, strings.Join(rows, "\n"))
	t.Log("\n" + report)
	if *hashCostReport != "" {
		if err := os.WriteFile(*hashCostReport, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// In place: a delta of the changed bytes to each parity holder, far
	// less than the value; re-encoded: at least the value to each holder.
	for _, spec := range []string{"stripe:4+2", "hybrid:4+2"} {
		if same, grown := cost[spec][0], cost[spec][1]; same*4 > grown {
			t.Errorf("%s: a same-length update costs %.0f peer bytes, a longer one %.0f: no in-place delta", spec, same, grown)
		}
	}
	if rep := cost["rep:3"][0]; rep < float64(2*encoded) {
		t.Errorf("rep:3: %.0f peer bytes per update, below two copies of the %d-byte hash", rep, encoded)
	}
}

// measurePeerBytes runs op n times and returns the redundancy bytes the
// cluster's nodes sent per op.
func measurePeerBytes(t *testing.T, c *simcluster.Cluster, op func(i int), n int) float64 {
	t.Helper()
	before := clusterPeerBytes(t, c)
	for i := range n {
		op(i)
	}
	return (clusterPeerBytes(t, c) - before) / float64(n)
}

// clusterPeerBytes sums memgest_peer_redundancy_bytes_total over the live
// nodes.
func clusterPeerBytes(t *testing.T, c *simcluster.Cluster) float64 {
	t.Helper()
	var sum float64
	for i := range c.Len() {
		if !c.Alive(i) {
			continue
		}
		reg := prometheus.NewRegistry()
		c.Node(i).Metrics.Register(reg)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "memgest_peer_redundancy_bytes_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
