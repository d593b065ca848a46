package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// Server commands: introspection and configuration.
func init() {
	register("command", &command{run: cmdCommand})
	register("config", &command{run: cmdConfig})
	register("info", &command{run: cmdInfo})
}

func cmdCommand(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	return resp.CommandCommand(args)
}

func cmdConfig(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	switch strings.ToUpper(string(args[1])) {
	case "GET":
		if len(args) < 3 {
			return resp.Err("ERR wrong number of arguments for 'config|get' command")
		}
		return n.configGet(args[2:])
	case "SET":
		return n.configSet(ctx, args[2:])
	case "RESETSTAT":
		n.resetStats()
		return resp.OK()
	case "REWRITE":
		return resp.OK()
	}
	return resp.Errorf("ERR unknown subcommand '%s'. Try CONFIG HELP.", args[1])
}

// configSet is CONFIG SET: requirepass only, which is the cluster's (auth.go);
// the rest is per-node configuration given by flags at start.
func (n *Server) configSet(ctx context.Context, pairs [][]byte) resp.Reply {
	if len(pairs)%2 != 0 { // Redis 7.2's configSetCommand: an odd count is a syntax error
		return resp.ErrSyntax
	}
	if len(pairs) != 2 || !strings.EqualFold(string(pairs[0]), "requirepass") {
		return resp.Err("ERR memgest: CONFIG SET supports requirepass only (the cluster's password); restart the node with new flags for the rest")
	}
	return n.setPassword(ctx, string(pairs[1]))
}

// configParams are the parameters CONFIG GET reports, Redis names first.
func (n *Server) configParams() [][2]string {
	yesno := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	return [][2]string{
		{"bind", n.Cfg.Bind},
		{"port", strconv.Itoa(n.Cfg.Port)},
		{"maxmemory", strconv.FormatInt(n.Cfg.MaxMemory, 10)},
		{"maxmemory-policy", "noeviction"},
		{"maxclients", strconv.Itoa(n.Cfg.MaxClients)},
		{"proto-max-bulk-len", strconv.FormatInt(n.Cfg.MaxValueSize, 10)},
		{"requirepass", n.configPassword()},
		{"protected-mode", yesno(n.Cfg.ProtectedMode)},
		{"cluster-enabled", "yes"},
		{"databases", "1"},
		{"appendonly", "no"},
		{"save", ""},
		{"timeout", "0"},
		{"memgest-redirect", yesno(n.Cfg.Redirect)},
		{"memgest-peer-port", strconv.Itoa(n.Cfg.PeerPort)},
		{"memgest-default-scheme", n.Ctl.Map().DefaultScheme().Name()},
	}
}

func (n *Server) configGet(patterns [][]byte) resp.Reply {
	var items []resp.Reply
	for _, kv := range n.configParams() {
		for _, p := range patterns {
			if resp.GlobMatch(p, []byte(kv[0]), true) {
				items = append(items, resp.BulkString(kv[0]), resp.BulkString(kv[1]))
				break
			}
		}
	}
	return resp.Map(items...)
}

// cmdInfo answers INFO with Redis 7's sections, in its order and with its
// field names, then memgest's own; only the sections asked for are built.
// Where a Redis field measures something memgest does not have (a disk
// snapshot, a replication stream, forks, evictions), it shows the value
// Redis shows for a server without it. docs/operations.md lists where
// every field comes from.
func cmdInfo(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	want := make([]string, 0, len(args)-1)
	for _, a := range args[1:] {
		want = append(want, string(a))
	}
	var sections []resp.InfoSection
	for _, s := range []struct {
		name  string
		extra bool
		build func() resp.InfoSection
	}{
		{"Server", false, n.infoServer},
		{"Clients", false, n.infoClients},
		{"Memory", false, n.infoMemory},
		{"Persistence", false, n.infoPersistence},
		{"Stats", false, n.infoStats},
		{"Replication", false, n.infoReplication},
		{"CPU", false, infoCPU},
		{"Modules", false, func() resp.InfoSection { return resp.InfoSection{Name: "Modules"} }},
		{"Commandstats", true, n.info.cmds.section},
		{"Errorstats", false, n.info.cmds.errs.section},
		{"Cluster", false, func() resp.InfoSection {
			return resp.InfoSection{Name: "Cluster", Fields: [][2]string{{"cluster_enabled", "1"}}}
		}},
		{"Keyspace", false, n.infoKeyspace},
		{"Memgest", false, func() resp.InfoSection { return n.infoMemgest(ctx) }},
	} {
		if resp.InfoSelects(want, s.name, s.extra) {
			sections = append(sections, s.build())
		}
	}
	return resp.Verbatim("txt", string(resp.RenderInfo(sections, want)))
}

