package tests

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/reliability"
	"github.com/memgest/memgest/scheme"
	"github.com/redis/go-redis/v9"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsEndpoint scrapes every node's /metrics after a known load and
// checks the request-path metrics against it: writes and reads per scheme
// (counted once, on the key's coordinator), write latency observations,
// redundancy bytes at least what the scheme must send, per-command latency
// on the node the client talks to, node states, and the degraded-request
// counters present from the start.
func TestMetricsEndpoint(t *testing.T) {
	c := startCluster(t, 4, clusterOptions{})
	ctx := ctxT(t)
	rdb := c.plainClient(0, 2)
	const keys, size = 40, 100
	value := strings.Repeat("v", size)
	specs := map[string]float64{"rep:3": 2, "stripe:2+1": 1, "stripe:2+1@batch": 1} // copies of the value sent per write, at least
	written := map[string]float64{}
	for spec := range specs {
		for i := range keys {
			k := fmt.Sprintf("%s:%d", spec, i)
			written[spec] += float64(len(k) + size)
			must(t, rdb.Do(ctx, "SET", k, value, "SCHEME", spec).Err())
			if got, err := rdb.Get(ctx, k).Result(); err != nil || got != value {
				t.Fatalf("GET %s: %q, %v", k, got, err)
			}
		}
	}
	checkModelledNines(t, c, rdb) // first: node 1's scrapes then carry the nines the dashboard queries
	var families []map[string]*dto.MetricFamily
	for i := range c.nodes {
		families = append(families, scrape(t, c.nodes[i].httpPort))
	}
	for spec, copies := range specs {
		scheme := map[string]string{"scheme": spec}
		if got := sumMetric(families, "memgest_scheme_operations_total", map[string]string{"scheme": spec, "op": "write"}); got != keys {
			t.Errorf("%s writes: %v across nodes, want %d", spec, got, keys)
		}
		if got := sumMetric(families, "memgest_scheme_operations_total", map[string]string{"scheme": spec, "op": "read"}); got != keys {
			t.Errorf("%s reads: %v across nodes, want %d", spec, got, keys)
		}
		if got := sumMetric(families, "memgest_scheme_write_duration_seconds", scheme); got != keys {
			t.Errorf("%s write latency observations: %v, want %d", spec, got, keys)
		}
		if got, least := sumMetric(families, "memgest_peer_redundancy_bytes_total", scheme), copies*keys*size; got < least {
			t.Errorf("%s redundancy bytes sent: %v, want at least %v", spec, got, least)
		}
		if got := sumMetric(families, "memgest_scheme_written_bytes_total", scheme); got != written[spec] {
			t.Errorf("%s logical bytes written: %v across nodes, want %v", spec, got, written[spec])
		}
	}
	if got := sumMetric(families[:1], "memgest_command_duration_seconds", map[string]string{"command": "set"}); got != float64(len(specs)*keys) {
		t.Errorf("node 0 timed %v SETs, want %d (it received every one)", got, len(specs)*keys)
	}
	batch := map[string]string{"scheme": "stripe:2+1@batch"}
	if data, garbage := sumMetric(families, "memgest_batch_data_bytes", batch), sumMetric(families, "memgest_batch_garbage_bytes", batch); data < keys*size || garbage != 0 {
		t.Errorf("batch stripes of stripe:2+1@batch: %v data bytes, %v garbage, want at least %d and none", data, garbage, keys*size)
	}
	for i, f := range families {
		if got := sumMetric(only(f), "memgest_nodes", map[string]string{"state": "up"}); got != 4 {
			t.Errorf("node %d: memgest_nodes{state=up} %v, want 4", i, got)
		}
		for _, kind := range []string{"recovering", "refetched", "stripe_restored"} {
			if _, ok := find(f, "memgest_degraded_requests_total", map[string]string{"kind": kind}); !ok {
				t.Errorf("node %d lacks memgest_degraded_requests_total{kind=%q}", i, kind)
			}
		}
	}
	checkDashboard(t, families)
}

