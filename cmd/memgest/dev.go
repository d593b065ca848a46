package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memgest/memgest/server"
	"github.com/spf13/cobra"
)

// Port layout of a dev cluster: node i listens for clients on base+i, for
// peers on base+10000+i (like Redis Cluster's bus port) and for HTTP on
// base+20000+i.
const (
	peerOffset = 10000
	httpOffset = 20000
)

type devOptions struct {
	nodes, spares int
	basePort      int
	dataDir       string
	redirect      bool
	extra         []string
	timeout       time.Duration
}

func devCmd() *cobra.Command {
	o := devOptions{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start a local cluster of memgest server processes on 127.0.0.1",
		Long: `Start N memgest server processes on 127.0.0.1 (client ports P..P+N-1, peer
ports P+10000.., HTTP ports P+20000..), wait until the cluster serves, print
each node's address and PID, and stop them all on Ctrl-C or SIGTERM. The first
three nodes are Raft voters. With --spares S, S more nodes join as spares
(after the N nodes' ports): they hold nothing until one replaces a failed
node. A node that exits is reported and the others keep running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 6, "number of nodes")
	f.IntVar(&o.spares, "spares", 0, "number of spare nodes, beyond --nodes")
	f.IntVar(&o.basePort, "base-port", 7001, "client port of the first node")
	f.StringVar(&o.dataDir, "data-dir", "", "parent of the nodes' Raft directories (default: a temporary directory, removed on exit)")
	f.BoolVar(&o.redirect, "redirect", false, "nodes answer -MOVED instead of forwarding")
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
	if o.basePort < 1 || o.basePort+httpOffset+o.total() > 65535 {
		return fmt.Errorf("--base-port %d leaves no room for %d nodes' HTTP ports (base+%d)", o.basePort, o.total(), httpOffset)
	}
	return nil
}

func runDev(o devOptions) error {
	if err := o.validate(); err != nil {
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
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	procs := make([]*exec.Cmd, 0, o.total())
	defer func() { stopAll(procs) }()
	exited := make(chan int, o.total())
	for i := 0; i < o.total(); i++ {
		cmd := exec.Command(exe, append(devArgs(o, i, dir), o.extra...)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.Env = devEnv(os.Environ(), runtime.NumCPU(), o.total())
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start node %d: %w", i+1, err)
		}
		procs = append(procs, cmd)
		go func(i int) { _ = procs[i].Wait(); exited <- i }(i)
	}
	st, err := waitFormed(o, sig, exited)
	if err != nil {
		return err
	}
	printCluster(st, procs, o)
	return watchNodes(procs, sig, exited)
}

// watchNodes runs until Ctrl-C/SIGTERM or until every node has exited. A
// node that exits (say, killed to watch the cluster fail over) is reported
// and the others keep running.
func watchNodes(procs []*exec.Cmd, sig chan os.Signal, exited chan int) error {
	for alive := len(procs); alive > 0; alive-- {
		select {
		case s := <-sig:
			fmt.Printf("\n%s: stopping %d nodes\n", s, len(procs))
			return nil
		case i := <-exited:
			fmt.Fprintf(os.Stderr, "memgest dev: node %d (pid %d) exited: %v; the others keep running\n",
				i+1, procs[i].Process.Pid, procs[i].ProcessState)
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

func devArgs(o devOptions, i int, dir string) []string {
	port := o.basePort + i
	args := []string{"server",
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--peer-port", strconv.Itoa(port + peerOffset),
		"--http-port", strconv.Itoa(port + httpOffset),
		"--data-dir", filepath.Join(dir, "node"+strconv.Itoa(i+1)),
		"--cluster-secret-file", filepath.Join(dir, devSecretFile),
	}
	if i == 0 {
		args = append(args, "--bootstrap-expect", strconv.Itoa(o.nodes), "--voters", strconv.Itoa(devVoters(o.nodes)))
	} else {
		args = append(args, "--join", "127.0.0.1:"+strconv.Itoa(o.basePort+peerOffset))
	}
	if o.redirect {
		args = append(args, "--redirect")
	}
	if i >= o.nodes {
		args = append(args, "--spare")
	}
	return args
}

// total is the number of processes dev starts: nodes and spares.
func (o devOptions) total() int { return o.nodes + o.spares }

// devVoters is 3 Raft voters when there are at least 3 nodes, else 1.
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
func waitFormed(o devOptions, sig chan os.Signal, exited chan int) (server.Status, error) {
	deadline := time.After(o.timeout)
	url := fmt.Sprintf("http://127.0.0.1:%d/status", o.basePort+httpOffset)
	for {
		if st, err := fetchStatus(url); err == nil && st.State == "ok" && len(st.Nodes) == o.total() && st.Serving() {
			return st, nil
		}
		select {
		case s := <-sig:
			return server.Status{}, fmt.Errorf("%s while the cluster was forming", s)
		case i := <-exited:
			return server.Status{}, fmt.Errorf("node %d exited while the cluster was forming", i+1)
		case <-deadline:
			return server.Status{}, errors.New("the cluster did not form in time (see the nodes' logs above)")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func fetchStatus(url string) (server.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return server.Status{}, err
	}
	defer resp.Body.Close()
	var st server.Status
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func printCluster(st server.Status, procs []*exec.Cmd, o devOptions) {
	fmt.Printf("memgest dev cluster ready: %d nodes, epoch %d, default scheme %s\n", len(procs), st.Epoch, defaultScheme(st))
	for i, p := range procs {
		role := ""
		if i >= o.nodes {
			role = "  (spare)"
		}
		fmt.Printf("  node %d  redis://127.0.0.1:%d  pid %d  http://127.0.0.1:%d/metrics%s\n",
			i+1, o.basePort+i, p.Process.Pid, o.basePort+httpOffset+i, role)
	}
	fmt.Printf("Try: redis-cli -p %d SET greeting hello SCHEME rep:3   (Ctrl-C stops the cluster)\n", o.basePort)
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
func stopAll(procs []*exec.Cmd) {
	for _, p := range procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range procs {
		for p.ProcessState == nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if p.ProcessState == nil {
			_ = p.Process.Kill()
		}
	}
}
