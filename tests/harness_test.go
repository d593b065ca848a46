package tests

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memgest/memgest/internal/certs"
)

// binary is the memgest executable built once for the whole package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "memgest-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "memgest")
	// Built with the failpoints tag for the robustness suite's nemeses
	// (internal/faults); the points are inert until a test arms them.
	build := exec.Command("go", "build", "-race", "-tags", "failpoints", "-o", binary, "github.com/memgest/memgest/cmd/memgest")
	if os.Getenv("MEMGEST_TEST_NORACE") != "" {
		build = exec.Command("go", "build", "-tags", "failpoints", "-o", binary, "github.com/memgest/memgest/cmd/memgest")
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building memgest:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// node is one memgest process of a test cluster.
type node struct {
	port, peerPort, httpPort int
	args                     []string // to start it again (restart)
	cmd                      *exec.Cmd
	log                      *syncBuffer
	done                     chan struct{}
}

func (n *node) addr() string     { return "127.0.0.1:" + strconv.Itoa(n.port) }
func (n *node) peerAddr() string { return "127.0.0.1:" + strconv.Itoa(n.peerPort) }

// testCluster is a set of memgest processes started for one test.
type testCluster struct {
	t      *testing.T
	nodes  []*node
	secret string      // the cluster secret file every node is given
	pass   string      // the clients' password, when the test set one
	tls    *tls.Config // clients' TLS, when the nodes have TLS
}

// clusterOptions tweak startCluster.
type clusterOptions struct {
	redirect bool
	voters   int
	spares   int                  // nodes started with --spare after the n nodes
	extra    []string             // flags for every node
	perNode  func(i int) []string // flags for node i, when set
	pass     string               // --requirepass, given to the founding node
	tls      *certs.Files
}

// startCluster starts n nodes (and o.spares spares), waits until the
// cluster has formed, and registers a cleanup that kills every process it
// started.
func startCluster(t *testing.T, n int, o clusterOptions) *testCluster {
	t.Helper()
	c := &testCluster{t: t, secret: writeSecret(t), pass: o.pass}
	t.Cleanup(c.stop)
	ports := freePorts(t, 3*(n+o.spares))
	voters := o.voters
	if voters == 0 {
		voters = 1
		if n >= 3 {
			voters = 3
		}
	}
	for i := 0; i < n+o.spares; i++ {
		nd := &node{port: ports[3*i], peerPort: ports[3*i+1], httpPort: ports[3*i+2]}
		args := []string{"server", "--bind", "127.0.0.1",
			"--port", strconv.Itoa(nd.port), "--peer-port", strconv.Itoa(nd.peerPort),
			"--http-port", strconv.Itoa(nd.httpPort), "--data-dir", t.TempDir(), "--log-level", nodeLogLevel(),
			// A generous timeout, so that a race-built node starved of CPU
			// is not marked failed; failure tests pass their own.
			"--failure-timeout", "5s"}
		args = append(args, "--cluster-secret-file", c.secret)
		args = append(args, o.tlsArgs()...)
		if i == 0 {
			args = append(args, "--bootstrap-expect", strconv.Itoa(n), "--voters", strconv.Itoa(voters))
			if o.pass != "" {
				args = append(args, "--requirepass", o.pass)
			}
		} else {
			args = append(args, "--join", c.nodes[0].peerAddr())
		}
		if o.redirect {
			args = append(args, "--redirect")
		}
		if i >= n {
			args = append(args, "--spare")
		}
		args = append(args, o.extra...)
		if o.perNode != nil {
			args = append(args, o.perNode(i)...)
		}
		c.start(nd, args)
	}
	if o.tls != nil {
		c.tls = clientTLS(t, *o.tls)
	}
	c.waitFormed(60 * time.Second)
	return c
}

// writeSecret writes a fresh cluster secret to a file of the test's.
func writeSecret(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("test-secret-%d-%d\n", time.Now().UnixNano(), os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsArgs are the TLS flags of every node.
func (o clusterOptions) tlsArgs() []string {
	if o.tls == nil {
		return nil
	}
	return []string{"--tls-cert-file", o.tls.Cert, "--tls-key-file", o.tls.Key, "--tls-ca-cert-file", o.tls.CA}
}

// nodeLogLevel is the nodes' --log-level: warn, or MEMGEST_TEST_LOG_LEVEL
// (info shows recoveries and rebuilds when a test needs explaining).
func nodeLogLevel() string {
	if l := os.Getenv("MEMGEST_TEST_LOG_LEVEL"); l != "" {
		return l
	}
	return "warn"
}

func (c *testCluster) start(nd *node, args []string) {
	c.t.Helper()
	nd.log, nd.args = &syncBuffer{}, args
	c.launch(nd)
	c.nodes = append(c.nodes, nd)
}

// launch starts nd's process with its arguments.
func (c *testCluster) launch(nd *node) {
	c.t.Helper()
	nd.cmd = exec.Command(binary, nd.args...)
	nd.cmd.Env = nodeEnv(os.Environ())
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		c.t.Fatalf("start memgest: %v", err)
	}
	nd.done = make(chan struct{})
	go func() { _ = nd.cmd.Wait(); close(nd.done) }()
}

// nodeEnv is the environment of a node process: the test's, with the
// race detector told not to sleep at exit. A race-built program sleeps a
// second before it exits (GORACE's atexit_sleep_ms, 1000 by default) so
// that goroutines racing with the exit get reported; every cluster's
// stop paid it, about a minute over the package.
func nodeEnv(env []string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			if !strings.Contains(v, "atexit_sleep_ms") {
				env[i] = kv + " atexit_sleep_ms=0"
			}
			return env
		}
	}
	return append(env, "GORACE=atexit_sleep_ms=0")
}