// infoState is what INFO reports that the rest of the node does not keep:
// per-command and per-error counters, the instantaneous meters, and the
// identities Redis gives each run of a server.
type infoState struct {
	cmds    *cmdStats
	meters  meters
	started time.Time // this process's start, for uptime and rdb_last_save_time
	// runID and replID are random per run, as Redis's run_id and
	// master_replid: a restart shows as a new run_id.
	runID, replID string
}

func newInfoState() *infoState {
	return &infoState{cmds: newCmdStats(), started: time.Now(), runID: randomHex40(), replID: randomHex40()}
}

// randomHex40 is 40 random hexadecimal digits, Redis's run id format.
func randomHex40() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// resetStats is CONFIG RESETSTAT: it zeroes what Redis's resetServerStats
// zeroes of INFO (the Stats section's counters, commandstats, errorstats)
// and restarts the memory peak from the memory used now. The Memgest
// section's counters and /metrics are left alone: Prometheus counters
// only grow.
func (n *Server) resetStats() {
	for _, c := range []*atomic.Int64{&n.Stats.Commands, &n.Stats.Connections, &n.Stats.Expired,
		&n.Stats.RejectedConns, &n.Stats.KeyspaceHits, &n.Stats.KeyspaceMisses,
		&n.info.meters.netIn, &n.info.meters.netOut} {
		c.Store(0)
	}
	n.info.cmds.reset()
	n.info.meters.peakMemory.Store(n.MemUsed.Used())
}

func (n *Server) infoServer() resp.InfoSection {
	now := time.Now()
	up := now.Sub(n.info.started)
	exe, _ := os.Executable()
	return resp.InfoSection{Name: "Server", Fields: [][2]string{
		{"redis_version", redisVersion},
		{"memgest_version", n.version},
		{"redis_mode", "cluster"},
		{"os", runtime.GOOS + " " + runtime.GOARCH},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"go_version", runtime.Version()},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"run_id", n.info.runID},
		{"tcp_port", strconv.Itoa(n.Cfg.Port)},
		{"server_time_usec", strconv.FormatInt(now.UnixMicro(), 10)},
		{"uptime_in_seconds", strconv.FormatInt(int64(up.Seconds()), 10)},
		{"uptime_in_days", strconv.FormatInt(int64(up.Hours()/24), 10)},
		{"executable", exe},
		{"config_file", n.Cfg.ConfigFile},
	}}
}

func (n *Server) infoClients() resp.InfoSection {
	return resp.InfoSection{Name: "Clients", Fields: [][2]string{
		{"connected_clients", strconv.Itoa(n.openClients())},
		{"maxclients", strconv.Itoa(n.Cfg.MaxClients)},
		{"blocked_clients", "0"}, // no command blocks a connection
	}}
}

// infoMemory reports memory as Redis does, with used_memory the bytes the
// node's stores hold (slabs, large values, index): what maxmemory bounds
// and OOM refusals compare with. The process's footprint is
// used_memory_rss; the Go heap is go_heap_alloc.
func (n *Server) infoMemory() resp.InfoSection {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := n.LocalStats()
	used := st.PrimaryBytes + st.PieceBytes
	n.info.meters.raisePeak(used)
	peak := n.info.meters.peakMemory.Load()
	rss := residentBytes(&ms)
	return resp.InfoSection{Name: "Memory", Fields: [][2]string{
		{"used_memory", strconv.FormatInt(used, 10)},
		{"used_memory_human", HumanBytes(used)},
		{"used_memory_rss", strconv.FormatInt(rss, 10)},
		{"used_memory_rss_human", HumanBytes(rss)},
		{"used_memory_peak", strconv.FormatInt(peak, 10)},
		{"used_memory_peak_human", HumanBytes(peak)},
		{"used_memory_peak_perc", percent(used, peak) + "%"},
		{"maxmemory", strconv.FormatInt(n.Cfg.MaxMemory, 10)},
		{"maxmemory_human", HumanBytes(n.Cfg.MaxMemory)},
		{"maxmemory_policy", "noeviction"},
		{"mem_fragmentation_ratio", ratio(rss, used)},
		{"mem_fragmentation_bytes", strconv.FormatInt(rss-used, 10)},
		{"memgest_primary_bytes", strconv.FormatInt(st.PrimaryBytes, 10)},
		{"memgest_piece_bytes", strconv.FormatInt(st.PieceBytes, 10)},
		{"memgest_overhead_per_key", strconv.FormatFloat(st.OverheadPerKey, 'f', 1, 64)},
		{"go_heap_alloc", strconv.FormatUint(ms.HeapAlloc, 10)},
	}}
}

