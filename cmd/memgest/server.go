package main

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"

	"github.com/memgest/memgest/server"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func serverCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	var configFile string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run one memgest node",
		Long: `Run one memgest node.

Every flag can also be given as an environment variable MEMGEST_<FLAG> (upper
case, '-' as '_', e.g. MEMGEST_REQUIREPASS) or as a line "<flag> <value>" in
the file named by --config. Flags win over the environment, which wins over
the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigSources(cmd.Flags(), configFile); err != nil {
				return err
			}
			cfg.ConfigFile = configFile
			if err := cfg.LoadZoneFile(); err != nil {
				return err
			}
			return runServer(cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "config file: one \"<flag> <value>\" per line, # comments")
	f.StringVar(&cfg.Bind, "bind", cfg.Bind, "IP address to listen on")
	f.StringVar(&cfg.Advertise, "advertise", "", "host others use to reach this node (default: --bind)")
	f.IntVar(&cfg.Port, "port", cfg.Port, "RESP client port")
	f.IntVar(&cfg.PeerPort, "peer-port", cfg.PeerPort, "node-to-node and Raft port")
	f.IntVar(&cfg.HTTPPort, "http-port", cfg.HTTPPort, "metrics and status HTTP port (0 disables)")
	f.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory for Raft state and the node id (no data)")
	f.StringVar(&cfg.Join, "join", "", "peer address (host:port) of any cluster member to join")
	f.IntVar(&cfg.BootstrapExpect, "bootstrap-expect", cfg.BootstrapExpect, "nodes to wait for before placing slots (founding node only)")
	f.IntVar(&cfg.Voters, "voters", cfg.Voters, "fewest Raft voters: 1, 3, 5 or 7 (founding node only); the leader adds voters, up to 7, while the schemes tolerate more failures than the voters do")
	f.BoolVar(&cfg.Redirect, "redirect", false, "answer -MOVED like Redis Cluster instead of forwarding")
	f.StringVar(&cfg.RequirePass, "requirepass", "", "password clients must AUTH with: the cluster's, kept in its map (a founding node sets it; a joining node need not repeat it, and one given another refuses to run)")
	f.StringVar(&cfg.ClusterSecretFile, "cluster-secret-file", "", "file holding the secret every peer connection proves (default: <data-dir>/cluster-secret, which a founding node creates; a joining node needs it)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "PEM certificate of this node: TLS on the client port, HTTPS on the HTTP port and, with --tls-cluster, mutual TLS on the peer port")
	f.StringVar(&cfg.TLSKeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	f.StringVar(&cfg.TLSCACertFile, "tls-ca-cert-file", "", "PEM CA certificate that clients' and peers' certificates must chain to")
	f.StringVar(&cfg.TLSAuthClients, "tls-auth-clients", cfg.TLSAuthClients, "yes: clients must present a certificate of the CA; optional; no")
	f.BoolVar(&cfg.TLSCluster, "tls-cluster", cfg.TLSCluster, "with TLS on, use mutual TLS between nodes too")
	f.BoolVar(&cfg.EnablePprof, "enable-pprof", cfg.EnablePprof, "serve Go's profiles at /debug/pprof on the HTTP port (behind the password, when there is one)")
	f.BoolVar(&cfg.ProtectedMode, "protected-mode", cfg.ProtectedMode, "refuse non-loopback clients when bound beyond loopback without a password")
	f.Int64Var(&cfg.MaxMemory, "maxmemory", 0, "bytes of data this node may hold (0 = unlimited); writes beyond get -OOM")
	f.Int64Var(&cfg.MaxValueSize, "max-value-size", cfg.MaxValueSize, "largest value and bulk argument in bytes (proto-max-bulk-len)")
	f.IntVar(&cfg.MaxArgs, "max-args", cfg.MaxArgs, "most arguments in one command")
	f.IntVar(&cfg.MaxClients, "maxclients", cfg.MaxClients, "most client connections at once; lowered to fit the open-file limit")
	f.Var(&cfg.PubSubLimit, "client-output-buffer-limit-pubsub", "a subscribed client's unwritten output: \"<hard> <soft> <soft seconds>\"; past hard, or past soft for longer than the seconds, the connection is closed (0: no limit)")
	f.DurationVar(&cfg.PeerTimeout, "peer-timeout", cfg.PeerTimeout, "bound on one node-to-node request")
	f.Int64Var(&cfg.RebuildRate, "rebuild-rate", cfg.RebuildRate, "bytes per second a node sends to rebuild lost pieces (0: no bound)")
	f.Float64Var(&cfg.RebuildShare, "rebuild-share", cfg.RebuildShare, "share of the time each rebuild worker may work, resting the rest, in (0, 1] (1: no bound)")
	f.Int64Var(&cfg.ScrubRate, "scrub-rate", cfg.ScrubRate, "bytes per second a node reads to check the checksums of what it stores (0: no scrub)")
	f.Int64Var(&cfg.CompactRate, "compact-rate", cfg.CompactRate, "bytes of stripe chunks per second compaction empties by moving their objects, while garbage is over 5% of a scheme's chunks (0: no compaction; retired shards' lists are emptied anyway, at 4 MiB/s)")
	f.Float64Var(&cfg.CompactShare, "compact-share", cfg.CompactShare, "share of the time compaction may work, in (0, 1] (1: no bound)")
	f.Float64Var(&cfg.MigrateShare, "migrate-share", cfg.MigrateShare, "share of the time each of a migration's four movers (at its source) may work, resting after each batch of 16 keys, in (0, 1] (1: no bound; the rebalance's --rate bounds bytes besides)")
	f.IntVar(&cfg.PolicyMoveRate, "policy-move-rate", cfg.PolicyMoveRate, "keys per second a node moves for a temperature policy, idle keys to its cold scheme and often-read ones back (0: no background moves)")
	f.DurationVar(&cfg.SweepInterval, "sweep-interval", cfg.SweepInterval, "how often a node asks coordinators about one page of the pieces it holds, to drop those failures left behind (0: no sweep)")
	f.BoolVar(&cfg.EnableDebugCommand, "enable-debug-command", cfg.EnableDebugCommand, "allow DEBUG FLIP, which corrupts stored data on purpose (tests, drills)")
	f.StringVar(&cfg.Zone, "zone", "", "failure domain of this node (a zone, rack or room): placement spreads every shard over distinct zones")
	f.StringVar(&cfg.Host, "host", "", "machine this node runs on, when several nodes share one: placement spreads every shard over distinct hosts")
	f.StringVar(&cfg.ZoneFile, "zone-file", "", "file holding the zone, read at start when --zone is not given (deploy/k8s writes the node's topology label there)")
	f.BoolVar(&cfg.Spare, "spare", cfg.Spare, "join as a spare: hold nothing until replacing a failed node")
	f.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", cfg.HeartbeatInterval, "how often a node reports to the control-plane leader")
	f.DurationVar(&cfg.FailureTimeout, "failure-timeout", cfg.FailureTimeout, "silence after which the leader marks a node failed (≥ 3 heartbeat intervals)")
	f.DurationVar(&cfg.NodeMTTF, "node-mttf", cfg.NodeMTTF, "mean time to failure of a node (any loss of its memory) that SCHEME.INFO and /metrics model nines with")
	f.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	f.IntVar(&gcPercent, "gc-percent", gcPercent, "Go GC target for a large heap: growth over live data before a collection, never below 32 MiB (GOGC overrides it when set)")
	return cmd
}

// gcPercent is the GC target memgest runs with once its heap is large,
// unless GOGC is set. A node's heap is mostly large pointer-free buffers
// (store slabs, stripe chunks), which a collection does not scan, so
// collecting at 25% growth instead of Go's 100% costs little CPU and keeps
// RSS near the data: with MemEC's workload in stripe:4+2 it took the net
// RSS per object from 232 to 143 bytes (docs/benchmarks/memory.md).
var gcPercent = 25

// gcMinHeadroom is the least growth allowed before a collection: a small
// heap at a low target would be collected after every megabyte of
// requests' garbage.
const gcMinHeadroom = 32 << 20

// setGC applies --gc-percent unless the environment chose with GOGC: the
// target is what leaves gcMinHeadroom of growth, between gcPercent and
// Go's 100, adjusted every second to the live heap.
func setGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for range time.Tick(time.Second) {
			metrics.Read(sample)
			debug.SetGCPercent(gcTarget(sample[0].Value.Uint64(), gcPercent))
		}
	}()
}

// gcTarget is the GC percent for a live heap of live bytes: enough for
// gcMinHeadroom of growth, at least floor and at most 100.
func gcTarget(live uint64, floor int) int {
	if live == 0 {
		return 100
	}
	return max(floor, min(100, int(gcMinHeadroom*100/live)))
}

func runServer(cfg server.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	setGC()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(cfg.LogLevel)}))
	var err error
	if cfg.MaxClients, err = fitMaxClients(cfg.MaxClients, log); err != nil {
		return err
	}
	node, err := server.Start(cfg, log)
	if err != nil {
		return err
	}
	log.Info("memgest node serving", "id", node.ID(), "addr", node.ClientAddr(), "pid", os.Getpid())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
		return node.Close()
	case err := <-node.Failed():
		node.Close()
		return err
	}
}

func logLevel(s string) slog.Level {
	var l slog.Level
	_ = l.UnmarshalText([]byte(s))
	return l
}

// applyConfigSources fills flags not given on the command line from
// MEMGEST_* environment variables, then from the config file.
func applyConfigSources(fs *pflag.FlagSet, file string) error {
	fromFile := map[string]string{}
	if file != "" {
		var err error
		if fromFile, err = readConfigFile(file, fs); err != nil {
			return err
		}
	}
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" || firstErr != nil {
			return
		}
		env := "MEMGEST_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				firstErr = fmt.Errorf("%s=%q: %w", env, v, err)
			}
			return
		}
		if v, ok := fromFile[f.Name]; ok {
			if err := fs.Set(f.Name, v); err != nil {
				firstErr = fmt.Errorf("%s: %s %q: %w", file, f.Name, v, err)
			}
		}
	})
	return firstErr
}

func readConfigFile(path string, fs *pflag.FlagSet) (map[string]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer fh.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(fh)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		name, value, _ := strings.Cut(text, " ")
		if fs.Lookup(name) == nil || name == "config" {
			return nil, fmt.Errorf("%s:%d: unknown setting %q", path, line, name)
		}
		out[name] = strings.Trim(strings.TrimSpace(value), `"`)
	}
	return out, sc.Err()
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print memgest's version",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Println("memgest", server.Version) },
	}
}
