//go:build linux

package tests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memgest/memgest/server"
	"github.com/redis/go-redis/v9"
)

// The network-namespace harness of netns_test.go: a private network of
// Linux network namespaces ("hosts") joined by a bridge that lives in a
// namespace of its own, and memgest nodes started inside them. Every `ip`
// command it runs either adds or deletes one of its own namespaces or runs
// inside one of them (`ip -n <ns> ...`), so the default namespace's
// interfaces, addresses and routes are never touched.

// netnsRunDir is where `ip netns add` mounts a namespace's handle.
const netnsRunDir = "/var/run/netns"

// The ports of every node: each node has a host of its own, so all use the
// same ones (memgest's defaults), as on separate machines.
const (
	nsClientPort = 7001
	nsPeerPort   = 17001
	nsHTTPPort   = 27001
)

// netLab is a private IPv4 network of namespaces on one bridge.
type netLab struct {
	t      *testing.T
	id     string // unique per run: "mgtest-<pid>-<random hex>"
	subnet string // "10.X.Y.", a /24 drawn at random
	sw     string // the switch namespace holding bridge br0
	hosts  []*netHost
	made   []string // namespaces created, deleted at cleanup
}

// netHost is one namespace of a netLab with one interface, eth0, on the
// bridge, and one address.
type netHost struct {
	name string   // the namespace's name: <lab id>-<role> (`ip netns list`)
	ip   string   // its address on the lab network
	ns   *os.File // its namespace handle, to dial from it (setns)
}

// newNetLab creates the switch namespace and its bridge, and registers the
// cleanup that deletes every namespace the lab creates. It skips the test
// where network namespaces cannot be made: not root, no `ip`, or `ip netns
// add` refused (a container without CAP_SYS_ADMIN, say).
func newNetLab(t *testing.T) *netLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netns: needs root to create network namespaces (ip netns add); skipped")
	}
	if sysSetns[runtime.GOARCH] == 0 {
		t.Skipf("netns: setns(2)'s number on %s is not known to the harness; skipped", runtime.GOARCH)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("netns: no `ip` (iproute2) on PATH to create network namespaces; skipped")
	}
	var r [5]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	l := &netLab{
		t:  t,
		id: fmt.Sprintf("mgtest-%d-%s", os.Getpid(), hex.EncodeToString(r[:3])),
		// 10.X.Y.0/24 with X in 200..249 and Y random: no address of it is
		// ever given to the default namespace, so it cannot clash with the
		// host's networks; drawing it keeps two labs' logs apart.
		subnet: fmt.Sprintf("10.%d.%d.", 200+int(r[3])%50, r[4]),
	}
	t.Cleanup(l.teardown)
	l.sw = l.id + "-sw"
	if out, err := l.ip("netns", "add", l.sw); err != nil {
		t.Skipf("netns: cannot create a network namespace (`ip netns add` failed: %v: %s); skipped", err, out)
	}
	l.made = append(l.made, l.sw)
	if out, err := l.ip("-n", l.sw, "link", "add", "br0", "type", "bridge"); err != nil {
		t.Skipf("netns: cannot create a bridge in a namespace (no bridge support in the kernel? %v: %s); skipped", err, out)
	}
	l.in(l.sw, "link", "set", "br0", "up")
	return l
}

