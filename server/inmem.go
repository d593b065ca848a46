package server

import (
	"context"
	"net"
	"strconv"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/commands"
	"github.com/memgest/memgest/server/repair"
	"github.com/memgest/memgest/server/resp"
)

// This file lets a node run without sockets or disk, for in-process test
// clusters (internal/simcluster): its peer port on a transport.InmemNetwork
// (frames and Raft through the same Mux and guard as over TCP), the Raft
// state in memory, no client or HTTP port (tests call Do), and the clock
// that decides leases and failure detection injected (config.InMemory
// says what such a node takes instead). A Config without InMemory is a
// production node and none of this applies.

// listenPeerPort is the listener of the peer port: TCP, or the in-memory
// network's.
func (n *Node) listenPeerPort() (net.Listener, error) {
	if m := n.Cfg.InMemory; m != nil {
		return m.Network.Listen(n.Cfg.PeerAddr())
	}
	return net.Listen("tcp", net.JoinHostPort(n.Cfg.Bind, strconv.Itoa(n.Cfg.PeerPort)))
}

// Map is the node's current cluster map (read-only).
func (n *Node) Map() *cluster.Map { return n.Ctl.Map() }

// StripeLists are the stripe lists (shard ids) the node holds data
// chunks of (commands.NodeStats.StripeLists).
func (n *Node) StripeLists() []uint16 { return n.stripes.Lists() }

// RebuildEvents are the node's last rebuild steps with their redundancy
// levels, in the order they ended (repair.RebuildEvent).
func (n *Node) RebuildEvents() []repair.RebuildEvent { return n.repair.RebuildEvents() }

// IsLeader says whether the node leads the control plane now.
func (n *Node) IsLeader() bool { return n.Ctl.IsLeader() }

// Connect opens a client connection to the node over an in-memory pipe,
// served as a connection to its client port is: how in-process tests
// hold a connection of their own (a subscriber, say). Closing the node
// closes it.
func (n *Node) Connect() net.Conn {
	client, server := net.Pipe()
	n.cmds.ServeConn(server)
	return client
}

// Do runs one command as a RESP2 client connection of its own would and
// returns its reply: how in-process tests drive a node, which has no
// client port in memory. It works on any node.
func (n *Node) Do(ctx context.Context, args ...string) resp.Reply { return n.cmds.Do(ctx, args...) }

// DoSession runs commands in order on one in-process client connection
// (commands.Server.DoSession).
func (n *Node) DoSession(ctx context.Context, cmds ...[]string) []resp.Reply {
	return n.cmds.DoSession(ctx, cmds...)
}

// Session opens a client session on the node: commands that keep state
// between requests (MULTI, WATCH) run in it.
func (n *Node) Session() *commands.Session { return n.cmds.Session() }
