package commands

import (
	"context"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/resp"
)

// REBALANCE, NODE.PROMOTE and NODE.DRAIN: the commands that grow and
// shrink the cluster (decision 0016). Each proposes a map change; the Raft
// leader then drives the migrations (server/rebalance.go) and the sources
// move the keys (migrate.go), so the command answers at once and memgest
// status shows the progress.
func init() {
	ctl := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("rebalance", ctl(cmdRebalance))
	register("node.promote", ctl(cmdNodePromote))
	register("node.drain", ctl(cmdNodeDrain))
}

// defaultParallel is how many migrations a rebalance runs at once unless
// told.
const defaultParallel = 2

// rebalanceSyntax is REBALANCE's syntax, for its errors.
const rebalanceSyntax = "REBALANCE [RATE <bytes-per-second>] [PARALLEL <migrations>] | REBALANCE STOP"

// cmdRebalance starts a rebalance, changes a running one's rate or
// parallelism (the options not given keep their values), or stops it.
func cmdRebalance(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	c, bad := parseRebalance(n.Ctl.Map(), args[1:])
	if bad.IsError() {
		return bad
	}
	if _, err := n.Propose(ctx, c); err != nil {
		return errReply(err)
	}
	return resp.OK()
}

// parseRebalance reads REBALANCE's options over m's running rebalance.
func parseRebalance(m *cluster.Map, opts [][]byte) (cluster.SetRebalance, resp.Reply) {
	if len(opts) == 1 && strings.EqualFold(string(opts[0]), "stop") {
		return cluster.SetRebalance{Off: true}, resp.Reply{}
	}
	c := cluster.SetRebalance{Rate: cluster.DefaultMigrateRate, Parallel: defaultParallel}
	if r := m.Rebalance; r != nil {
		c.Rate, c.Parallel = r.Rate, r.Parallel
	}
	if len(opts)%2 != 0 {
		return c, resp.Errorf("ERR syntax error: %s", rebalanceSyntax)
	}
	for i := 0; i < len(opts); i += 2 {
		v, ok := resp.ParseInt(opts[i+1])
		switch name := strings.ToLower(string(opts[i])); {
		case !ok:
			return c, resp.Errorf("ERR memgest: %s must be an integer", strings.ToUpper(name))
		case name == "rate":
			c.Rate = v
		case name == "parallel":
			c.Parallel = int(v)
		default:
			return c, resp.Errorf("ERR syntax error: %s", rebalanceSyntax)
		}
	}
	return c, resp.Reply{}
}

// cmdNodePromote makes a spare a data node.
func cmdNodePromote(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	node, bad := n.namedNode(args[1])
	if bad.IsError() {
		return bad
	}
	if _, err := n.Propose(ctx, cluster.Promote{ID: node.ID}); err != nil {
		return errReply(err)
	}
	return resp.OK()
}

// cmdNodeDrain marks a node to be emptied and removed, and starts a
// rebalance unless one runs; with CANCEL it stops the drain (the
// rebalance goes on).
func cmdNodeDrain(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if len(args) > 3 || (len(args) == 3 && !strings.EqualFold(string(args[2]), "cancel")) {
		return resp.Err("ERR syntax error: NODE.DRAIN <node> [CANCEL]")
	}
	node, bad := n.namedNode(args[1])
	if bad.IsError() {
		return bad
	}
	if _, err := n.Propose(ctx, cluster.Drain{ID: node.ID, Off: len(args) == 3}); err != nil {
		return errReply(err)
	}
	if len(args) == 2 && n.Ctl.Map().Rebalance == nil {
		// A drain moves whole shards to the least loaded coordinators one
		// by one, which leaves the rest uneven: the rebalance evens them
		// out once the node is out.
		c, _ := parseRebalance(n.Ctl.Map(), nil)
		if _, err := n.Propose(ctx, c); err != nil {
			return errReply(err)
		}
	}
	return resp.OK()
}

// namedNode finds the node a command names by id, client address or peer
// address.
func (n *Server) namedNode(name []byte) (cluster.Node, resp.Reply) {
	for _, node := range n.Ctl.Map().Nodes {
		if s := string(name); s == string(node.ID) || s == node.ClientAddr || s == node.PeerAddr {
			return node, resp.Reply{}
		}
	}
	return cluster.Node{}, resp.Errorf("ERR memgest: no node %q (name one by its id, client address or peer address)", name)
}