// restart starts node i again, with the same flags and data directory (so
// the same node id), once its killed process has exited.
func (c *testCluster) restart(i int) {
	c.t.Helper()
	<-c.nodes[i].done
	c.launch(c.nodes[i])
}

// stop kills every process this cluster started, by PID, and prints the
// logs of a failed test.
func (c *testCluster) stop() {
	for _, nd := range c.nodes {
		_ = nd.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, nd := range c.nodes {
		select {
		case <-nd.done:
		case <-time.After(5 * time.Second):
			_ = nd.cmd.Process.Kill()
			<-nd.done
		}
		if c.t.Failed() && nd.log.Len() > 0 {
			c.t.Logf("log of node %s:\n%s", nd.addr(), nd.log.String())
		}
	}
}

// status is the part of /status the tests read.
type status struct {
	State     string `json:"state"`
	Leader    string `json:"leader"` // the Raft leader's peer address
	LostCount int    `json:"lost_count"`
	// Quorum: the answering node knows a Raft leader; NoLeaderSeconds,
	// for how long it has not; the map's voters, those that answered, and
	// how many the map calls for.
	Quorum          bool    `json:"quorum"`
	NoLeaderSeconds float64 `json:"no_leader_seconds"`
	Voters          int     `json:"voters"`
	VotersUp        int     `json:"voters_up"`
	VoterTarget     int     `json:"voter_target"`
	Rebuild         struct {
		KeysDone  int64 `json:"keys_done"`
		KeysTotal int64 `json:"keys_total"`
	} `json:"rebuild"`
	ShardsRebuilding int `json:"shards_rebuilding"`
	Lost             []struct {
		Key, Scheme string
	} `json:"lost"`
	Epoch uint64 `json:"epoch"`
	Nodes []struct {
		ID, State  string
		Phase      string `json:"phase"`
		ClientAddr string `json:"client_addr"`
		Zone       string `json:"zone"`
		Serving    bool   `json:"serving"`
		Voter      bool   `json:"voter"`
		Raft       string `json:"raft"`
	} `json:"nodes"`
	Schemes []struct {
		Name    string `json:"name"`
		Keys    int64  `json:"keys"`
		Logical int64  `json:"logical_bytes"`
		Stored  int64  `json:"stored_bytes"`
	} `json:"schemes"`
}

// serving says every up node holds a fresh lease to serve its keys.
func (st status) serving() bool {
	for _, n := range st.Nodes {
		if n.State == "up" && !n.Serving {
			return false
		}
	}
	return true
}

func (c *testCluster) status(i int) (status, error) {
	var st status
	resp, err := c.httpGet(i, "/status", c.pass)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("/status: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// httpGet fetches path from node i's HTTP port (HTTPS when the cluster has
// TLS), with pass as basic auth unless it is empty.
func (c *testCluster) httpGet(i int, path, pass string) (*http.Response, error) {
	scheme, client := "http", http.DefaultClient
	if c.tls != nil {
		scheme, client = "https", &http.Client{Transport: &http.Transport{TLSClientConfig: c.tls}}
	}
	req, err := http.NewRequest(http.MethodGet, scheme+"://127.0.0.1:"+strconv.Itoa(c.nodes[i].httpPort)+path, nil)
	if err != nil {
		return nil, err
	}
	if pass != "" {
		req.SetBasicAuth("default", pass)
	}
	return client.Do(req)
}

// clientTLS is a client's TLS config for a cluster with the certificates
// f: the CA to trust and the client certificate to present.
func clientTLS(t *testing.T, f certs.Files) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// waitFormed waits until every node reports a formed cluster of all nodes.
func (c *testCluster) waitFormed(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for i := range c.nodes {
		for {
			st, err := c.status(i)
			if err == nil && st.State == "ok" && len(st.Nodes) == len(c.nodes) && st.serving() {
				break
			}
			select {
			case <-c.nodes[i].done:
				c.t.Fatalf("node %d exited while forming:\n%s", i, c.nodes[i].log.String())
			default:
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("cluster did not form in %s (node %d: %+v, %v)", timeout, i, st, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// freePorts reserves n distinct loopback ports by binding and releasing
// them. They are drawn below the kernel's ephemeral range: a port the
// kernel hands out for ":0" is one it also gives outgoing connections as
// their source port, and with thousands of connections a test's load
// opens, one took a node's port between its release here and the node's
// bind (TestPipelinedWritesAreBatched in CI: "bind: address already in
// use").
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo := ephemeralLow()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			t.Fatalf("no %d free loopback ports below %d", n, lo)
		}
		p := 10000 + rand.IntN(lo-10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		ports = append(ports, p)
	}
	return ports
}

// ephemeralLow is the lowest port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), 32768 if it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= 11000 {
		return 32768
	}
	return lo
}

// syncBuffer is a bytes.Buffer safe for a process's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// byAddr is the index of the node whose client address is addr, or -1.
func (c *testCluster) byAddr(addr string) int {
	return slices.IndexFunc(c.nodes, func(nd *node) bool { return nd.addr() == addr })
}