// ratio is a/b with two decimals, 0 when b is.
func ratio(a, b int64) string {
	if b == 0 {
		return "0.00"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64)
}

func percent(a, b int64) string {
	if b == 0 {
		return "0.00"
	}
	return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 2, 64)
}

// infoPersistence is Redis's section for a server that saves nothing:
// memgest keeps keys in memory only, with redundancy on other nodes
// instead of a disk copy, so no snapshot or log exists to be behind of,
// in progress or failed. rdb_last_save_time is the process's start, as
// Redis sets it before any save.
func (n *Server) infoPersistence() resp.InfoSection {
	return resp.InfoSection{Name: "Persistence", Fields: [][2]string{
		{"loading", "0"},
		{"async_loading", "0"},
		{"rdb_changes_since_last_save", "0"},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_last_save_time", strconv.FormatInt(n.info.started.Unix(), 10)},
		{"rdb_last_bgsave_status", "ok"},
		{"rdb_last_bgsave_time_sec", "-1"},
		{"rdb_current_bgsave_time_sec", "-1"},
		{"rdb_saves", "0"},
		{"aof_enabled", "0"},
		{"aof_rewrite_in_progress", "0"},
		{"aof_rewrite_scheduled", "0"},
		{"aof_last_rewrite_time_sec", "-1"},
		{"aof_current_rewrite_time_sec", "-1"},
		{"aof_last_bgrewrite_status", "ok"},
		{"aof_rewrites", "0"},
		{"aof_last_write_status", "ok"},
	}}
}

func (n *Server) infoStats() resp.InfoSection {
	ps := n.PubSub()
	ops, in, out := n.rates()
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	kbps := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	return resp.InfoSection{Name: "Stats", Fields: [][2]string{
		{"total_connections_received", i64(n.Stats.Connections.Load())},
		{"total_commands_processed", i64(n.Stats.Commands.Load())},
		{"instantaneous_ops_per_sec", i64(int64(ops))},
		{"total_net_input_bytes", i64(n.info.meters.netIn.Load())},
		{"total_net_output_bytes", i64(n.info.meters.netOut.Load())},
		{"instantaneous_input_kbps", kbps(in)},
		{"instantaneous_output_kbps", kbps(out)},
		{"rejected_connections", i64(n.Stats.RejectedConns.Load())},
		{"sync_full", "0"}, // no Redis replication: no syncs
		{"sync_partial_ok", "0"},
		{"sync_partial_err", "0"},
		{"expired_keys", i64(n.Stats.Expired.Load())},
		{"evicted_keys", "0"}, // maxmemory-policy noeviction: writes are refused instead
		{"keyspace_hits", i64(n.Stats.KeyspaceHits.Load())},
		{"keyspace_misses", i64(n.Stats.KeyspaceMisses.Load())},
		{"pubsub_channels", strconv.Itoa(ps.Channels)},
		{"pubsub_patterns", strconv.Itoa(ps.Patterns)},
		{"pubsubshard_channels", strconv.Itoa(ps.ShardChannels)},
		{"latest_fork_usec", "0"}, // memgest never forks
		{"total_forks", "0"},
		{"total_error_replies", i64(n.info.cmds.errs.total.Load())},
		{"client_output_buffer_limit_disconnections", i64(ps.Overflowed)},
		{"memgest_forwarded_commands", i64(n.Stats.Forwarded.Load())},
		{"memgest_stripe_relocated_objects", i64(n.Stats.Relocated.Load())},
		{"memgest_pubsub_bus_dropped", i64(ps.BusDropped)},
	}}
}

