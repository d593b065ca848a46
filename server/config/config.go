// Package config is a node's configuration: the fields flags, the
// environment and config files set (cmd/memgest maps them), their
// defaults and validation, the addresses a node listens at and
// advertises, and what an in-memory node of an in-process test cluster
// takes instead of sockets and disk (inmem.go). Package server aliases its
// types, so callers build a server.Config.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/memgest/memgest/cluster"
)

// Config is everything one node needs to start. Every field but InMemory
// can be set by a flag, an environment variable (MEMGEST_<FLAG>, upper
// case, '-' → '_') or a config file; cmd/memgest maps them
// (docs/operations.md lists them).
type Config struct {
	// Bind is the address the client, peer and HTTP listeners bind to.
	Bind string
	// Advertise is the host other nodes and clients use to reach this node;
	// empty means Bind.
	Advertise string
	// Port is the RESP client port.
	Port int
	// PeerPort carries node-to-node frames and Raft (one port, demultiplexed).
	PeerPort int
	// HTTPPort serves /metrics (Prometheus) and /status (JSON); 0 disables it.
	HTTPPort int
	// DataDir holds Raft state (log, stable store, snapshots) and the node id.
	// Data never touches disk.
	DataDir string
	// Join is the peer address of any existing member; empty with
	// BootstrapExpect ≥ 1 bootstraps a new cluster.
	Join string
	// BootstrapExpect is how many nodes must join before slots are placed
	// (only read on the bootstrapping node).
	BootstrapExpect int
	// Voters is the fewest Raft voters: 1, 3, 5 or 7 (only read on the
	// bootstrapping node). The leader gives more nodes a vote when the
	// catalogue's schemes tolerate more failures (cluster.VoterTarget).
	Voters int
	// Zone and Host name the node's failure domains (decision 0021): nodes
	// sharing a zone or a host may fail together, and placement puts every
	// shard's positions on distinct ones where it can. Optional; letters,
	// digits and . _ - : / only.
	Zone string
	Host string
	// ZoneFile, when set and Zone is not, names a file whose contents
	// (trimmed) are the zone: how a Kubernetes init container hands the
	// node's topology label over (deploy/k8s).
	ZoneFile string
	// Spare joins the node as a spare: it holds nothing until it replaces a
	// failed node (Ring §5.5). Needs Join.
	Spare bool
	// Redirect makes a node answer -MOVED for keys it does not coordinate,
	// like Redis Cluster, instead of forwarding the command.
	Redirect bool
	// RequirePass enables AUTH. It is the cluster's password: the founding
	// node puts it in the map, every node enforces the map's, and a node
	// given another one refuses to run (auth.go). Empty on a joining node
	// means "whatever the cluster has".
	RequirePass string
	// ClusterSecretFile holds the secret every peer connection proves
	// (trust.go). Empty means DataDir's cluster-secret file, which a
	// founding node creates when it is missing; a joining node needs it.
	ClusterSecretFile string
	// TLSCertFile and TLSKeyFile are the node's certificate and key in PEM;
	// when set, the client port speaks TLS, the HTTP port HTTPS and, with
	// TLSCluster, the peer port mutual TLS. Redis's names.
	TLSCertFile, TLSKeyFile string
	// TLSCACertFile is the CA that signs clients' and peers' certificates.
	TLSCACertFile string
	// TLSAuthClients is "yes" (clients must present a certificate of the
	// CA, Redis's default), "optional" or "no".
	TLSAuthClients string
	// TLSCluster puts the peer port under mutual TLS too when TLS is on.
	TLSCluster bool
	// EnablePprof serves Go's profiles on the HTTP port under /debug/pprof
	// (behind the password when there is one).
	EnablePprof bool
	// ProtectedMode refuses non-loopback clients when no password is set.
	ProtectedMode bool
	// MaxMemory bounds the bytes of keys and values a node stores (0 = no
	// limit); writes beyond it get -OOM.
	MaxMemory int64
	// MaxValueSize is the largest value accepted (proto-max-bulk-len).
	MaxValueSize int64
	// MaxArgs bounds the number of arguments in one command.
	MaxArgs int
	// MaxClients bounds the client connections served at once (Redis's
	// maxclients); one more is answered "-ERR max number of clients
	// reached" and closed. cmd/memgest lowers it to what the process's
	// open-file limit allows.
	MaxClients int
	// PubSubLimit bounds the output a subscribed client's connection may
	// have waiting to be written (Redis's client-output-buffer-limit
	// pubsub): past Hard bytes, or past Soft bytes for longer than
	// SoftFor, the node closes the connection, so that a subscriber that
	// does not read neither holds up publishers nor grows without bound.
	PubSubLimit OutputLimit
	// PeerTimeout bounds one node-to-node request.
	PeerTimeout time.Duration
	// HeartbeatInterval is how often a node reports to the Raft leader,
	// renewing its lease to serve.
	HeartbeatInterval time.Duration
	// FailureTimeout is how long the leader waits without a node's
	// heartbeat before marking it failed; a node whose lease (0.95 of this)
	// lapses stops serving its keys first (docs/failure-model.md).
	FailureTimeout time.Duration
	// NodeMTTF is the mean time to failure of one node that SCHEME.INFO
	// and /metrics model each scheme's nines with: any loss of the node's
	// memory (crash, reboot, hardware), so the default is a quarter
	// (docs/reliability.md).
	NodeMTTF time.Duration
	// RebuildRate bounds the bytes per second a node sends to rebuild lost
	// pieces (0: no bound).
	RebuildRate int64
	// RebuildShare bounds the share of the time each rebuild worker works,
	// in (0, 1]; 1 is no bound. Bytes measure a rep copy's cost but not a
	// split decode's; time measures both (server/repair/rebuild.go, core.Rest).
	RebuildShare float64
	// ScrubRate bounds the bytes per second a node reads to check the
	// CRC32C of what it stores (0: no scrub).
	ScrubRate int64
	// SweepInterval is how often a node audits one page of the pieces it
	// holds with their coordinators and drops the garbage failures left
	// (server/repair/sweep.go; 0: no sweep).
	SweepInterval time.Duration
	// CompactRate bounds the bytes of stripe chunks per second that
	// compaction empties by relocating their objects (datapath_compact.go;
	// 0: no compaction; the lists of retired shards are emptied anyway).
	CompactRate int64
	// CompactShare bounds the share of the time compaction works, in
	// (0, 1]; 1 is no bound.
	CompactShare float64
	// MigrateShare bounds the share of the time each mover of a
	// migration's source works, resting after each batch of keys, in
	// (0, 1]; 1 is no bound. The rebalance's rate bounds bytes, which a
	// mover of small keys hardly spends while its messages, the importer's
	// writes and the deletions here cost clients CPU; time measures those
	// (server/commands/migrate.go).
	MigrateShare float64
	// PolicyMoveRate bounds the keys per second a node moves for a
	// temperature policy (SCHEME.POLICY TEMPERATURE), idle keys to the
	// cold scheme and often-read cold keys back (server/temperature.go;
	// 0: no background moves; writes still move cold keys back).
	PolicyMoveRate int
	// EnableDebugCommand allows DEBUG (FLIP corrupts stored copies of a
	// key on purpose, for tests and drills).
	EnableDebugCommand bool
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// ConfigFile is the file the configuration was read from, if any
	// (reported by INFO server).
	ConfigFile string

	// InMemory, set by in-process test clusters only (no flag maps it),
	// runs the node without sockets or disk (inmem.go): DataDir, the
	// cluster secret file, the client and HTTP ports are then unused, and
	// Port and PeerPort only name the node's addresses.
	InMemory *InMemory
}