// ip runs `ip args...` and returns its combined output.
func (l *netLab) ip(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// in runs `ip -n ns args...` (a command inside one of the lab's
// namespaces, never the default one) and fails the test if it fails.
func (l *netLab) in(ns string, args ...string) {
	l.t.Helper()
	if !slices.Contains(l.made, ns) {
		l.t.Fatalf("netns: %s is not one of the lab's namespaces", ns)
	}
	if out, err := l.ip(append([]string{"-n", ns}, args...)...); err != nil {
		l.t.Fatalf("netns: ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
}

// addHost creates a namespace named for role (n0, spare, client, ...) with
// lo up and eth0 on the bridge, with the lab's next address.
func (l *netLab) addHost(role string) *netHost {
	l.t.Helper()
	i := len(l.hosts)
	h := &netHost{name: fmt.Sprintf("%s-%s", l.id, role), ip: l.subnet + strconv.Itoa(10+i)}
	if out, err := l.ip("netns", "add", h.name); err != nil {
		l.t.Fatalf("netns: ip netns add %s: %v: %s", h.name, err, out)
	}
	l.made = append(l.made, h.name)
	// The veth pair is made inside the switch namespace and its far end
	// moved at once into the host's: neither end ever exists in the
	// default namespace, so their names cannot clash with the host's.
	port := "p" + strconv.Itoa(i)
	l.in(l.sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.name)
	l.in(l.sw, "link", "set", port, "master", "br0")
	l.in(l.sw, "link", "set", port, "up")
	l.in(h.name, "link", "set", "lo", "up")
	l.in(h.name, "addr", "add", h.ip+"/24", "dev", "eth0")
	l.in(h.name, "link", "set", "eth0", "up")
	ns, err := os.Open(netnsRunDir + "/" + h.name)
	if err != nil {
		l.t.Fatalf("netns: %v", err)
	}
	h.ns = ns
	l.hosts = append(l.hosts, h)
	return h
}

// teardown deletes every namespace the lab made (which deletes their veth
// pairs and the bridge with them). The test's processes are killed before,
// by cleanups registered after the lab's.
func (l *netLab) teardown() {
	for _, h := range l.hosts {
		h.ns.Close()
	}
	for _, ns := range slices.Backward(l.made) {
		if out, err := l.ip("netns", "del", ns); err != nil {
			l.t.Errorf("netns: ip netns del %s: %v: %s", ns, err, out)
		}
	}
}

// dial connects from h's namespace: the socket is created by a thread
// that has entered h's namespace, and belongs to it for its life. The
// thread stays locked, so it ends with its goroutine and no other
// goroutine ever runs in that namespace.
func (h *netHost) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if _, _, errno := syscall.Syscall(sysSetns[runtime.GOARCH], h.ns.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
			ch <- result{nil, fmt.Errorf("setns %s: %w", h.name, errno)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// sysSetns is setns(2)'s number by GOARCH (golang.org/x/sys/unix's
// zsysnum_linux_*.go; package syscall lacks it, and the module does not
// import x/sys directly).
var sysSetns = map[string]uintptr{
	"386": 346, "amd64": 308, "arm": 375, "arm64": 268, "loong64": 268, "mips": 4344, "mipsle": 4344,
	"mips64": 5303, "mips64le": 5303, "ppc64": 350, "ppc64le": 350, "riscv64": 268, "s390x": 339,
}

// command is `ip netns exec <h> name args...`: ip enters the namespace
// and execs the program, so the process's PID is the program's own.
func (h *netHost) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.name, name}, args...)...)
}

// netnsInode is the inode of a network namespace handle (a namespace's
// identity), to check a process runs in the one it was put in.
func netnsInode(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// nsNode is one memgest process in a namespace of its own.
type nsNode struct {
	host *netHost
	args []string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

func (n *nsNode) addr() string     { return net.JoinHostPort(n.host.ip, strconv.Itoa(nsClientPort)) }
func (n *nsNode) peerAddr() string { return net.JoinHostPort(n.host.ip, strconv.Itoa(nsPeerPort)) }
func (n *nsNode) httpAddr() string { return net.JoinHostPort(n.host.ip, strconv.Itoa(nsHTTPPort)) }

// alive says the process has not exited.
func (n *nsNode) alive() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// nsCluster is a memgest cluster whose nodes run in a netLab's hosts,
// reached from its client host.
type nsCluster struct {
	t      *testing.T
	lab    *netLab
	client *netHost // the namespace the test's clients (and CLI) run in
	nodes  []*nsNode
	// removed are nodes drained out of the cluster: /status still lists
	// them (state left), CLUSTER NODES no longer does.
	removed []*nsNode
	secret  string // --cluster-secret-file of every node
	pass    string // --requirepass
	extra   []string
	http    *http.Client
}

// startNSCluster starts one node per host, the first founding the cluster
// (bootstrap-expect len(hosts), 3 voters) and the others joining it, and
// waits until it has formed.
func startNSCluster(t *testing.T, lab *netLab, client *netHost, hosts []*netHost, extra ...string) *nsCluster {
	t.Helper()
	c := &nsCluster{t: t, lab: lab, client: client, secret: writeSecret(t), pass: "netns-" + lab.id, extra: extra}
	c.http = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: client.dial, Proxy: nil}}
	t.Cleanup(c.stop)
	for i, h := range hosts {
		var role []string
		if i == 0 {
			role = []string{"--bootstrap-expect", strconv.Itoa(len(hosts)), "--voters", "3"}
		} else {
			role = []string{"--join", c.nodes[0].peerAddr()}
		}
		c.start(h, c.serverArgs(h, c.secret, role...))
	}
	c.waitFormed(60*time.Second, len(hosts))
	return c
}

// serverArgs are the flags of a node on h with the secret file secret
// (none when empty). Every node is given the password, as hosts sharing
// one configuration would be (a joining node may also omit it).
func (c *nsCluster) serverArgs(h *netHost, secret string, more ...string) []string {
	args := []string{"server", "--bind", h.ip, "--advertise", h.ip,
		"--port", strconv.Itoa(nsClientPort), "--peer-port", strconv.Itoa(nsPeerPort), "--http-port", strconv.Itoa(nsHTTPPort),
		"--data-dir", c.t.TempDir(), "--log-level", nodeLogLevel(), "--requirepass", c.pass}
	if secret != "" {
		args = append(args, "--cluster-secret-file", secret)
	}
	return append(append(args, c.extra...), more...)
}

// launch starts memgest with args in h's namespace; the process is not one
// of the cluster's nodes until start adds it.
func (c *nsCluster) launch(h *netHost, args []string) *nsNode {
	c.t.Helper()
	nd := &nsNode{host: h, args: args, log: &syncBuffer{}, done: make(chan struct{})}
	nd.cmd = h.command(binary, args...)
	nd.cmd.Env = nodeEnv(os.Environ())
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		c.t.Fatalf("start memgest in %s: %v", h.name, err)
	}
	go func() { _ = nd.cmd.Wait(); close(nd.done) }()
	return nd
}

