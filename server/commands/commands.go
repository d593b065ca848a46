package commands

import (
	"context"
	"math/rand/v2"
	"net"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// Server is a node's client side: the RESP commands, their routing to
// coordinators, pipelines, connections and AUTH, the forwarded commands
// and scans other nodes send, and the statistics INFO and /status show.
// It works through the coordinator core it embeds and the node's stripe
// engine.
type Server struct {
	*core.Coordinator
	stripes     *stripe.Engine
	clients     clientRegistry
	resp        *clientServer     // the client connections (and port: none in memory)
	ownPassword *cluster.Password // --requirepass, before the map has the cluster's (auth.go)
	version     string            // memgest's version, for INFO
	nines       reliabilityCache  // each scheme's modelled durability, for /metrics
	pubsub      pubsubHub         // this node's subscriptions and the bus to other nodes' (pubsub_*.go)
	info        *infoState        // INFO's counters, meters and identities (server_info.go)
	boot        uint64            // this Server's nonce: WATCH's versions are its own (tx.go)

	// exports tracks the migrations this node runs as their source
	// (migrate.go).
	exports exports

	// slots keep transactions apart from other commands (slotlock.go),
	// and moves each key's commands apart from its move while its slot
	// migrates (migrate.go); last, after every pointer, so the collector
	// does not scan them.
	slots slotLocks
	moves moveLocks
}

// New is the client side of the node whose core is c.
func New(c *core.Coordinator, stripes *stripe.Engine, ownPassword *cluster.Password, version string) *Server {
	n := &Server{Coordinator: c, stripes: stripes, ownPassword: ownPassword, version: version, info: newInfoState(), boot: rand.Uint64()}
	n.resp = newClientServer(n, nil)
	return n
}

// Do runs one command as a RESP2 client connection of its own would and
// returns its reply: how in-process tests drive a node, which has no
// client port in memory. It works on any node.
func (n *Server) Do(ctx context.Context, args ...string) resp.Reply {
	return n.Session().Do(ctx, args...)
}

// DoSession runs commands one after the other on one RESP2 client
// connection of their own, as Do runs one: for what a connection
// remembers between commands (WAIT counts its last write).
func (n *Server) DoSession(ctx context.Context, cmds ...[]string) []resp.Reply {
	s := n.Session()
	out := make([]resp.Reply, len(cmds))
	for i, args := range cmds {
		out[i] = s.Do(ctx, args...)
	}
	return out
}

// Serve answers clients on l until Close; it is called once, before any
// client is served.
func (n *Server) Serve(l net.Listener) {
	n.resp.ln = l
	go n.resp.serve()
}

// ServeConn serves one client connection that did not come through the
// client port, as one that did: an in-memory pipe of a test (a node in
// memory has no port). It counts towards maxclients, and Close closes it.
func (n *Server) ServeConn(c net.Conn) { n.resp.handle(c) }

// Close stops the client port, if it was served, and closes every client
// connection.
func (n *Server) Close() error { return n.resp.Close() }

// Session is a client connection without a socket: its commands share one
// session (MULTI's queue, WATCH's versions, the protocol), as in-process
// tests need. A Session is used by one goroutine at a time.
type Session struct {
	n  *Server
	cs *connState
}

// Session opens a session on this node, as a RESP2 connection would.
func (n *Server) Session() *Session {
	cs := &connState{id: nextConnID.Add(1), proto: 2, authed: !n.authRequired(), addr: "inmem", created: time.Now()}
	return &Session{n: n, cs: cs}
}

// Do runs one command in the session.
func (s *Session) Do(ctx context.Context, args ...string) resp.Reply {
	return s.n.execute(ctx, s.cs, bytesOf(args))
}

// Pipeline runs cmds as one pipeline, as if a client had sent them at
// once, and returns their replies.
func (s *Session) Pipeline(cmds ...[]string) []resp.Reply {
	in := make([][][]byte, len(cmds))
	for i, c := range cmds {
		in[i] = bytesOf(c)
	}
	replies, _ := s.n.runPipeline(s.cs, in)
	out := append([]resp.Reply(nil), replies...)
	s.cs.pipe.reset(in)
	return out
}

func bytesOf(args []string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}