// checkModelledNines checks SCHEME.INFO's modelled durability against the
// reliability model run on the inputs it reports, and that /metrics
// exports the same nines once its background refresh has run.
func checkModelledNines(t *testing.T, c *testCluster, rdb *redis.Client) {
	t.Helper()
	nines := map[string]float64{}
	for _, spec := range []string{"rep:3", "stripe:2+1"} {
		f := schemeInfo(t, rdb, spec)
		if f["model_nodes"] != int64(4) || f["model_rebuild_rate_source"] != "assumed" {
			t.Fatalf("SCHEME.INFO %s: model on %v nodes, rate %v, want 4 and assumed (nothing rebuilt yet)", spec, f["model_nodes"], f["model_rebuild_rate_source"])
		}
		sp, err := scheme.Parse(spec)
		must(t, err)
		r, err := reliability.Evaluate(reliability.Cluster{Nodes: 4, NodeMTTF: infoFloat(t, f, "model_node_mttf_hours"),
			Rebuild: infoFloat(t, f, "model_rebuild_seconds") / 3600, Detection: infoFloat(t, f, "model_detection_seconds") / 3600},
			reliability.Single(sp.Model()), reliability.HoursPerYear)
		must(t, err)
		nines[spec] = infoFloat(t, f, "nines_per_year")
		if got := nines[spec]; math.Abs(got-r.Nines) > 0.01 {
			t.Errorf("SCHEME.INFO %s: %.3f nines, the model on its inputs %.3f", spec, got, r.Nines)
		}
	}
	if nines["rep:3"] <= nines["stripe:2+1"] {
		t.Errorf("rep:3 %.2f nines, stripe:2+1 %.2f: two failures tolerated must beat one", nines["rep:3"], nines["stripe:2+1"])
	}
	// The first scrape starts the refresh; a later one carries its result.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		m, ok := find(scrape(t, c.nodes[1].httpPort), "memgest_scheme_nines", map[string]string{"scheme": "rep:3"})
		if ok {
			if got := m.GetGauge().GetValue(); math.Abs(got-nines["rep:3"]) > 0.05 {
				t.Errorf("memgest_scheme_nines{scheme=rep:3} %.3f, SCHEME.INFO %.3f", m.GetGauge().GetValue(), nines["rep:3"])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("memgest_scheme_nines{scheme=rep:3} never appeared")
		}
	}
}

// checkDashboard fails for each metric the Grafana dashboard in deploy/
// queries that no node exposes, so the two cannot drift apart.
func checkDashboard(t *testing.T, families []map[string]*dto.MetricFamily) {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/memgest.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/memgest.json: %v", err)
	}
	exposed := func(name string) bool {
		for _, f := range families {
			for _, n := range []string{name, strings.TrimSuffix(name, "_bucket"), strings.TrimSuffix(name, "_count")} {
				if _, ok := f[n]; ok {
					return true
				}
			}
		}
		return false
	}
	used := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, name := range metricName.FindAllString(target.Expr, -1) {
				used++
				if !exposed(name) {
					t.Errorf("dashboard panel %q queries %s, which no node exposes", p.Title, name)
				}
			}
		}
	}
	if used < 10 {
		t.Fatalf("the dashboard queries only %d metrics", used)
	}
}

var metricName = regexp.MustCompile(`memgest_[a-z_]+`)

// only wraps one node's families for sumMetric.
func only(f map[string]*dto.MetricFamily) []map[string]*dto.MetricFamily {
	return []map[string]*dto.MetricFamily{f}
}

// scrape fetches and parses a node's /metrics.
func scrape(t *testing.T, httpPort int) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", httpPort))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	out, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("/metrics on port %d does not parse: %v", httpPort, err)
	}
	return out
}

// sumMetric adds, over nodes, the value of the series of family name whose
// labels include want: a counter's or gauge's value, a histogram's count.
func sumMetric(nodes []map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, f := range nodes {
		if m, ok := find(f, name, want); ok {
			switch {
			case m.Counter != nil:
				total += m.Counter.GetValue()
			case m.Gauge != nil:
				total += m.Gauge.GetValue()
			case m.Histogram != nil:
				total += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return total
}

// find returns the series of family name whose labels include want.
func find(f map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	fam, ok := f[name]
	if !ok {
		return nil, false
	}
	for _, m := range fam.Metric {
		match := 0
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
				match++
			}
		}
		if match == len(want) {
			return m, true
		}
	}
	return nil, false
}