// infoReplication is Redis's section for a master without replicas:
// memgest has no Redis replication. A key's copies and shards on other
// nodes are its scheme's (INFO memgest, SCHEME.OF), written synchronously
// by its coordinator, so no replica lags behind an offset.
func (n *Server) infoReplication() resp.InfoSection {
	return resp.InfoSection{Name: "Replication", Fields: [][2]string{
		{"role", "master"},
		{"connected_slaves", "0"},
		{"master_failover_state", "no-failover"},
		{"master_replid", n.info.replID},
		{"master_replid2", strings.Repeat("0", 40)},
		{"master_repl_offset", "0"},
		{"second_repl_offset", "-1"},
		{"repl_backlog_active", "0"},
		{"repl_backlog_size", "0"},
		{"repl_backlog_first_byte_offset", "0"},
		{"repl_backlog_histlen", "0"},
	}}
}

// infoCPU is the process's CPU time from getrusage, all threads together
// (Redis 7 also reports its main thread alone; a Go process has none).
func infoCPU() resp.InfoSection {
	sys, user, childSys, childUser, ok := cpuTimes()
	if !ok {
		return resp.InfoSection{Name: "CPU"}
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	return resp.InfoSection{Name: "CPU", Fields: [][2]string{
		{"used_cpu_sys", f(sys)},
		{"used_cpu_user", f(user)},
		{"used_cpu_sys_children", f(childSys)},
		{"used_cpu_user_children", f(childUser)},
	}}
}

// infoKeyspace reports the keys this node coordinates, as a Redis Cluster
// node reports its own. expires and avg_ttl (the mean time to live of
// those keys, in milliseconds: exact, where Redis's is an estimate) count
// the keys of the primary store; a packed (stripe, hybrid) key's TTL lies
// in its chunk, which keeps no count, so those keys count in keys only.
func (n *Server) infoKeyspace() resp.InfoSection {
	st := n.Primary.Stats()
	keys := st.Keys + n.stripes.Keys()
	if keys == 0 {
		return resp.InfoSection{Name: "Keyspace"}
	}
	avgTTL := int64(0)
	if st.ExpiringKeys > 0 {
		avgTTL = max(0, st.MeanExpireAt-core.NowMs())
	}
	return resp.InfoSection{Name: "Keyspace", Fields: [][2]string{
		{"db0", "keys=" + strconv.Itoa(keys) + ",expires=" + strconv.Itoa(st.ExpiringKeys) +
			",avg_ttl=" + strconv.FormatInt(avgTTL, 10)},
	}}
}

// pendingField renders bytes still to rebuild by redundancy left as
// INFO's keyspace lines do: "0=123,1=0" (level=bytes).
func pendingField(byLevel []int64) string {
	var b strings.Builder
	for level, v := range byLevel {
		if level > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d=%d", level, v)
	}
	return b.String()
}

// infoMemgest is memgest's own section: identity, map, and per-scheme usage
// on this node.
func (n *Server) infoMemgest(ctx context.Context) resp.InfoSection {
	m := n.Ctl.Map()
	rebuild := n.RebuildReport()
	fields := [][2]string{
		{"node_id", string(n.NodeID)},
		{"map_epoch", strconv.FormatUint(m.Epoch, 10)},
		{"cluster_state", m.State.String()},
		{"nodes", strconv.Itoa(len(m.Nodes))},
		{"raft_leader", strconv.FormatBool(n.Ctl.IsLeader())},
		{"node_state", n.selfState(m)},
		{"node_phase", m.Phase(n.NodeID)},
		{"serving", strconv.FormatBool(n.Serving())},
		{"shards_recovering", strconv.Itoa(m.RecoveringShards())},
		{"shards_rebuilding", strconv.Itoa(m.RebuildingShards())},
		{"rebuild_keys_done", strconv.FormatInt(n.Rebuild.KeysDone.Load(), 10)},
		{"rebuild_keys_total", strconv.FormatInt(n.Rebuild.KeysTotal.Load(), 10)},
		{"rebuild_bytes_done", strconv.FormatInt(rebuild.BytesDone, 10)},
		{"rebuild_busy_seconds", strconv.FormatFloat(rebuild.BusySeconds, 'f', 3, 64)},
		{"rebuild_pending_bytes", pendingField(core.PendingLevels(m, rebuild.PendingBytes))},
		{"lost_keys", strconv.Itoa(n.Lost.Reported())},
		{"corrupt_found", strconv.FormatInt(n.Health.Corrupt.Load(), 10)},
		{"repairs", strconv.FormatInt(n.Health.Repaired.Load(), 10)},
		{"scrubbed_bytes", strconv.FormatInt(n.Health.Scrubbed.Load(), 10)},
		{"swept_pieces", strconv.FormatInt(n.Health.Swept.Load(), 10)},
		{"stripe_positions_lost", strconv.FormatInt(n.stripes.Stats().PositionsLost.Load(), 10)},
		{"stripe_chunks_pending", strconv.FormatInt(n.stripes.PendingChunks(), 10)},
		{"stripe_chunks_restored", strconv.FormatInt(n.stripes.Stats().ChunksRestored.Load(), 10)},
		{"stripe_chunks_copied", strconv.FormatInt(n.stripes.Stats().ChunksCopied.Load(), 10)},
		{"stripe_corrupt_chunks", strconv.FormatInt(n.stripes.Stats().CorruptChunks.Load(), 10)},
		{"stripe_corrupt_batch", strconv.FormatInt(n.stripes.Stats().CorruptBatch.Load(), 10)},
		{"stripe_corrupt_repaired", strconv.FormatInt(n.stripes.Stats().Repaired.Load(), 10)},
		{"stripe_corrupt_unrepaired", strconv.FormatInt(n.stripes.Stats().Unrepaired.Load(), 10)},
		{"batch_rounds", strconv.FormatInt(n.stripes.Stats().BatchRounds.Load(), 10)},
		{"batch_objects", strconv.FormatInt(n.stripes.Stats().BatchObjects.Load(), 10)},
		{"batch_deduplicated", strconv.FormatInt(n.stripes.Stats().BatchDeduplicated.Load(), 10)},
		{"stripe_chunks_decoded", strconv.FormatInt(n.stripes.Stats().ChunksDecoded.Load(), 10)},
		{"shards_stripes_pending", strconv.Itoa(m.StripesPendingShards())},
		{"default_scheme", m.DefaultScheme().Name()},
		{"redirect", strconv.FormatBool(n.Cfg.Redirect)},
		{"policy", policyKind(m)},
		{"policy_moves_to_cold", strconv.FormatInt(n.Temp.ToCold.Load(), 10)},
		{"policy_moves_to_hot", strconv.FormatInt(n.Temp.ToHot.Load(), 10)},
		{"policy_bytes_saved", strconv.FormatInt(n.Temp.BytesSaved.Load(), 10)},
	}
	st := n.LocalStats()
	for _, e := range m.Schemes {
		u := st.Schemes[e.ID]
		if u == nil {
			u = &SchemeUsage{}
		}
		line := "spec=" + e.Spec.String() + ",keys=" + strconv.FormatInt(u.Keys, 10) +
			",logical=" + strconv.FormatInt(u.Logical, 10) + ",stored=" + strconv.FormatInt(u.Stored, 10)
		if s := u.Stripe; s != nil {
			for _, f := range []struct {
				name string
				v    int64
			}{{"chunks", s.Chunks}, {"objects", s.Objects}, {"garbage", s.Garbage}, {"parity", s.Parity},
				{"buffered", s.Buffered}, {"copies", s.Copies}, {"backups", s.Backups}, {"manifests", s.Manifests}, {"index", s.Index}} {
				line += "," + f.name + "=" + strconv.FormatInt(f.v, 10)
			}
		}
		fields = append(fields, [2]string{"scheme_" + e.Name(), line})
	}
	return resp.InfoSection{Name: "Memgest", Fields: fields}
}

// HumanBytes renders a byte count as Redis's *_human INFO fields do
// ("1.50M"); memgest status uses it too.
func HumanBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return strconv.FormatInt(b, 10) + "B"
	}
	div, exp := int64(unit), 0
	for x := b / unit; x >= unit; x /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(b)/float64(div), 'f', 2, 64) + string("KMGTPE"[exp])
}