// start launches a node of the cluster on h.
func (c *nsCluster) start(h *netHost, args []string) *nsNode {
	c.t.Helper()
	nd := c.launch(h, args)
	c.nodes = append(c.nodes, nd)
	return nd
}

// kill ends nd's process by its PID (SIGKILL) and waits for it.
func (n *nsNode) kill() {
	if n.alive() {
		_ = n.cmd.Process.Kill()
	}
	<-n.done
}

// stop kills every node by PID, printing their logs if the test failed.
func (c *nsCluster) stop() {
	for _, nd := range c.nodes {
		nd.kill()
		if c.t.Failed() && nd.log.Len() > 0 {
			c.t.Logf("log of node %s (%s):\n%s", nd.addr(), nd.host.name, nd.log.String())
		}
	}
	c.http.CloseIdleConnections()
}

// checkIsolated checks nd's process is memgest itself (so killing its PID
// kills the node, not an `ip` wrapper) and runs in its host's namespace.
func (c *nsCluster) checkIsolated(nd *nsNode) {
	c.t.Helper()
	pid := strconv.Itoa(nd.cmd.Process.Pid)
	exe, err := os.Readlink("/proc/" + pid + "/exe")
	if err != nil || exe != binary {
		c.t.Fatalf("process %s of node %s is %q (%v), want %s", pid, nd.addr(), exe, err, binary)
	}
	got, err1 := netnsInode("/proc/" + pid + "/ns/net")
	want, err2 := netnsInode(netnsRunDir + "/" + nd.host.name)
	self, err3 := netnsInode("/proc/self/ns/net")
	if err := errors.Join(err1, err2, err3); err != nil || got != want || got == self {
		c.t.Fatalf("node %s: network namespace %d, want %s's %d (the test's is %d) %v", nd.addr(), got, nd.host.name, want, self, err)
	}
}

// status fetches nd's /status over the lab network.
func (c *nsCluster) status(nd *nsNode) (server.Status, error) {
	var st server.Status
	body, code, err := c.get(nd, "/status", true)
	if err != nil {
		return st, err
	}
	if code != http.StatusOK {
		return st, fmt.Errorf("/status of %s: %d", nd.httpAddr(), code)
	}
	return st, json.Unmarshal(body, &st)
}

