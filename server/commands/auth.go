package commands

import (
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// This file is the clients' password as cluster configuration (DESIGN.md
// §7c). The founding node puts its --requirepass in the map (cluster.Init),
// CONFIG SET requirepass changes it cluster-wide (cluster.SetPassword), and
// every node checks AUTH against the map's, so a node started without the
// password still asks for it. A node given a --requirepass the map does not
// hold refuses to run rather than leave operators believing a password is
// in force that is not (checkOwnPassword).

// ClientPassword is the password clients must AUTH with: the map's once this
// node has applied the cluster's first entry, else this node's own. known is
// false for a joining node without a password of its own that has not
// heard from the cluster yet: it cannot tell whether a password applies.
func (n *Server) ClientPassword() (p *cluster.Password, known bool) {
	if m := n.Ctl.Map(); m.Expect != 0 {
		return m.Password, true
	}
	if n.ownPassword != nil {
		return n.ownPassword, true
	}
	return nil, n.Cfg.Join == ""
}

// authRequired says whether a new connection must AUTH before anything else.
func (n *Server) authRequired() bool {
	p, known := n.ClientPassword()
	return p != nil || !known
}

// errAuthUnknown answers a client of a joining node that cannot tell yet
// whether the cluster has a password. CLUSTERDOWN, which cluster clients
// retry: the node will know as soon as it has the map.
var errAuthUnknown = resp.Err("CLUSTERDOWN memgest: this node has not heard from its cluster yet and cannot tell whether a password applies; try again shortly")

// admit lets an unauthenticated connection through when the cluster has no
// password. The answer is checked at each command, not fixed when the
// connection was accepted: a joining node learns only from the map whether
// a password applies, and its early connections must not stay refused.
func (n *Server) admit(cs *connState) resp.Reply {
	if cs.authed {
		return resp.Reply{}
	}
	switch p, known := n.ClientPassword(); {
	case !known:
		return errAuthUnknown
	case p != nil:
		return errNoAuth
	}
	cs.authed = true
	return resp.Reply{}
}

// authenticate checks a password against the cluster's (user "default"
// only, as Redis without ACLs).
func (n *Server) authenticate(cs *connState, user, pass string) resp.Reply {
	p, known := n.ClientPassword()
	switch {
	case !known:
		return errAuthUnknown
	case p == nil:
		return resp.Err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	case user != "default" || !p.Matches(pass):
		n.Metrics.AuthFailed(core.AuthClient)
		return resp.Err("WRONGPASS invalid username-password pair or user is disabled.")
	}
	cs.authed = true
	return resp.OK()
}

// maskedPassword is what CONFIG GET requirepass answers when the cluster
// has a password: nodes hold only its digest.
const maskedPassword = "********"

// configPassword is CONFIG GET requirepass's answer.
func (n *Server) configPassword() string {
	if p, _ := n.ClientPassword(); p != nil {
		return maskedPassword
	}
	return ""
}

// setPassword is CONFIG SET requirepass: the new password goes into the map
// for every node; "" removes it. Connections already authenticated stay
// so, as in Redis.
func (n *Server) setPassword(ctx context.Context, pass string) resp.Reply {
	var p *cluster.Password
	if pass != "" {
		var err error
		if p, err = cluster.NewPassword(pass); err != nil {
			return errReply(err)
		}
	}
	if _, err := n.Propose(ctx, cluster.SetPassword{Password: p}); err != nil {
		return errReply(err)
	}
	return resp.OK()
}
