package server

import (
	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
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
}

// newServer is the client side of the node whose core is c.
func newServer(c *core.Coordinator, stripes *stripe.Engine, ownPassword *cluster.Password, version string) *Server {
	return &Server{Coordinator: c, stripes: stripes, ownPassword: ownPassword, version: version}
}
