package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/reliability"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/commands"
	"github.com/spf13/cobra"
)

// Defaults of memgest plan. A node of an in-memory store fails whenever
// its process goes (crash, OOM kill, reboot, kernel update), not only its
// hardware: the default MTTF assumes a restart a quarter. The detection
// time is memgest server's default --failure-timeout.
const (
	defaultNodeMTTFHours  = 90 * 24
	defaultDetectionHours = 1.5 / 3600
)

// defaultPlanSchemes are the schemes memgest plan compares when none is
// named; those wider than the cluster are left out. split:K+M lays out
// and models as stripe:K+M does.
var defaultPlanSchemes = []string{"none", "rep:2", "rep:3", "rep:4", "stripe:2+1", "stripe:4+1", "stripe:2+2",
	"stripe:4+2", "hybrid:4+2", "stripe:6+3", "stripe:8+3", "stripe:10+4"}

// planOptions are memgest plan's flags.
type planOptions struct {
	nodes                              int
	nodeMTTF, rebuild, detection       float64 // hours
	mission, hostMTTF                  float64 // hours
	rebuildRate, bytesPerNode, logical float64 // bytes per second, bytes
	schemes                            []string
	mix                                string
	hosts                              int
	hostLayout                         string
	// domains, read from a cluster (--addr), is the failure domain of
	// each node in ring order, overriding --hosts and --host-layout.
	domains       []int
	parallel      bool
	nines         float64
	sweep, asJSON bool
	plot          string
	status        statusOptions
	fromCluster   string // what --addr supplied, for the header
}

