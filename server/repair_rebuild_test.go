package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/server/core"
)

func TestRebuildReportRateAndETA(t *testing.T) {
	// Rate and ETA go by the time spent rebuilding, not the time since
	// the first rebuild began.
	r := core.ProgressReport{KeysDone: 25, KeysTotal: 100, BytesDone: 4 << 20, Seconds: 600, BusySeconds: 2}
	if got := r.Rate(); got != 2<<20 {
		t.Errorf("rate %v, want 2 MiB/s", got)
	}
	if got := r.ETA(); got != 6*time.Second {
		t.Errorf("ETA %v, want 6s (75 keys at 80 ms)", got)
	}
	if (core.ProgressReport{KeysDone: 100, KeysTotal: 100, BusySeconds: 5}).ETA() != 0 || (core.ProgressReport{KeysTotal: 10}).ETA() != 0 {
		t.Error("a finished or unstarted rebuild has an ETA")
	}
	sum := r.Add(core.ProgressReport{KeysDone: 5, KeysTotal: 10, BytesDone: 1, Seconds: 3, BusySeconds: 3})
	if sum.KeysDone != 30 || sum.KeysTotal != 110 || sum.BytesDone != 4<<20+1 || sum.Seconds != 600 || sum.BusySeconds != 3 {
		t.Errorf("sum %+v", sum)
	}
}

// TestRebuildPendingGauge: /metrics has memgest_rebuild_pending_bytes for
// every redundancy level a rebuild of the catalogue can have (rep:3's
// tolerance of 2: levels 0 and 1), with the bytes a running plan has
// left there, and 0 once none runs.
func TestRebuildPendingGauge(t *testing.T) {
	n := leasedNode(t, testMap(t, 3))
	n.NodeID = n.Ctl.Map().Nodes[0].ID
	n.Rebuild.SetPending([]int64{4096})
	_, body := get(t, n.httpRoutes(), http.MethodGet, "/metrics", "")
	for _, want := range []string{`memgest_rebuild_pending_bytes{redundancy="0"} 4096`, `memgest_rebuild_pending_bytes{redundancy="1"} 0`} {
		if !strings.Contains(body, want+"\n") {
			t.Fatalf("/metrics lacks %s:\n%s", want, grepLines(body, "rebuild_pending"))
		}
	}
	n.Rebuild.SetPending(nil)
	if _, body = get(t, n.httpRoutes(), http.MethodGet, "/metrics", ""); !strings.Contains(body, `memgest_rebuild_pending_bytes{redundancy="0"} 0`+"\n") {
		t.Fatalf("/metrics once no rebuild runs:\n%s", grepLines(body, "rebuild_pending"))
	}
}

// TestStatusShowsPendingByRedundancy: /status gives the bytes still to
// rebuild by redundancy level, for the cluster and on each node's line
// (the other two nodes of the map do not answer here).
func TestStatusShowsPendingByRedundancy(t *testing.T) {
	n := leasedNode(t, testMap(t, 3))
	n.NodeID = n.Ctl.Map().Nodes[0].ID
	n.Rebuild.SetPending([]int64{4096})
	_, body := get(t, n.httpRoutes(), http.MethodGet, "/status", "")
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := []int64{4096, 0}
	if !slices.Equal(st.Rebuild.PendingBytes, want) || len(st.Nodes) != 3 || !slices.Equal(st.Nodes[0].RebuildPending, want) {
		t.Fatalf("/status pending: cluster %v, nodes %+v; want %v", st.Rebuild.PendingBytes, st.Nodes, want)
	}
}

// grepLines is the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
