package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgest/memgest/reliability"
	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/core"
	"github.com/spf13/pflag"
)

// runPlanArgs runs memgest plan with args and returns its output.
func runPlanArgs(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := planCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestParseUnits(t *testing.T) {
	for in, want := range map[string]float64{"1y": reliability.HoursPerYear, "30d": 720, "90m": 1.5, "1.5s": 1.5 / 3600, "8760h": 8760} {
		if got, err := parseHours(in); err != nil || got != want {
			t.Errorf("parseHours(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1h", "1w", "1e400y", "NaNd"} {
		if _, err := parseHours(bad); err == nil {
			t.Errorf("parseHours(%q) accepted", bad)
		}
	}
	for in, want := range map[string]float64{"8gb": 8 << 30, "500MB/s": 500 << 20, "1k": 1000, "2kib": 2048, "1e9": 1e9, "3g": 3e9, "7b": 7} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "gb", "-1mb", "1pb", "NaN"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
}

func TestPlanTable(t *testing.T) {
	out, err := runPlanArgs(t, "--nodes", "6", "--rebuild", "10m", "--nines", "5")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"6 nodes, node MTTF 90d", "rebuild 10m per node", "SCHEME", "rep:3", "stripe:4+2", "hybrid:4+2",
		"cheapest scheme with 5 nines: stripe:4+2, 1.50 bytes per logical byte"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "stripe:6+3") {
		t.Errorf("a 9-node scheme was listed for 6 nodes:\n%s", out)
	}
}

func TestPlanJSONMixHostsAndSweep(t *testing.T) {
	out, err := runPlanArgs(t, "--nodes", "8", "--rebuild-rate", "100mb/s", "--logical-bytes", "40gb", "--scheme", "rep:3",
		"--scheme", "stripe:4+2", "--mix", "rep:3=0.25,stripe:4+2=0.75", "--hosts", "4", "--host-layout", "blocks",
		"--host-mttf", "2y", "--sweep", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep planReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(rep.Results) != 3 || rep.Inputs.Hosts != 4 || rep.Inputs.HostLayout != "blocks" {
		t.Fatalf("results %+v inputs %+v", rep.Results, rep.Inputs)
	}
	// The rebuild time follows each scheme's bytes per node: 40 GiB × 3
	// over 8 nodes at 100 MiB/s for rep:3, half as much for stripe:4+2.
	rep3, stripe, mix := rep.Results[0], rep.Results[1], rep.Results[2]
	if got, want := rep3.RebuildHours-rep.Inputs.DetectionHours, 40.0*3/8*1024/100/3600; abs(got-want) > 1e-9 {
		t.Errorf("rep:3 rebuild %.6f h, want %.6f", got, want)
	}
	if abs(stripe.RebuildHours-rep.Inputs.DetectionHours-(rep3.RebuildHours-rep.Inputs.DetectionHours)/2) > 1e-9 {
		t.Errorf("stripe:4+2 rebuild %.6f h, rep:3 %.6f h", stripe.RebuildHours, rep3.RebuildHours)
	}
	// A mix loses data when either part does: no more nines than its
	// weaker part, and its overhead is the weighted one.
	if mix.Nines > min(rep3.Nines, stripe.Nines)+1e-9 || abs(mix.Overhead-(0.25*3+0.75*1.5)) > 1e-9 {
		t.Errorf("mix %+v; rep:3 %.2f nines, stripe %.2f", mix, rep3.Nines, stripe.Nines)
	}
	if len(rep.Sweep["rep:3"]) != 4*len(sweepFactors) {
		t.Errorf("sweep of rep:3: %+v", rep.Sweep["rep:3"])
	}
}

func TestPlanPlot(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nines.png")
	if _, err := runPlanArgs(t, "--nodes", "6", "--rebuild", "1h", "--nines", "4", "--plot", file); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 10000 {
		t.Fatalf("plot: %d bytes, err %v", len(b), err)
	}
}

func TestPlanRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rebuild", "1h"}, "--nodes"},
		{[]string{"--nodes", "6"}, "--rebuild"},
		{[]string{"--nodes", "6", "--rebuild-rate", "1gb"}, "--bytes-per-node"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--rebuild-rate", "1gb"}, "not both"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--scheme", "stripe:6+3"}, "needs 9 nodes"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--scheme", "raid5"}, "bad spec"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--mix", "rep:2=1.5"}, "--mix"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--hosts", "3"}, "--host-mttf"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--hosts", "3", "--host-mttf", "1y", "--host-layout", "racks"}, "--host-layout"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--nines", "0"}, "--nines"},
		{[]string{"--nodes", "6", "--rebuild", "soon"}, "bad duration"},
		{[]string{"--nodes", "6", "--rebuild", "1h", "--node-mttf", "0s"}, "--node-mttf"},
	} {
		_, err := runPlanArgs(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %q", tc.args, err, tc.want)
		}
	}
}

// --help documents every flag.
func TestPlanHelpDocumentsEveryFlag(t *testing.T) {
	out, err := runPlanArgs(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	cmd := planCmd()
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Usage == "" || !strings.Contains(out, "--"+f.Name) {
			t.Errorf("flag --%s is not documented in --help", f.Name)
		}
	})
}

// With --addr, plan takes nodes, bytes per node and the measured rebuild
// rate from /status, and evaluates the schemes the keys use and their mix.
func TestPlanFromCluster(t *testing.T) {
	st := server.Status{
		// Six nodes up, a failed one and a spare: the ring has six.
		Nodes: []server.StatusNode{{ID: "a", State: "up"}, {ID: "b", State: "up"}, {ID: "c", State: "up"},
			{ID: "d", State: "up"}, {ID: "e", State: "up"}, {ID: "f", State: "up"}, {ID: "g", State: "failed"}, {ID: "h", State: "spare"}},
		Schemes: []server.StatusScheme{{Name: "none", Spec: "none"}, {Name: "hot", Spec: "rep:3", Keys: 10, Logical: 1 << 30, Stored: 3 << 30},
			{Name: "cold", Spec: "stripe:4+2", Keys: 90, Logical: 3 << 30, Stored: 9 << 30}},
		Rebuild: core.ProgressReport{BytesDone: 6 << 30, BusySeconds: 60},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(st)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	out, err := runPlanArgs(t, "--addr", addr, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep planReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Inputs.Nodes != 6 || rep.Inputs.BytesPerNode != 2<<30 || rep.Inputs.RebuildRate != float64(6<<30)/60 {
		t.Errorf("inputs %+v", rep.Inputs)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Scheme)
	}
	if got := strings.Join(names, ", "); got != "hot, cold, cold (75%) + hot (25%)" {
		t.Errorf("schemes %q", got)
	}
	// A cluster that never rebuilt has no rate to report.
	st.Rebuild = core.ProgressReport{}
	if _, err := runPlanArgs(t, "--addr", addr); err == nil || !strings.Contains(err.Error(), "has not rebuilt") {
		t.Errorf("no measured rate: err %v", err)
	}
	if _, err := runPlanArgs(t, "--addr", addr, "--rebuild", "5m"); err != nil {
		t.Errorf("--rebuild given: %v", err)
	}
}

func abs(x float64) float64 { return max(x, -x) }