func planCmd() *cobra.Command {
	o := planOptions{nodeMTTF: defaultNodeMTTFHours, detection: defaultDetectionHours, mission: reliability.HoursPerYear}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Compare schemes' durability and memory on a cluster: MTTDL, loss probability, nines",
		Long: `Compare schemes on an N-node cluster: the node failures each tolerates, its
bytes per logical byte, its mean time to data loss (MTTDL), the probability
of losing some key within the mission time, that probability's nines, and a
key's availability. The model is a Markov chain over the sets of nodes that
are down, on memgest's placement (shard i on nodes i, i+1, ... of the ring),
with whole-host failures when --hosts is given (docs/reliability.md).

A failed node is whole again after --detection plus its rebuild time: give
that time with --rebuild, or a rate with --rebuild-rate and either
--bytes-per-node (every scheme fills the nodes alike) or --logical-bytes
(each scheme stores logical × its overhead across the nodes).

With --addr (a node's HTTP address) the node count, bytes per node and the
rebuild rate the cluster measured come from the running cluster, and,
unless --scheme is given, the schemes its keys use and their mix.

Durations take Go's units or d and y ("90s", "12h", "30d", "1y"); byte
counts take k/m/g/t (powers of 1000) or kb/mb/gb/tb (powers of 1024), and
rates may end in /s.`,
		Example: `  memgest plan --nodes 6 --rebuild 10m
  memgest plan --nodes 12 --rebuild-rate 200mb/s --bytes-per-node 64gb --nines 6
  memgest plan --nodes 12 --rebuild 30m --hosts 4 --host-layout blocks --host-mttf 1y --scheme rep:3 --scheme stripe:4+2
  memgest plan --addr 127.0.0.1:9301 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, &o, cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 0, "number of nodes (default: the cluster's, with --addr)")
	f.Var(hoursValue{&o.nodeMTTF}, "node-mttf", "mean time to failure of one node (any loss of its memory: crash, reboot, hardware)")
	f.Var(hoursValue{&o.rebuild}, "rebuild", "time to rebuild one failed node's pieces, once detected")
	f.Var(bytesValue{&o.rebuildRate}, "rebuild-rate", "bytes per second the cluster rebuilds a failed node at (with --bytes-per-node or --logical-bytes)")
	f.Var(bytesValue{&o.bytesPerNode}, "bytes-per-node", "bytes each node holds")
	f.Var(bytesValue{&o.logical}, "logical-bytes", "logical bytes of the data set (keys and values, once)")
	f.Var(hoursValue{&o.detection}, "detection", "time to detect a failed node (memgest server --failure-timeout)")
	f.Var(hoursValue{&o.mission}, "mission", "mission time the loss probability is over")
	f.StringArrayVar(&o.schemes, "scheme", nil, "a scheme to evaluate, e.g. stripe:4+2 (repeatable; default: a range of schemes that fit)")
	f.StringVar(&o.mix, "mix", "", "also evaluate a cluster holding a mix, e.g. rep:3=0.2,stripe:4+2=0.8 (fractions of logical bytes)")
	f.IntVar(&o.hosts, "hosts", 0, "nodes run on this many hosts, which fail whole at --host-mttf")
	f.StringVar(&o.hostLayout, "host-layout", "alternate", "how nodes map to hosts in ring order: alternate (node i on host i mod H) or blocks (consecutive nodes share a host)")
	f.Var(hoursValue{&o.hostMTTF}, "host-mttf", "mean time between failures of a whole host (with --hosts)")
	f.BoolVar(&o.parallel, "parallel-rebuild", false, "rebuild all failed nodes at once, each at the full rate (default: one at a time)")
	f.Float64Var(&o.nines, "nines", 0, "show the cheapest scheme in memory per logical byte that reaches this many nines")
	f.BoolVar(&o.sweep, "sweep", false, "show each scheme's nines with node MTTF, rebuild, detection (and host MTTF) scaled ×¼ to ×4")
	f.BoolVar(&o.asJSON, "json", false, "print JSON")
	f.StringVar(&o.plot, "plot", "", "draw nines against bytes per logical byte for each scheme into this PNG file")
	f.StringVar(&o.status.addr, "addr", "", "HTTP address (host:port) of a node of a running cluster to take nodes, bytes and rebuild rate from")
	f.StringVarP(&o.status.pass, "pass", "a", "", "the cluster's password, with --addr (default: $REDISCLI_AUTH)")
	f.StringVar(&o.status.caFile, "cacert", "", "CA certificate to verify the node's HTTPS with, with --addr")
	return cmd
}

// planReport is what memgest plan prints (or encodes as JSON).
type planReport struct {
	Inputs   planInputs                           `json:"inputs"`
	Results  []reliability.Result                 `json:"results"`
	Target   *float64                             `json:"target_nines,omitempty"`
	Cheapest *reliability.Result                  `json:"cheapest,omitempty"`
	Sweep    map[string][]reliability.Sensitivity `json:"sweep,omitempty"`
}

// planInputs echoes the model's inputs.
type planInputs struct {
	Nodes           int     `json:"nodes"`
	NodeMTTFHours   float64 `json:"node_mttf_hours"`
	DetectionHours  float64 `json:"detection_hours"`
	RebuildHours    float64 `json:"rebuild_hours,omitempty"`
	RebuildRate     float64 `json:"rebuild_rate_bytes_per_second,omitempty"`
	BytesPerNode    float64 `json:"bytes_per_node,omitempty"`
	LogicalBytes    float64 `json:"logical_bytes,omitempty"`
	MissionHours    float64 `json:"mission_hours"`
	Hosts           int     `json:"hosts,omitempty"`
	HostLayout      string  `json:"host_layout,omitempty"`
	HostMTTFHours   float64 `json:"host_mttf_hours,omitempty"`
	ParallelRebuild bool    `json:"parallel_rebuild"`
	FromCluster     string  `json:"from_cluster,omitempty"`
}

func runPlan(cmd *cobra.Command, o *planOptions, out io.Writer) error {
	var entries []reliability.Mix
	if o.status.addr != "" {
		cluster, err := o.readCluster(cmd)
		if err != nil {
			return err
		}
		entries = cluster
	}
	if err := o.validate(cmd); err != nil {
		return err
	}
	named, err := o.namedEntries(len(entries) == 0)
	if err != nil {
		return err
	}
	entries = append(named, entries...)
	rep, err := o.evaluate(entries)
	if err != nil {
		return err
	}
	if o.plot != "" {
		if err := plotNines(o.plot, rep); err != nil {
			return err
		}
	}
	if o.asJSON {
		return writeJSON(out, rep)
	}
	printPlan(out, rep)
	return nil
}

// validate checks the flags that readCluster did not fill.
func (o *planOptions) validate(cmd *cobra.Command) error {
	switch {
	case o.nodes < 1 || o.nodes > 64:
		return fmt.Errorf("--nodes must be 1 to 64 (got %d)", o.nodes)
	case !(o.nodeMTTF > 0):
		return errors.New("--node-mttf must be positive")
	case !(o.mission > 0):
		return errors.New("--mission must be positive")
	case cmd.Flags().Changed("rebuild") && cmd.Flags().Changed("rebuild-rate"):
		return errors.New("give --rebuild or --rebuild-rate, not both")
	case o.rebuild == 0 && o.rebuildRate == 0:
		return errors.New("give the time to rebuild a node: --rebuild, or --rebuild-rate with --bytes-per-node or --logical-bytes")
	case o.rebuild == 0 && o.bytesPerNode == 0 && o.logical == 0:
		return errors.New("--rebuild-rate needs --bytes-per-node or --logical-bytes")
	case o.bytesPerNode > 0 && o.logical > 0:
		return errors.New("give --bytes-per-node or --logical-bytes, not both")
	case o.hosts < 0 || o.hosts > o.nodes:
		return fmt.Errorf("--hosts must be 1 to --nodes (%d)", o.nodes)
	case o.hosts > 0 && !(o.hostMTTF > 0):
		return errors.New("--hosts needs --host-mttf")
	case o.hosts == 0 && o.hostMTTF > 0:
		return errors.New("--host-mttf needs --hosts")
	case o.hostLayout != "alternate" && o.hostLayout != "blocks":
		return fmt.Errorf("--host-layout must be alternate or blocks (got %q)", o.hostLayout)
	case cmd.Flags().Changed("nines") && !(o.nines > 0):
		return errors.New("--nines must be positive")
	}
	return nil
}

// namedEntries parses --scheme and --mix; with neither (and nothing from
// a cluster), the default schemes that fit the nodes.
func (o *planOptions) namedEntries(defaults bool) ([]reliability.Mix, error) {
	names := o.schemes
	if len(names) == 0 && o.mix == "" && defaults {
		for _, s := range defaultPlanSchemes {
			if sp, _ := scheme.Parse(s); sp.Nodes() <= o.nodes {
				names = append(names, s)
			}
		}
	}
	var out []reliability.Mix
	for _, s := range names {
		sp, err := o.spec(s)
		if err != nil {
			return nil, err
		}
		out = append(out, reliability.Single(sp.Model()))
	}
	if o.mix != "" {
		mix, err := o.parseMix(o.mix)
		if err != nil {
			return nil, err
		}
		out = append(out, mix)
	}
	return out, nil
}

// spec parses a scheme and checks that it fits the cluster.
func (o *planOptions) spec(s string) (scheme.Spec, error) {
	sp, err := scheme.Parse(s)
	if err != nil {
		return sp, err
	}
	if sp.Nodes() > o.nodes {
		return sp, fmt.Errorf("%s needs %d nodes, the cluster has %d", sp, sp.Nodes(), o.nodes)
	}
	return sp, nil
}

// parseMix reads "spec=fraction,spec=fraction".
func (o *planOptions) parseMix(s string) (reliability.Mix, error) {
	var mix reliability.Mix
	for _, part := range strings.Split(s, ",") {
		name, frac, ok := strings.Cut(strings.TrimSpace(part), "=")
		f, err := strconv.ParseFloat(frac, 64)
		if !ok || err != nil || !(f > 0) || f > 1 {
			return nil, fmt.Errorf("--mix: %q: want scheme=fraction with 0 < fraction ≤ 1", part)
		}
		sp, err := o.spec(name)
		if err != nil {
			return nil, fmt.Errorf("--mix: %w", err)
		}
		mix = append(mix, reliability.Share{Scheme: sp.Model(), Fraction: f})
	}
	return mix, nil
}

// cluster is the model's cluster for mix: its rebuild time follows the
// bytes the mix puts on a node when a rate is given.
func (o *planOptions) cluster(mix reliability.Mix) reliability.Cluster {
	c := reliability.Cluster{Nodes: o.nodes, NodeMTTF: o.nodeMTTF, Detection: o.detection,
		Rebuild: o.rebuild, ParallelRebuild: o.parallel, HostMTTF: o.hostMTTF}
	if c.Rebuild == 0 {
		bytes := o.bytesPerNode
		if bytes == 0 {
			bytes = o.logical * mix.Overhead() / float64(o.nodes)
		}
		c.Rebuild = max(reliability.RebuildHours(bytes, o.rebuildRate), 1e-9)
	}
	if len(o.domains) == o.nodes && o.hostMTTF > 0 {
		c.Hosts = o.domains
	} else if o.hosts > 0 {
		c.Hosts = make([]int, o.nodes)
		for i := range c.Hosts {
			if o.hostLayout == "blocks" {
				c.Hosts[i] = i * o.hosts / o.nodes
			} else {
				c.Hosts[i] = i % o.hosts
			}
		}
	}
	return c
}

// evaluate runs the model for every entry, and the target and sweep.
func (o *planOptions) evaluate(entries []reliability.Mix) (planReport, error) {
	rep := planReport{Inputs: planInputs{Nodes: o.nodes, NodeMTTFHours: o.nodeMTTF, DetectionHours: o.detection,
		RebuildHours: o.rebuild, RebuildRate: o.rebuildRate, BytesPerNode: o.bytesPerNode, LogicalBytes: o.logical,
		MissionHours: o.mission, ParallelRebuild: o.parallel, FromCluster: o.fromCluster}}
	if o.hosts > 0 {
		rep.Inputs.Hosts, rep.Inputs.HostLayout, rep.Inputs.HostMTTFHours = o.hosts, o.hostLayout, o.hostMTTF
	}
	for _, mix := range entries {
		r, err := reliability.Evaluate(o.cluster(mix), mix, o.mission)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, r)
		if o.sweep {
			s, err := reliability.Sweep(o.cluster(mix), mix, o.mission, sweepFactors)
			if err != nil {
				return rep, err
			}
			if rep.Sweep == nil {
				rep.Sweep = map[string][]reliability.Sensitivity{}
			}
			rep.Sweep[r.Scheme] = s
		}
	}
	if o.nines > 0 {
		rep.Target = &o.nines
		if best, ok := reliability.Cheapest(rep.Results, o.nines); ok {
			rep.Cheapest = &best
		}
	}
	return rep, nil
}

// sweepFactors scale each input for --sweep.
var sweepFactors = []float64{0.25, 0.5, 2, 4}

// readCluster takes nodes, bytes per node and the measured rebuild rate
// from a running cluster's /status (flags given win), and returns the
// schemes its keys use and, when there are several, their mix.
func (o *planOptions) readCluster(cmd *cobra.Command) ([]reliability.Mix, error) {
	client, err := o.status.client(io.Discard)
	if err != nil {
		return nil, err
	}
	st, err := client.fetch()
	if err != nil {
		return nil, fmt.Errorf("status from %s: %w", client.addr, err)
	}
	changed := cmd.Flags().Changed
	up := 0 // the placement ring: failed nodes and spares hold no shard
	for _, n := range st.Nodes {
		if n.State == "up" {
			up++
		}
	}
	var stored float64
	for _, s := range st.Schemes {
		stored += float64(s.Stored)
	}
	if !changed("nodes") {
		o.nodes = up
	}
	if !changed("bytes-per-node") && !changed("logical-bytes") && up > 0 {
		o.bytesPerNode = stored / float64(up)
	}
	rate := st.Rebuild.Rate()
	if !changed("rebuild") && !changed("rebuild-rate") {
		if rate <= 0 {
			return nil, fmt.Errorf("the cluster at %s has not rebuilt a node yet, so it has no rebuild rate to report: give --rebuild or --rebuild-rate", client.addr)
		}
		o.rebuildRate = rate
	}
	o.fromCluster = fmt.Sprintf("%s: %d nodes up, %s stored per node, rebuild %s/s measured over %.1f s of rebuilding",
		client.addr, up, commands.HumanBytes(int64(o.bytesPerNode)), commands.HumanBytes(int64(rate)), st.Rebuild.BusySeconds)
	if !changed("hosts") && !changed("host-layout") {
		o.fromCluster += o.readDomains(st)
	}
	if changed("scheme") || changed("mix") {
		return nil, nil
	}
	return clusterEntries(st)
}

// readDomains takes the cluster's failure domains (zones, else hosts;
// decision 0021) as the model's hosts, in the ring order its placement
// rotates (each shard's first node), so whole-domain failures are
// modelled on the cluster's actual layout. It returns a note for the
// report: what it modelled, or that --host-mttf is needed to.
func (o *planOptions) readDomains(st server.Status) string {
	var up []cluster.Node
	zones, hosts := false, false
	for _, n := range st.Nodes {
		if n.State == "up" {
			up = append(up, cluster.Node{ID: cluster.NodeID(n.ID), Zone: n.Zone, Host: n.Host})
			zones, hosts = zones || n.Zone != "", hosts || n.Host != ""
		}
	}
	if (!zones && !hosts) || len(up) != o.nodes {
		return ""
	}
	kind := "host"
	if zones {
		kind = "zone"
	}
	byID := map[cluster.NodeID]cluster.Node{}
	for _, n := range up {
		byID[n.ID] = n
	}
	names := map[string]int{}
	o.domains = nil
	for _, sh := range cluster.PlaceNodes(up, len(up)) {
		n := byID[sh.Placement[0]]
		d := n.Host
		if zones {
			d = n.Zone
		}
		if _, ok := names[d]; !ok {
			names[d] = len(names)
		}
		o.domains = append(o.domains, names[d])
	}
	if o.hostMTTF <= 0 {
		o.domains = nil
		return fmt.Sprintf("; %d %ss (give --host-mttf to model a whole %s failing)", len(names), kind, kind)
	}
	o.hosts = len(names)
	return fmt.Sprintf("; whole-%s failures modelled over its %d %ss", kind, len(names), kind)
}

// clusterEntries are the schemes a cluster's keys use and, when there
// are several, their mix by logical bytes.
func clusterEntries(st server.Status) ([]reliability.Mix, error) {
	var out []reliability.Mix
	var mix reliability.Mix
	var total float64
	for _, s := range st.Schemes {
		if s.Keys == 0 {
			continue
		}
		sp, err := scheme.Parse(s.Spec)
		if err != nil {
			return nil, fmt.Errorf("scheme %s of the cluster: %w", s.Name, err)
		}
		m := sp.Model()
		m.Name = s.Name
		out = append(out, reliability.Single(m))
		if s.Logical > 0 {
			mix = append(mix, reliability.Share{Scheme: m, Fraction: float64(s.Logical)})
			total += float64(s.Logical)
		}
	}
	if len(mix) > 1 && total > 0 {
		for i := range mix {
			mix[i].Fraction /= total
		}
		sort.SliceStable(mix, func(i, j int) bool { return mix[i].Fraction > mix[j].Fraction })
		out = append(out, mix)
	}
	return out, nil
}