// DefaultMaxClients is Redis's default maxclients.
const DefaultMaxClients = 10000

// DefaultNodeMTTF is the default NodeMTTF: a restart a quarter.
const DefaultNodeMTTF = 90 * 24 * time.Hour

// DefaultRebuildShare is the default RebuildShare (docs/failure-model.md,
// "Rebuild": what it costs clients on a loaded machine).
const DefaultRebuildShare = 0.05

// DefaultMigrateShare is the default MigrateShare (docs/benchmarks/rebalance.md:
// what a rebalance costs clients on a loaded machine).
const DefaultMigrateShare = 0.1

// Default returns a single-node configuration on loopback.
func Default() Config {
	return Config{
		Bind:            "127.0.0.1",
		Port:            7001,
		PeerPort:        17001,
		HTTPPort:        27001,
		DataDir:         "memgest-data",
		BootstrapExpect: 1,
		Voters:          3,
		ProtectedMode:   true,
		TLSAuthClients:  "yes",
		TLSCluster:      true,
		MaxValueSize:    512 << 20,
		MaxArgs:         1 << 20,
		MaxClients:      DefaultMaxClients,
		PubSubLimit:     DefaultPubSubLimit,
		PeerTimeout:     5 * time.Second,
		LogLevel:        "warn",

		HeartbeatInterval: 200 * time.Millisecond,
		FailureTimeout:    1500 * time.Millisecond,
		NodeMTTF:          DefaultNodeMTTF,
		RebuildRate:       256 << 20,
		RebuildShare:      DefaultRebuildShare,
		ScrubRate:         4 << 20,
		SweepInterval:     time.Second,
		CompactRate:       1 << 20,
		CompactShare:      DefaultRebuildShare,
		MigrateShare:      DefaultMigrateShare,
		PolicyMoveRate:    100,
	}
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	if net.ParseIP(c.Bind) == nil {
		return fmt.Errorf("config: bind %q is not an IP address", c.Bind)
	}
	if ip := net.ParseIP(c.Bind); ip.IsUnspecified() && c.Advertise == "" {
		return fmt.Errorf("config: bind %s listens on every interface; give --advertise HOST so other nodes and clients can reach this one", c.Bind)
	}
	if err := checkPort("port", c.Port, false); err != nil {
		return err
	}
	if err := checkPort("peer-port", c.PeerPort, false); err != nil {
		return err
	}
	if err := checkPort("http-port", c.HTTPPort, true); err != nil {
		return err
	}
	if c.Port == c.PeerPort || (c.HTTPPort != 0 && (c.HTTPPort == c.Port || c.HTTPPort == c.PeerPort)) {
		return errors.New("config: port, peer-port and http-port must differ")
	}
	if c.InMemory != nil {
		if err := c.validateInMemory(); err != nil {
			return err
		}
	} else if c.DataDir == "" {
		return errors.New("config: data-dir is required (it holds Raft state)")
	}
	if c.Join == "" && c.BootstrapExpect < 1 {
		return errors.New("config: give --join ADDR or --bootstrap-expect N (N ≥ 1)")
	}
	if c.Join != "" {
		if _, _, err := net.SplitHostPort(c.Join); err != nil {
			return fmt.Errorf("config: join %q: want host:port of a member's peer port", c.Join)
		}
	}
	for _, d := range [][2]string{{"zone", c.Zone}, {"host", c.Host}} {
		if err := cluster.CheckDomain(d[0], d[1]); err != nil {
			return fmt.Errorf("config: %s: %w", d[0], err)
		}
	}
	if c.Spare && c.Join == "" {
		return errors.New("config: --spare needs --join: a spare joins an existing cluster")
	}
	if c.Voters != 1 && c.Voters != 3 && c.Voters != 5 && c.Voters != 7 { // cluster.ValidVoters
		return fmt.Errorf("config: voters must be 1, 3, 5 or 7, not %d", c.Voters)
	}
	if c.MaxValueSize < 1 || c.MaxValueSize > 512<<20 {
		return fmt.Errorf("config: max-value-size must be 1..%d bytes", 512<<20)
	}
	if c.MaxMemory < 0 {
		return errors.New("config: maxmemory must be ≥ 0")
	}
	if c.NodeMTTF <= 0 {
		return errors.New("config: node-mttf must be positive")
	}
	if c.RebuildRate < 0 {
		return errors.New("config: rebuild-rate must be ≥ 0 (0: no bound)")
	}
	if !(c.RebuildShare > 0 && c.RebuildShare <= 1) {
		return errors.New("config: rebuild-share must be in (0, 1] (1: no bound)")
	}
	if c.ScrubRate < 0 {
		return errors.New("config: scrub-rate must be ≥ 0 (0: no scrub)")
	}
	if c.SweepInterval < 0 {
		return errors.New("config: sweep-interval must be ≥ 0 (0: no sweep)")
	}
	if c.CompactRate < 0 {
		return errors.New("config: compact-rate must be ≥ 0 (0: no compaction)")
	}
	if !(c.CompactShare > 0 && c.CompactShare <= 1) {
		return errors.New("config: compact-share must be in (0, 1] (1: no bound)")
	}
	if !(c.MigrateShare > 0 && c.MigrateShare <= 1) {
		return errors.New("config: migrate-share must be in (0, 1] (1: no bound)")
	}
	if c.PolicyMoveRate < 0 || c.PolicyMoveRate > 1_000_000 {
		return errors.New("config: policy-move-rate must be 0..1000000 keys per second (0: no background moves)")
	}
	if c.MaxArgs < 2 {
		return errors.New("config: max-args must be ≥ 2")
	}
	if c.MaxClients < 1 {
		return errors.New("config: maxclients must be ≥ 1")
	}
	if err := c.PubSubLimit.validate(); err != nil {
		return err
	}
	if c.PeerTimeout <= 0 {
		return errors.New("config: peer-timeout must be positive")
	}
	if c.HeartbeatInterval <= 0 || c.FailureTimeout < 3*c.HeartbeatInterval {
		return fmt.Errorf("config: failure-timeout (%s) must be at least 3 heartbeat-intervals (%s), both positive", c.FailureTimeout, c.HeartbeatInterval)
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return nil
}

// validateTLS checks that the TLS files come together.
func (c Config) validateTLS() error {
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return errors.New("config: give tls-cert-file and tls-key-file together")
	}
	if c.TLSOn() && c.TLSCACertFile == "" {
		return errors.New("config: TLS needs tls-ca-cert-file (the CA of clients' and peers' certificates)")
	}
	if !c.TLSOn() && c.TLSCACertFile != "" {
		return errors.New("config: tls-ca-cert-file needs tls-cert-file and tls-key-file")
	}
	switch c.TLSAuthClients {
	case "yes", "no", "optional":
		return nil
	}
	return fmt.Errorf("config: tls-auth-clients %q: want yes, no or optional", c.TLSAuthClients)
}

