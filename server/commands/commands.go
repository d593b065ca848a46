package commands

import (
	"context"
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
	resp        *clientServer     // the client port's listener (nil in memory)
	ownPassword *cluster.Password // --requirepass, before the map has the cluster's (auth.go)
	version     string            // memgest's version, for INFO
	nines       reliabilityCache  // each scheme's modelled durability, for /metrics
	slots       slotLocks         // transactions apart from other commands (slotlock.go)
}

// New is the client side of the node whose core is c.
func New(c *core.Coordinator, stripes *stripe.Engine, ownPassword *cluster.Password, version string) *Server {
	return &Server{Coordinator: c, stripes: stripes, ownPassword: ownPassword, version: version}
}

// Do runs one command as a RESP2 client connection of its own would and
// returns its reply: how in-process tests drive a node, which has no
// client port in memory. It works on any node.
func (n *Server) Do(ctx context.Context, args ...string) resp.Reply {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	cs := &connState{id: nextConnID.Add(1), proto: 2, authed: !n.authRequired(), addr: "inmem", created: time.Now()}
	return n.execute(ctx, cs, b)
}

// Serve answers clients on l until Close.
func (n *Server) Serve(l net.Listener) {
	n.resp = newClientServer(n, l)
	go n.resp.serve()
}

// Close stops the client port, if it was served, and closes its
// connections.
func (n *Server) Close() error {
	if n.resp == nil {
		return nil
	}
	return n.resp.Close()
}
