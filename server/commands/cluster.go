package commands

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

// The Redis Cluster commands clients use to route (DESIGN.md §6). A shard's
// coordinator is reported as its master; replicas are not listed because
// memgest serves every read from the coordinator.
func init() {
	register("cluster", &command{run: cmdCluster})
	register("readonly", &command{run: cmdOK})
	register("readwrite", &command{run: cmdOK})
}

func cmdOK(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply { return resp.OK() }

func cmdCluster(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	m := n.Ctl.Map()
	switch sub := strings.ToUpper(string(args[1])); sub {
	case "SLOTS":
		return clusterSlots(m)
	case "SHARDS":
		return clusterShards(m)
	case "NODES":
		return resp.Verbatim("txt", clusterNodes(m, n.NodeID))
	case "INFO":
		return resp.Verbatim("txt", clusterInfo(m, n.NodeID))
	case "MYID":
		return resp.BulkString(string(n.NodeID))
	case "KEYSLOT":
		if len(args) != 3 {
			return resp.Err("ERR wrong number of arguments for 'cluster|keyslot' command")
		}
		return resp.Int(int64(keyslot.Of(args[2])))
	case "COUNTKEYSINSLOT", "GETKEYSINSLOT":
		return resp.Errorf("ERR memgest: CLUSTER %s is not supported; use SCAN", sub)
	}
	return resp.Errorf("ERR unknown subcommand '%s'. Try CLUSTER HELP.", args[1])
}

func hostPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	p, _ := strconv.Atoi(port)
	return host, p
}

// master is a shard with its coordinator's client address, as the
// routing commands report it.
type master struct {
	shard cluster.Shard
	node  cluster.Node
	host  string
	port  int
}

func masters(m *cluster.Map) []master {
	out := make([]master, 0, len(m.Shards))
	for _, sh := range m.Shards {
		if node, ok := m.CoordinatorOf(&sh); ok {
			host, port := hostPort(node.ClientAddr)
			out = append(out, master{shard: sh, node: node, host: host, port: port})
		}
	}
	return out
}

func clusterSlots(m *cluster.Map) resp.Reply {
	var items []resp.Reply
	for _, ms := range masters(m) {
		items = append(items, resp.Array(resp.Int(int64(ms.shard.First)), resp.Int(int64(ms.shard.Last)),
			resp.Array(resp.BulkString(ms.host), resp.Int(int64(ms.port)), resp.BulkString(string(ms.node.ID)))))
	}
	return resp.Array(items...)
}

func clusterShards(m *cluster.Map) resp.Reply {
	var items []resp.Reply
	for _, ms := range masters(m) {
		fields := []resp.Reply{
			resp.BulkString("id"), resp.BulkString(string(ms.node.ID)),
			resp.BulkString("port"), resp.Int(int64(ms.port)),
			resp.BulkString("ip"), resp.BulkString(ms.host),
			resp.BulkString("endpoint"), resp.BulkString(ms.host),
			resp.BulkString("role"), resp.BulkString("master"),
			resp.BulkString("replication-offset"), resp.Int(0),
			resp.BulkString("health"), resp.BulkString("online"),
		}
		if ms.node.Zone != "" { // Valkey's name for the field (decision 0021)
			fields = append(fields, resp.BulkString("availability-zone"), resp.BulkString(ms.node.Zone))
		}
		nodeInfo := resp.Map(fields...)
		items = append(items, resp.Map(
			resp.BulkString("slots"), resp.Array(resp.Int(int64(ms.shard.First)), resp.Int(int64(ms.shard.Last))),
			resp.BulkString("nodes"), resp.Array(nodeInfo),
		))
	}
	return resp.Array(items...)
}

// clusterNodes renders CLUSTER NODES lines: id, ip:port@cport, flags,
// master, ping-sent, pong-recv, config-epoch, link-state, slots.
func clusterNodes(m *cluster.Map, self cluster.NodeID) string {
	var b strings.Builder
	for _, node := range m.Nodes {
		if node.State == cluster.Left && node.ID != self {
			continue // removed from the cluster (NODE.DRAIN): Redis forgets it
		}
		flags := "master"
		if node.ID == self {
			flags = "myself,master"
		}
		if node.State == cluster.Failed {
			flags += ",fail"
		}
		host, port := hostPort(node.ClientAddr)
		_, peerPort := hostPort(node.PeerAddr)
		link := "connected"
		if node.State != cluster.Up && node.State != cluster.Spare {
			link = "disconnected"
		}
		fmt.Fprintf(&b, "%s %s:%d@%d %s - 0 0 %d %s", node.ID, host, port, peerPort, flags, m.Epoch, link)
		for _, sh := range m.Shards {
			if c, ok := m.CoordinatorOf(&sh); ok && c.ID == node.ID {
				fmt.Fprintf(&b, " %d-%d", sh.First, sh.Last)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func clusterInfo(m *cluster.Map, self cluster.NodeID) string {
	state, assigned := "fail", 0
	if m.State == cluster.OK {
		state = "ok"
		for _, sh := range m.Shards {
			assigned += sh.Last - sh.First + 1
		}
	}
	size := len(coordinators(m))
	lines := [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(assigned)},
		{"cluster_slots_ok", strconv.Itoa(assigned)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", strconv.Itoa(len(m.Nodes))},
		{"cluster_size", strconv.Itoa(size)},
		{"cluster_current_epoch", strconv.FormatUint(m.Epoch, 10)},
		{"cluster_my_epoch", strconv.FormatUint(m.Epoch, 10)},
		{"memgest_map_epoch", strconv.FormatUint(m.Epoch, 10)},
		{"memgest_schemes", strconv.Itoa(len(m.Schemes))},
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l[0] + ":" + l[1] + "\r\n")
	}
	return b.String()
}