// get fetches path from nd's HTTP port, with the password when auth.
func (c *nsCluster) get(nd *nsNode, path string, auth bool) ([]byte, int, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+nd.httpAddr()+path, nil)
	if err != nil {
		return nil, 0, err
	}
	if auth {
		req.SetBasicAuth("default", c.pass)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// waitStatus polls nd's /status until ok accepts it.
func (c *nsCluster) waitStatus(nd *nsNode, timeout time.Duration, what string, ok func(server.Status) bool) server.Status {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := c.status(nd)
		if err == nil && ok(st) {
			return st
		}
		if !nd.alive() {
			c.t.Fatalf("node %s exited while waiting for %s:\n%s", nd.addr(), what, nd.log.String())
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %s: no %s after %s (status %+v, %v)", nd.addr(), what, timeout, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFormed waits until every live node reports a formed, serving
// cluster of n nodes (failed ones count: the map keeps them), and checks
// each runs isolated in its namespace.
func (c *nsCluster) waitFormed(timeout time.Duration, n int) {
	c.t.Helper()
	for _, nd := range c.nodes {
		if !nd.alive() {
			continue
		}
		c.waitStatus(nd, timeout, fmt.Sprintf("formed cluster of %d", n), func(st server.Status) bool {
			return st.State == "ok" && len(st.Nodes) == n && st.Serving()
		})
		c.checkIsolated(nd)
	}
}

// nodeLine is the index of nd's line in st.Nodes, or -1.
func nodeLine(st server.Status, nd *nsNode) int {
	for i, n := range st.Nodes {
		if n.ClientAddr == nd.addr() {
			return i
		}
	}
	return -1
}

// plain is a client of nd alone (nd forwards other nodes' keys), dialing
// from the client namespace.
func (c *nsCluster) plain(nd *nsNode) *redis.Client {
	cl := redis.NewClient(&redis.Options{Addr: nd.addr(), Dialer: c.client.dial, Password: c.pass, DisableIdentity: true})
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// clusterClient is a cluster-mode client seeded with the live nodes: it
// routes by the addresses CLUSTER SLOTS reports, dialing from the client
// namespace.
func (c *nsCluster) clusterClient() *redis.ClusterClient {
	var addrs []string
	for _, nd := range c.nodes {
		if nd.alive() {
			addrs = append(addrs, nd.addr())
		}
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Dialer: c.client.dial, Password: c.pass, DisableIdentity: true})
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// cli runs `memgest args...` in the client namespace (as an operator's
// shell on another host would) and returns its output.
func (c *nsCluster) cli(args ...string) (string, error) {
	cmd := c.client.command(binary, args...)
	// No HTTP proxy from the environment: the lab network is private.
	cmd.Env = append(nodeEnv(os.Environ()), "NO_PROXY=*", "no_proxy=*")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// statusTable runs `memgest status` against nd and returns its output and
// its node table's rows by address, each row's cells by column header
// (STATE, ZONE, SLOTS, ...), so that a column added to the table moves
// nothing a test reads.
func (c *nsCluster) statusTable(nd *nsNode) (string, map[string]map[string]string) {
	c.t.Helper()
	out, err := c.cli("status", "--addr", nd.httpAddr(), "--pass", c.pass)
	if err != nil {
		c.t.Fatalf("memgest status --addr %s: %v\n%s", nd.httpAddr(), err, out)
	}
	rows := map[string]map[string]string{}
	var header []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "NODE":
			header = f
		case len(f) == 0:
			header = nil
		case header != nil && len(f) == len(header):
			row := map[string]string{}
			for i, h := range header {
				row[h] = f[i]
			}
			rows[row["ADDRESS"]] = row
		}
	}
	return out, rows
}

// authFailures reads memgest_auth_failures_total{kind} from nd's /metrics
// (served without the password).
func (c *nsCluster) authFailures(nd *nsNode, kind string) int {
	c.t.Helper()
	body, code, err := c.get(nd, "/metrics", false)
	if err != nil || code != http.StatusOK {
		c.t.Fatalf("/metrics of %s: %d %v", nd.httpAddr(), code, err)
	}
	m := regexp.MustCompile(`(?m)^memgest_auth_failures_total\{kind="` + kind + `"\} (\d+)`).FindSubmatch(body)
	if m == nil {
		c.t.Fatalf("node %s has no memgest_auth_failures_total{kind=%q}", nd.addr(), kind)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
