package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/internal/certs"
	"github.com/memgest/memgest/server"
)

// TestConfigSourcesPrecedence: flags win over MEMGEST_* variables, which
// win over the config file; bad settings are refused with their origin.
func TestConfigSourcesPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "memgest.conf")
	conf := "# a comment\nport 7100\nmaxmemory 1000\nrequirepass \"from-file\"\nredirect true\n"
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMGEST_MAXMEMORY", "2000")
	cmd := serverCmd()
	if err := cmd.Flags().Parse([]string{"--requirepass", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigSources(cmd.Flags(), file); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"port": "7100", "maxmemory": "2000", "requirepass": "from-flag", "redirect": "true", "bind": "127.0.0.1"} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestConfigSourcesRefuseBadSettings(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ conf, env, want string }{
		{"no-such-flag 1\n", "", "unknown setting"},
		{"port seven\n", "", "port"},
		{"", "x", "MEMGEST_VOTERS"},
	} {
		file := filepath.Join(dir, "c.conf")
		if err := os.WriteFile(file, []byte(tc.conf), 0o600); err != nil {
			t.Fatal(err)
		}
		if tc.env != "" {
			t.Setenv("MEMGEST_VOTERS", tc.env)
		}
		err := applyConfigSources(serverCmd().Flags(), file)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q / %q: got %v, want error with %q", tc.conf, tc.env, err, tc.want)
		}
	}
}

func TestDevArgs(t *testing.T) {
	o := devOptions{nodes: 6, basePort: 7001}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	first := strings.Join(devArgs(o, 0, "/d", nil), " ")
	if !strings.Contains(first, "--bootstrap-expect 6") || !strings.Contains(first, "--voters 3") || !strings.Contains(first, "--peer-port 8001") {
		t.Fatalf("first node: %s", first)
	}
	third := strings.Join(devArgs(o, 2, "/d", nil), " ")
	if !strings.Contains(third, "--port 7003") || !strings.Contains(third, "--join 127.0.0.1:8001") || !strings.Contains(third, "--http-port 9003") {
		t.Fatalf("third node: %s", third)
	}
	withSpare := devOptions{nodes: 3, spares: 1, basePort: 7001}
	if spare := strings.Join(devArgs(withSpare, 3, "/d", nil), " "); !strings.Contains(spare, "--spare") || !strings.Contains(spare, "--port 7004") {
		t.Fatalf("spare node: %s", spare)
	}
	if first := strings.Join(devArgs(withSpare, 0, "/d", nil), " "); strings.Contains(first, "--spare") || !strings.Contains(first, "--bootstrap-expect 3") {
		t.Fatalf("first node with a spare: %s", first)
	}
	if !strings.Contains(first, "--cluster-secret-file /d/cluster-secret") {
		t.Fatalf("first node without the dev secret: %s", first)
	}
	tlsArgs := strings.Join(devArgs(o, 1, "/d", &certs.Files{CA: "/t/ca.crt", Cert: "/t/n.crt", Key: "/t/n.key"}), " ")
	if !strings.Contains(tlsArgs, "--tls-cert-file /t/n.crt --tls-key-file /t/n.key --tls-ca-cert-file /t/ca.crt") {
		t.Fatalf("TLS node: %s", tlsArgs)
	}
	for _, bad := range []devOptions{{nodes: 0, basePort: 7001}, {nodes: 6, basePort: 64000}, {nodes: 3, spares: -1, basePort: 7001}} {
		if bad.validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestDevEnvDividesCores(t *testing.T) {
	last := func(env []string) string { return env[len(env)-1] }
	if got := last(devEnv([]string{"PATH=/bin"}, 2, 6)); got != "GOMAXPROCS=1" {
		t.Errorf("2 cores, 6 nodes: %s", got)
	}
	if got := last(devEnv([]string{"PATH=/bin"}, 16, 3)); got != "GOMAXPROCS=5" {
		t.Errorf("16 cores, 3 nodes: %s", got)
	}
	if got := devEnv([]string{"GOMAXPROCS=7", "PATH=/bin"}, 2, 6); len(got) != 2 || got[0] != "GOMAXPROCS=7" {
		t.Errorf("a GOMAXPROCS the user set was changed: %v", got)
	}
}

// TestGCTarget: a small heap keeps Go's default target, a large one gets
// the floor, and in between the target leaves gcMinHeadroom of growth.
func TestGCTarget(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100}, {1 << 20, 100}, {gcMinHeadroom, 100}, {2 * gcMinHeadroom, 50},
		{4 * gcMinHeadroom, 25}, {64 * gcMinHeadroom, 25},
	} {
		if got := gcTarget(c.live, 25); got != c.want {
			t.Errorf("gcTarget(%d, 25) = %d, want %d", c.live, got, c.want)
		}
	}
}

