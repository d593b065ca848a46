package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memgest/memgest/internal/certs"
	"github.com/memgest/memgest/server"
	"github.com/spf13/cobra"
)

// Port layout of a dev cluster: node i listens for clients on base+i, for
// peers on base+1000+i and for HTTP on base+2000+i. The offsets are small so
// that every common base keeps all three below the kernel's ephemeral range
// (32768 and up on Linux), where outgoing connections take their ports and
// would collide with a listener's.
const (
	peerOffset = 1000
	httpOffset = 2000
)

type devOptions struct {
	nodes, spares int
	zones         int // spread the nodes over zone-1..zone-N, round robin; 0: no zones
	basePort      int
	dataDir       string
	redirect      bool
	tls           bool
	password      string
	extra         []string
	timeout       time.Duration
}

func devCmd() *cobra.Command {
	o := devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start a local cluster of memgest server processes on 127.0.0.1",
		Long: `Start N memgest server processes on 127.0.0.1 (client ports P..P+N-1, peer
ports P+1000.., HTTP ports P+2000..), wait until the cluster serves, print
each node's address and PID and how to reach it, and stop them all on Ctrl-C
or SIGTERM. The first three nodes are Raft voters, and more nodes get a vote
(up to 7) once a scheme tolerates more failures than three voters do (rep:3
and stripe:4+2 call for five). With --spares S, S more
nodes join as spares (after the N nodes' ports): they hold nothing until one
replaces a failed node. With --zones Z the nodes are spread round robin over
zones zone-1..zone-Z (--zone), so a whole zone can be killed to see the
cluster survive it. A node that exits is reported and the others keep
running. The nodes share a fresh cluster secret; with --tls they also get a
throwaway CA and certificates (and so does redis-cli: dev prints the
command). 'memgest status' finds a running dev cluster by itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 6, "number of nodes")
	f.IntVar(&o.spares, "spares", 0, "number of spare nodes, beyond --nodes")
	f.IntVar(&o.zones, "zones", 0, "spread the nodes round robin over this many zones (zone-1, zone-2, ...); 0: none")
	f.IntVar(&o.basePort, "base-port", 7001, "client port of the first node")
	f.StringVar(&o.dataDir, "data-dir", "", "parent of the nodes' Raft directories (default: a temporary directory, removed on exit)")
	f.BoolVar(&o.redirect, "redirect", false, "nodes answer -MOVED instead of forwarding")
	f.BoolVar(&o.tls, "tls", false, "TLS on every port, with a throwaway CA and certificates made in the cluster's directory")
	f.StringVar(&o.password, "requirepass", "", "the cluster's client password")
	f.StringArrayVar(&o.extra, "server-arg", nil, "extra flag passed to every node (repeatable), e.g. --server-arg=--maxmemory=1000000")
	f.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long to wait for the cluster to form")
	return cmd
}

func (o devOptions) validate() error {
	if o.nodes < 1 || o.nodes > 100 {
		return fmt.Errorf("--nodes must be 1..100, not %d", o.nodes)
	}
	if o.spares < 0 || o.spares > 100 {
		return fmt.Errorf("--spares must be 0..100, not %d", o.spares)
	}
	if o.zones < 0 || o.zones > o.total() {
		return fmt.Errorf("--zones must be 0..%d (the number of nodes), not %d", o.total(), o.zones)
	}
	if o.total() > peerOffset {
		return fmt.Errorf("--nodes plus --spares must be at most %d", peerOffset)
	}
	if o.basePort < 1 || o.basePort+httpOffset+o.total() > 65535 {
		return fmt.Errorf("--base-port %d leaves no room for %d nodes' HTTP ports (base+%d)", o.basePort, o.total(), httpOffset)
	}
	return nil
}

// ports lists every port the cluster listens on.
func (o devOptions) ports() []int {
	var out []int
	for _, off := range []int{0, peerOffset, httpOffset} {
		for i := range o.total() {
			out = append(out, o.basePort+off+i)
		}
	}
	return out
}

// checkPorts refuses ports in the kernel's ephemeral range and ports taken
// already (another dev cluster on the same base, say), before any node
// starts: a node that cannot bind would otherwise exit after the others
// joined, or dev would find someone else's cluster answering.
func (o devOptions) checkPorts() error {
	lo, hi := ephemeralRange()
	for _, p := range o.ports() {
		if p >= lo && p <= hi {
			return fmt.Errorf("port %d is in the kernel's ephemeral range %d-%d, where outgoing connections take their ports: choose --base-port below %d",
				p, lo, hi, lo-httpOffset-o.total())
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return fmt.Errorf("port %d is in use (another memgest dev on base port %d? choose another --base-port): %w", p, o.basePort, err)
		}
		l.Close()
	}
	return nil
}

// ephemeralRange is the kernel's range of ports for outgoing connections
// (Linux's net.ipv4.ip_local_port_range; its default elsewhere).
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
		l, errL := strconv.Atoi(f[0])
		h, errH := strconv.Atoi(f[1])
		if errL == nil && errH == nil {
			return l, h
		}
	}
	return 32768, 60999
}

func runDev(o devOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	if err := o.checkPorts(); err != nil {
		return err
	}
	dir, cleanup, err := devDataDir(o.dataDir)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := writeDevSecret(dir); err != nil {
		return err
	}
	var tlsFiles *certs.Files
	if o.tls {
		if tlsFiles, err = devCerts(dir); err != nil {
			return err
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	procs, exited, err := startDevNodes(o, dir, tlsFiles)
	defer func() { stopAll(procs) }()
	if err != nil {
		return err
	}
	status, err := o.statusClient(tlsFiles)
	if err != nil {
		return err
	}
	st, err := waitFormed(o, status, filepath.Join(dir, "node1"), sig, exited)
	if err != nil {
		return err
	}
	forget, err := devState{PID: os.Getpid(), BasePort: o.basePort, HTTP: status.addr, CAFile: status.caFile,
		Password: o.password, Started: time.Now()}.write()
	if err != nil {
		return err
	}
	defer forget()
	printCluster(st, procs, o, tlsFiles)
	return watchNodes(procs, sig, exited)
}

// startDevNodes starts every node; exited delivers the index of a node
// whose process ends.
func startDevNodes(o devOptions, dir string, tlsFiles *certs.Files) ([]*devProc, chan int, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	procs := make([]*devProc, 0, o.total())
	exited := make(chan int, o.total())
	for i := 0; i < o.total(); i++ {
		cmd := exec.Command(exe, append(devArgs(o, i, dir, tlsFiles), o.extra...)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.Env = devEnv(os.Environ(), runtime.NumCPU(), o.total())
		if err := cmd.Start(); err != nil {
			return procs, exited, fmt.Errorf("start node %d: %w", i+1, err)
		}
		p := &devProc{cmd: cmd, done: make(chan struct{})}
		procs = append(procs, p)
		go func() {
			_ = cmd.Wait()
			close(p.done)
			exited <- i
		}()
	}
	return procs, exited, nil
}

// devProc is one node process of a dev cluster; done is closed once it
// has exited and cmd.ProcessState is set.
type devProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// statusClient reads node 1's /status as dev and `memgest status` do.
func (o devOptions) statusClient(tlsFiles *certs.Files) (*statusClient, error) {
	ca := ""
	if tlsFiles != nil {
		ca = tlsFiles.CA
	}
	return newStatusClient("127.0.0.1:"+strconv.Itoa(o.basePort+httpOffset), ca, o.password)
}

// watchNodes runs until Ctrl-C/SIGTERM or until every node has exited. A
// node that exits (say, killed to watch the cluster fail over) is reported
// and the others keep running.
func watchNodes(procs []*devProc, sig chan os.Signal, exited chan int) error {
	for alive := len(procs); alive > 0; alive-- {
		select {
		case s := <-sig:
			fmt.Printf("\n%s: stopping %d nodes\n", s, len(procs))
			return nil
		case i := <-exited:
			fmt.Fprintf(os.Stderr, "memgest dev: node %d (pid %d) exited: %v; the others keep running\n",
				i+1, procs[i].cmd.Process.Pid, procs[i].cmd.ProcessState)
		}
	}
	return errors.New("every node exited")
}

// devEnv is the environment of a dev node. The nodes share one machine, so
// unless GOMAXPROCS is set they divide its cores: six Go schedulers each
// spinning on every core of a 2-core machine cost 10% of throughput at
// pipeline depth 1 (docs/benchmarks/analysis.md).
func devEnv(env []string, cpus, nodes int) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return env
		}
	}
	return append(env, "GOMAXPROCS="+strconv.Itoa(max(1, cpus/nodes)))
}

func devArgs(o devOptions, i int, dir string, tlsFiles *certs.Files) []string {
	port := o.basePort + i
	args := []string{"server",
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--peer-port", strconv.Itoa(port + peerOffset),
		"--http-port", strconv.Itoa(port + httpOffset),
		"--data-dir", filepath.Join(dir, "node"+strconv.Itoa(i+1)),
		"--cluster-secret-file", filepath.Join(dir, devSecretFile),
	}
	if tlsFiles != nil {
		args = append(args, "--tls-cert-file", tlsFiles.Cert, "--tls-key-file", tlsFiles.Key, "--tls-ca-cert-file", tlsFiles.CA)
	}
	if i == 0 {
		args = append(args, "--bootstrap-expect", strconv.Itoa(o.nodes), "--voters", strconv.Itoa(devVoters(o.nodes)))
		if o.password != "" {
			args = append(args, "--requirepass", o.password)
		}
	} else {
		args = append(args, "--join", "127.0.0.1:"+strconv.Itoa(o.basePort+peerOffset))
	}
	if o.redirect {
		args = append(args, "--redirect")
	}
	if i >= o.nodes {
		args = append(args, "--spare")
	}
	if o.zones > 0 {
		args = append(args, "--zone", devZone(i, o.zones))
	}
	return args
}

// devZone is node i's zone when dev spreads the nodes over zones: round
// robin, so the ring's placement over the join order is already spread.
func devZone(i, zones int) string { return "zone-" + strconv.Itoa(i%zones+1) }

// total is the number of processes dev starts: nodes and spares.
func (o devOptions) total() int { return o.nodes + o.spares }

// devVoters is the fewest Raft voters (--voters): 3 when there are at
// least 3 nodes, else 1. The leader adds more as the schemes call for.
func devVoters(n int) int {
	if n >= 3 {
		return 3
	}
	return 1
}

// devSecretFile is the cluster secret every dev node proves to its peers,
// in the dev cluster's directory.
const devSecretFile = "cluster-secret"

// writeDevSecret writes a fresh random cluster secret into dir, unless one
// is there from an earlier run on the same --data-dir.
func writeDevSecret(dir string) error {
	path := filepath.Join(dir, devSecretFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(hex.EncodeToString(raw)+"\n"), 0o600)
}

// devCerts makes a throwaway CA and the nodes' and a client's certificates
// in dir/tls.
func devCerts(dir string) (*certs.Files, error) {
	tlsDir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return nil, err
	}
	f, err := certs.WriteDev(tlsDir, []string{"127.0.0.1", "localhost", "::1"})
	if err != nil {
		return nil, err
	}
	return &f, nil
}

func devDataDir(dir string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o700)
	}
	tmp, err := os.MkdirTemp("", "memgest-dev-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// waitFormed polls the first node's /status until the cluster is formed.
// The answer must come from the node dev started (its id, which it writes
// to node1Dir when it starts), not from another cluster on the same port.
func waitFormed(o devOptions, status *statusClient, node1Dir string, sig chan os.Signal, exited chan int) (server.Status, error) {
	deadline := time.After(o.timeout)
	for {
		st, err := status.fetch()
		if err == nil && st.State == "ok" && len(st.Nodes) == o.total() && st.Serving() && st.Node == nodeID(node1Dir) {
			return st, nil
		}
		select {
		case s := <-sig:
			return server.Status{}, fmt.Errorf("%s while the cluster was forming", s)
		case i := <-exited:
			return server.Status{}, fmt.Errorf("node %d exited while the cluster was forming (see its log above)", i+1)
		case <-deadline:
			return server.Status{}, fmt.Errorf("the cluster did not form in %s (last answer: %v; see the nodes' logs above)", o.timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// nodeID is the id a node keeps in its data directory, or "" before it
// wrote it.
func nodeID(dataDir string) string {
	b, _ := os.ReadFile(filepath.Join(dataDir, "node-id"))
	return strings.TrimSpace(string(b))
}

func printCluster(st server.Status, procs []*devProc, o devOptions, tlsFiles *certs.Files) {
	fmt.Printf("memgest dev cluster ready: %d nodes, epoch %d, default scheme %s\n", len(procs), st.Epoch, defaultScheme(st))
	web := "http"
	if tlsFiles != nil {
		web = "https"
	}
	for i, p := range procs {
		role := ""
		if i >= o.nodes {
			role = "  (spare)"
		}
		fmt.Printf("  node %d  127.0.0.1:%d  pid %d  %s://127.0.0.1:%d/metrics%s\n",
			i+1, o.basePort+i, p.cmd.Process.Pid, web, o.basePort+httpOffset+i, role)
	}
	fmt.Printf("Try:     redis-cli -p %d%s SET greeting hello SCHEME rep:3\n", o.basePort, redisCLIFlags(o, tlsFiles))
	fmt.Printf("Status:  %s status   (finds this cluster; or --addr 127.0.0.1:%d)\n", os.Args[0], o.basePort+httpOffset)
	fmt.Println("Ctrl-C stops the cluster.")
}

// redisCLIFlags are the flags redis-cli needs for this cluster.
func redisCLIFlags(o devOptions, tlsFiles *certs.Files) string {
	var s string
	if tlsFiles != nil {
		s += fmt.Sprintf(" --tls --cacert %s --cert %s --key %s", tlsFiles.CA, tlsFiles.ClientCert, tlsFiles.ClientKey)
	}
	if o.password != "" {
		s += " -a " + o.password
	}
	return s
}

func defaultScheme(st server.Status) string {
	for _, s := range st.Schemes {
		if s.Default {
			return s.Name
		}
	}
	return "none"
}

// stopAll sends SIGTERM to every node, then SIGKILL to any still running
// after five seconds.
func stopAll(procs []*devProc) {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline.C:
			for _, q := range procs {
				select {
				case <-q.done:
				default:
					_ = q.cmd.Process.Kill()
				}
			}
			return
		}
	}
}
