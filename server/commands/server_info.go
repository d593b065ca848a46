package commands

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

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
	case "RESETSTAT", "REWRITE":
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

func cmdInfo(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	want := make([]string, 0, len(args)-1)
	for _, a := range args[1:] {
		want = append(want, string(a))
	}
	sections := []resp.InfoSection{
		n.infoServer(), n.infoClients(), n.infoMemory(), n.infoStats(),
		{Name: "Cluster", Fields: [][2]string{{"cluster_enabled", "1"}}},
		n.infoKeyspace(), n.infoMemgest(ctx),
	}
	return resp.Verbatim("txt", string(resp.RenderInfo(sections, want)))
}

func (n *Server) infoServer() resp.InfoSection {
	up := time.Since(n.Started)
	exe, _ := os.Executable()
	return resp.InfoSection{Name: "Server", Fields: [][2]string{
		{"redis_version", redisVersion},
		{"memgest_version", n.version},
		{"redis_mode", "cluster"},
		{"os", runtime.GOOS},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"go_version", runtime.Version()},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"run_id", string(n.NodeID)},
		{"tcp_port", strconv.Itoa(n.Cfg.Port)},
		{"uptime_in_seconds", strconv.Itoa(int(up.Seconds()))},
		{"uptime_in_days", strconv.Itoa(int(up.Hours() / 24))},
		{"executable", exe},
		{"config_file", n.Cfg.ConfigFile},
	}}
}

func (n *Server) infoClients() resp.InfoSection {
	return resp.InfoSection{Name: "Clients", Fields: [][2]string{
		{"connected_clients", strconv.Itoa(n.openClients())},
		{"maxclients", strconv.Itoa(n.Cfg.MaxClients)},
		{"blocked_clients", "0"},
	}}
}

func (n *Server) infoMemory() resp.InfoSection {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := n.LocalStats()
	used := st.PrimaryBytes + st.PieceBytes
	return resp.InfoSection{Name: "Memory", Fields: [][2]string{
		{"used_memory", strconv.FormatInt(used, 10)},
		{"used_memory_human", HumanBytes(used)},
		{"used_memory_rss", strconv.FormatUint(ms.Sys, 10)},
		{"used_memory_peak", strconv.FormatUint(ms.HeapSys, 10)},
		{"maxmemory", strconv.FormatInt(n.Cfg.MaxMemory, 10)},
		{"maxmemory_human", HumanBytes(n.Cfg.MaxMemory)},
		{"maxmemory_policy", "noeviction"},
		{"memgest_primary_bytes", strconv.FormatInt(st.PrimaryBytes, 10)},
		{"memgest_piece_bytes", strconv.FormatInt(st.PieceBytes, 10)},
		{"memgest_overhead_per_key", strconv.FormatFloat(st.OverheadPerKey, 'f', 1, 64)},
		{"go_heap_alloc", strconv.FormatUint(ms.HeapAlloc, 10)},
	}}
}

func (n *Server) infoStats() resp.InfoSection {
	ps := n.PubSub()
	return resp.InfoSection{Name: "Stats", Fields: [][2]string{
		{"total_connections_received", strconv.FormatInt(n.Stats.Connections.Load(), 10)},
		{"total_commands_processed", strconv.FormatInt(n.Stats.Commands.Load(), 10)},
		{"rejected_connections", strconv.FormatInt(n.Stats.RejectedConns.Load(), 10)},
		{"expired_keys", strconv.FormatInt(n.Stats.Expired.Load(), 10)},
		{"memgest_forwarded_commands", strconv.FormatInt(n.Stats.Forwarded.Load(), 10)},
		{"memgest_stripe_relocated_objects", strconv.FormatInt(n.Stats.Relocated.Load(), 10)},
		{"pubsub_channels", strconv.Itoa(ps.Channels)},
		{"pubsub_patterns", strconv.Itoa(ps.Patterns)},
		{"pubsubshard_channels", strconv.Itoa(ps.ShardChannels)},
		{"client_output_buffer_limit_disconnections", strconv.FormatInt(ps.Overflowed, 10)},
		{"memgest_pubsub_bus_dropped", strconv.FormatInt(ps.BusDropped, 10)},
	}}
}

// infoKeyspace reports the keys this node coordinates, as a Redis Cluster
// node reports its own.
func (n *Server) infoKeyspace() resp.InfoSection {
	keys := n.Primary.Len() + n.stripes.Keys()
	if keys == 0 {
		return resp.InfoSection{Name: "Keyspace"}
	}
	return resp.InfoSection{Name: "Keyspace", Fields: [][2]string{
		{"db0", "keys=" + strconv.Itoa(keys) + ",expires=0,avg_ttl=0"},
	}}
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
		{"lost_keys", strconv.Itoa(n.Lost.Count())},
		{"corrupt_found", strconv.FormatInt(n.Health.Corrupt.Load(), 10)},
		{"repairs", strconv.FormatInt(n.Health.Repaired.Load(), 10)},
		{"scrubbed_bytes", strconv.FormatInt(n.Health.Scrubbed.Load(), 10)},
		{"swept_pieces", strconv.FormatInt(n.Health.Swept.Load(), 10)},
		{"stripe_positions_lost", strconv.FormatInt(n.stripes.Stats().PositionsLost.Load(), 10)},
		{"stripe_chunks_pending", strconv.FormatInt(n.stripes.PendingChunks(), 10)},
		{"stripe_chunks_restored", strconv.FormatInt(n.stripes.Stats().ChunksRestored.Load(), 10)},
		{"stripe_chunks_copied", strconv.FormatInt(n.stripes.Stats().ChunksCopied.Load(), 10)},
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