// dev refuses ports in the ephemeral range and ports in use before it
// starts anything.
func TestDevChecksPorts(t *testing.T) {
	lo, _ := ephemeralRange()
	inRange := devOptions{nodes: 3, basePort: lo - httpOffset}
	if err := inRange.checkPorts(); err == nil || !strings.Contains(err.Error(), "ephemeral") {
		t.Fatalf("base %d (HTTP ports from %d): %v", inRange.basePort, lo, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	if taken+httpOffset >= lo {
		t.Skipf("the free port %d is too close to the ephemeral range to test with", taken)
	}
	busy := devOptions{nodes: 1, basePort: taken}
	if err := busy.checkPorts(); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a taken port: %v", err)
	}
}

// status finds the newest live dev cluster from the state files, with its
// password and CA, and forgets the files of dev processes that are gone.
func TestStatusFindsDevCluster(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("REDISCLI_AUTH", "")
	o := statusOptions{}
	if c, err := o.client(io.Discard); err != nil || c.addr != defaultStatusAddr {
		t.Fatalf("no dev cluster: %+v %v", c, err)
	}
	gone := devState{PID: 1 << 30, BasePort: 7101, HTTP: "127.0.0.1:9101", Started: time.Now()}
	if _, err := gone.write(); err != nil {
		t.Fatal(err)
	}
	old := devState{PID: os.Getpid(), BasePort: 7201, HTTP: "127.0.0.1:9201", Started: time.Now().Add(-time.Minute)}
	newest := devState{PID: os.Getpid(), BasePort: 7301, HTTP: "127.0.0.1:9301", Password: "pw", Started: time.Now()}
	for _, s := range []devState{old, newest} {
		if _, err := s.write(); err != nil {
			t.Fatal(err)
		}
	}
	var notes strings.Builder
	o = statusOptions{}
	c, err := o.client(&notes)
	if err != nil || c.addr != "127.0.0.1:9301" || c.password != "pw" {
		t.Fatalf("newest dev cluster: %+v %v", c, err)
	}
	if !strings.Contains(notes.String(), "2 dev clusters") {
		t.Errorf("no note of the other cluster: %q", notes.String())
	}
	if len(liveDevStates()) != 2 {
		t.Errorf("the dead dev cluster's state was kept")
	}
	o = statusOptions{addr: "10.0.0.1:1"}
	if c, _ := o.client(io.Discard); c.addr != "10.0.0.1:1" || c.password != "" {
		t.Fatalf("--addr: %+v", c)
	}
}

// dev calls its cluster ready only when the node answering on node 1's HTTP
// port is the node it started, not another cluster's on the same port.
func TestDevWaitsForItsOwnNode(t *testing.T) {
	var answering atomic.Value
	answering.Store("someone-else")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := answering.Load().(string)
		json.NewEncoder(w).Encode(server.Status{Node: id, State: "ok",
			Nodes: []server.StatusNode{{ID: id, State: "up", Serving: true}}})
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "node-id"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := newStatusClient(strings.TrimPrefix(srv.URL, "http://"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	o := devOptions{nodes: 1, timeout: 300 * time.Millisecond}
	if _, err := waitFormed(o, client, dir, nil, nil); err == nil {
		t.Fatal("ready with another cluster's node answering")
	}
	answering.Store("mine")
	if st, err := waitFormed(o, client, dir, nil, nil); err != nil || st.Node != "mine" {
		t.Fatalf("its own node answering: %+v %v", st, err)
	}
}