// tlsOn says whether the node serves TLS.
func (c Config) TLSOn() bool { return c.TLSCertFile != "" }

func checkPort(name string, p int, zeroOK bool) error {
	if (p == 0 && zeroOK) || (p > 0 && p < 65536) {
		return nil
	}
	return fmt.Errorf("config: %s %d out of range 1..65535", name, p)
}

// advertiseHost is the host part others use to reach this node.
func (c Config) advertiseHost() string {
	if c.Advertise != "" {
		return c.Advertise
	}
	return c.Bind
}

// ClientAddr is the client address the node advertises.
func (c Config) ClientAddr() string {
	return net.JoinHostPort(c.advertiseHost(), strconv.Itoa(c.Port))
}

// PeerAddr is the peer address the node advertises.
func (c Config) PeerAddr() string {
	return net.JoinHostPort(c.advertiseHost(), strconv.Itoa(c.PeerPort))
}

// LoadZoneFile sets Zone from ZoneFile when Zone is empty.
func (c *Config) LoadZoneFile() error {
	if c.Zone != "" || c.ZoneFile == "" {
		return nil
	}
	b, err := os.ReadFile(c.ZoneFile)
	if err != nil {
		return fmt.Errorf("config: zone-file: %w", err)
	}
	c.Zone = strings.TrimSpace(string(b))
	return nil
}

// HTTPAddr is the HTTP address the node advertises.
func (c Config) HTTPAddr() string {
	if c.HTTPPort == 0 {
		return ""
	}
	return net.JoinHostPort(c.advertiseHost(), strconv.Itoa(c.HTTPPort))
}

// isLoopback reports whether Bind only accepts local connections.
func (c Config) isLoopback() bool {
	ip := net.ParseIP(c.Bind)
	return ip != nil && ip.IsLoopback()
}

// ProtectedRefuses applies protected mode to a client address, given
// whether clients must AUTH.
func (c Config) ProtectedRefuses(remote string, password bool) bool {
	return c.ProtectedMode && !password && !c.isLoopback() && !isLoopbackAddr(remote)
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
