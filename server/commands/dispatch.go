package commands

import (
	"context"
	"errors"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
)

// handler runs one command whose arity has been checked and, for key
// commands, whose keys this node coordinates.
type handler func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply

// command is how the dispatcher treats a command family member.
type command struct {
	run handler
	// fanout splits a command whose keys live on several coordinators into
	// one sub-command per coordinator and merges the replies; nil means all
	// keys must share a coordinator.
	fanout handler
	// noAuth commands run before AUTH (AUTH, HELLO, QUIT).
	noAuth bool
	// cluster commands need a formed cluster (data commands).
	needsFormed bool
	// channels commands' keys are shard channels: routed to their slot's
	// coordinator as keys are, but naming no data, so neither refused
	// while the slot's records recover nor restored (SPUBLISH).
	channels bool
	// session commands run on the connection whatever their keys: the
	// shard channels of SSUBSCRIBE and SUNSUBSCRIBE, which the handler
	// checks itself (-MOVED, never forwarded: a subscription lives on
	// the connection).
	session bool
	// tx commands run at once between MULTI and EXEC rather than being
	// queued (MULTI, EXEC, DISCARD, WATCH, QUIT).
	tx bool
	// routes marks a key command that finds its keys' coordinator itself
	// (WATCH): dispatch runs it wherever it was sent.
	routes bool
}

// commands is the dispatch table, filled by the cmd_*.go files' init.
var commands = map[string]*command{}

// register adds a command under its lower-case Redis name.
func register(name string, c *command) { commands[name] = c }

// execute runs one client command: lookup, arity, auth, then routing to the
// key's coordinator (DESIGN.md §1: the first live node of the shard's
// placement coordinates every key in it, whatever its scheme).
func (n *Server) execute(ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	return n.executeParsed(ctx, cs, args, parseCommand(args))
}

// parsed is a command resolved once: its spec, its keys, and whether the
// pipeline found every key coordinated here.
type parsed struct {
	spec  *resp.CommandSpec
	bad   resp.Reply
	keys  [][]byte
	local bool
	// slot is the keys' one slot when the pipeline found it (local, one
	// key), else -1.
	slot int
}

func parseCommand(args [][]byte) parsed {
	spec, bad := resp.Resolve(args)
	if bad.IsError() {
		return parsed{bad: bad, slot: -1}
	}
	return parsed{spec: spec, keys: spec.Keys(args), slot: -1}
}

// executeParsed is execute for a command the pipeline has already parsed.
func (n *Server) executeParsed(ctx context.Context, cs *connState, args [][]byte, p parsed) resp.Reply {
	spec, bad := p.spec, p.bad
	if bad.IsError() {
		cs.flagTx()
		if r := n.admit(cs); r.IsError() {
			return n.rejected(nil, r)
		}
		return n.rejected(resp.Invoked(args), bad)
	}
	name := topName(spec)
	cmd := commands[name]
	if cmd == nil {
		cs.flagTx()
		return n.rejected(nil, resp.ErrUnknownCommand(string(args[0]), args[1:]))
	}
	if !cmd.noAuth {
		if r := n.admit(cs); r.IsError() {
			cs.flagTx()
			return n.rejected(spec, r)
		}
	}
	if r, refused := refuseSubscribed(cs, spec); refused {
		return n.rejected(spec, r)
	}
	if cs.tx != nil && cs.tx.multi && !cmd.tx {
		return n.queue(cs, spec, args, p.keys)
	}
	start := core.Monotime()
	r := n.dispatch(ctx, cs, cmd, args, p)
	n.ran(cs, cmd, spec, p.keys, r, start)
	return r
}

// ran accounts for a command that ran since start (a monotime) with reply
// r: its latency metric, INFO's commandstats, and for a write the
// connection's last written key (WAIT). executeParsed and EXEC's queued
// commands (runQueued) go through it.
func (n *Server) ran(cs *connState, cmd *command, spec *resp.CommandSpec, keys [][]byte, r resp.Reply, start int64) {
	cs.noteWrite(spec, keys, r)
	n.info.cmds.ran(spec, r, n.Metrics.ObserveCommand(cmd, topName(spec), start))
}

// rejected counts r, an error given before a command of spec (nil for
// none) ran, for INFO commandstats and errorstats, and returns it.
func (n *Server) rejected(spec *resp.CommandSpec, r resp.Reply) resp.Reply {
	n.info.cmds.rejected(spec, r)
	return r
}

// dispatch runs a known, permitted command: limits, key checks, then
// locally or at the keys' coordinator.
func (n *Server) dispatch(ctx context.Context, cs *connState, cmd *command, args [][]byte, p parsed) resp.Reply {
	spec, keys := p.spec, p.keys
	cs.lastCmd.Store(spec)
	n.Stats.Commands.Add(1)
	if len(args) > n.Cfg.MaxArgs {
		return resp.Err("ERR too many arguments")
	}
	if len(keys) > 0 && !cmd.session {
		if r, refused := n.checkKeys(ctx, cmd, keys); refused {
			return r
		}
		if cmd.routes {
			return cmd.run(n, ctx, cs, args)
		}
		if p.local {
			return n.coordinate(ctx, cs, cmd, spec, args, keys, p.slot)
		}
		return n.route(ctx, cs, cmd, spec, args, keys)
	}
	if cmd.needsFormed {
		if r, down := n.clusterDown(); down {
			return r
		}
	}
	return cmd.run(n, ctx, cs, args)
}

// checkKeys refuses keys too long, or that this node must not serve now
// (refuseKeys), and restores the keys' deferred stripe chunks; a
// command's shard channels only go through the first check.
func (n *Server) checkKeys(ctx context.Context, cmd *command, keys [][]byte) (resp.Reply, bool) {
	for _, k := range keys {
		if len(k) > MaxKeySize {
			return resp.Errorf("ERR memgest: key of %d bytes exceeds the %d-byte limit", len(k), MaxKeySize), true
		}
	}
	if cmd.channels {
		return resp.Reply{}, false
	}
	if r, refused := n.refuseKeys(n.Ctl.Map(), keys); refused {
		return r, true
	}
	if err := n.stripes.RestoreKeys(ctx, keys); err != nil {
		return resp.Errorf("TRYAGAIN memgest: restoring the key's stripe chunk: %v", err), true
	}
	return resp.Reply{}, false
}

var errNoAuth = resp.Err("NOAUTH Authentication required.")

// MaxKeySize is the longest key memgest accepts: what the store holds less
// the piece prefix (scheme, kind, shard, version) that redundancy adds, so
// every key can move to every scheme.
const MaxKeySize = store.MaxKeySize - core.MaxPiecePrefix

// topName is the registry name of a command: a subcommand runs its
// container's handler.
func topName(spec *resp.CommandSpec) string {
	if spec.Parent != nil {
		return spec.Parent.Name
	}
	return spec.Name
}

// clusterDown answers -CLUSTERDOWN while the cluster is still forming.
func (n *Server) clusterDown() (resp.Reply, bool) {
	m := n.Ctl.Map()
	if m.State == cluster.OK {
		return resp.Reply{}, false
	}
	return resp.Errorf("CLUSTERDOWN The cluster is forming (%d of %d nodes joined)", len(m.Nodes), m.Expect), true
}

// route runs a key command where its keys are coordinated: here, by
// forwarding, by -MOVED in redirect mode, or split per coordinator.
func (n *Server) route(ctx context.Context, cs *connState, cmd *command, spec *resp.CommandSpec, args, keys [][]byte) resp.Reply {
	if r, down := n.clusterDown(); down {
		return r
	}
	m := n.Ctl.Map()
	owner, slot, single := coordinatorOf(m, keys)
	if !single {
		if cmd.fanout == nil {
			return resp.Err("CROSSSLOT Keys in request don't hash to the same node")
		}
		return cmd.fanout(n, ctx, cs, args)
	}
	if cs.imported && owner.ID != n.NodeID && n.importsHere(ctx, keys) {
		// importsHere may have waited for a newer map, in which the
		// importing shard is recovering here, or has stripe keys to
		// restore: check the keys again.
		if r, refused := n.checkKeys(ctx, cmd, keys); refused {
			return r
		}
		return n.coordinate(ctx, cs, cmd, spec, args, keys, -1)
	}
	if owner.ID == n.NodeID {
		if len(keys) > 1 {
			slot = -1 // keys of one coordinator, maybe of several slots
		}
		return n.coordinate(ctx, cs, cmd, spec, args, keys, slot)
	}
	if cs.forwarded || n.Cfg.Redirect || hasLeft(m, n.NodeID) {
		// A node that left sees no map after the one that says so: it
		// could wait on a newer one forever, so it only redirects.
		return resp.Moved(slot, owner.ClientAddr)
	}
	r, here := n.forwardFollowing(ctx, cs, slot, owner, args)
	if here {
		if len(keys) > 1 {
			slot = -1 // keys of one coordinator, maybe of several slots
		}
		return n.coordinate(ctx, cs, cmd, spec, args, keys, slot)
	}
	return r
}

// hasLeft says whether m marks node self left (drained and removed).
func hasLeft(m *cluster.Map, self cluster.NodeID) bool {
	node, ok := m.Node(self)
	return ok && node.State == cluster.Left
}

// movedTries bounds how many redirections a forwarding node follows for a
// client before passing the last one on.
const movedTries = 3

// forwardFollowing forwards a command to owner, and where owner's map
// already gives the slot to another node (maps in flux: a failover, a
// migration ending) follows that -MOVED itself, once its own map agrees,
// rather than hand a redirection to a client that relies on forwarding.
// A -MOVED means the owner ran nothing, so sending again is safe. here
// says the slot is now this node's own: the caller runs the command.
func (n *Server) forwardFollowing(ctx context.Context, cs *connState, slot int, owner cluster.Node, args [][]byte) (r resp.Reply, here bool) {
	r = n.forward(ctx, cs, owner, args)
	for try := 1; try < movedTries && r.IsError() && strings.HasPrefix(r.Text(), "MOVED "); try++ {
		m := n.Ctl.Map()
		next, ok := m.Coordinator(slot)
		if ok && next.ID == owner.ID {
			// This node's map is behind the owner's: wait for the next.
			wctx, cancel := context.WithTimeout(ctx, n.Cfg.PeerTimeout)
			m, _ = n.Ctl.WaitEpoch(wctx, m.Epoch+1)
			cancel()
			if m == nil {
				break
			}
			if next, ok = m.Coordinator(slot); !ok || next.ID == owner.ID {
				break
			}
		}
		if !ok {
			break
		}
		if next.ID == n.NodeID {
			return r, true
		}
		owner = next
		r = n.forward(ctx, cs, owner, args)
	}
	return r, false
}

// coordinate runs a key command whose keys this node coordinates, under
// its lease (withinLease), with its keys' slots held shared so that no
// transaction's EXEC runs meanwhile (slotlock.go); a read-only command
// (the command table's readonly flag) is a read there. slot is the keys'
// one slot if the caller knows it, else -1.
func (n *Server) coordinate(ctx context.Context, cs *connState, cmd *command, spec *resp.CommandSpec, args, keys [][]byte, slot int) resp.Reply {
	a := n.TakeAuthority()
	if !a.Ok {
		return errFenced // lapsed since refuseKeys: nothing ran
	}
	var buf [4]uint16
	var held []uint16
	if slot >= 0 {
		held = n.slots.rlockSlot(ctx, buf[:0], slot)
	} else {
		held = n.slots.rlockKeys(ctx, buf[:0], keys)
	}
	m := n.Ctl.Map()
	if owner, moved := movedAway(m, keys, n.NodeID); moved && !cs.imported {
		n.slots.runlock(held)
		return n.passOn(ctx, cs, owner, args, keys)
	}
	var r resp.Reply
	run := func() resp.Reply { return cmd.run(n, ctx, cs, args) }
	if !cs.imported && m.Migrating() && exportingTo(m, keys) != nil {
		// Under the slots' locks, so that a migration's end waits for it
		// (settleSlots), drops owed to the importer included.
		r = n.runExporting(ctx, cs, m, exportingTo(m, keys), args, keys, run)
	} else {
		r = run()
	}
	n.slots.runlock(held)
	return n.WithinLease(ctx, a, spec.Has(resp.FlagReadOnly), r)
}

// movedAway says whether m no longer has self coordinate keys, and who
// does (ok false when they are split or have no coordinator). route chose
// this node from an earlier map: a migration that ended since
// (MigrationDone, proposed once the source's slots settled) routes the
// slots to the importer, whose copy is the key now, and running the
// command here would read the source's, deleted when it moved (a GET of a
// rep:3 key answered nil during a drain: TestRebalanceGrowsAndDrainsByCommand).
func movedAway(m *cluster.Map, keys [][]byte, self cluster.NodeID) (owner cluster.Node, moved bool) {
	owner, _, single := coordinatorOf(m, keys)
	if !single {
		return cluster.Node{}, true
	}
	return owner, owner.ID != self
}

// passOn answers a command whose keys moved away between routing and
// running it (movedAway): MOVED to the new coordinator for a forwarding
// node or a client in redirect mode, else the command forwarded there.
// Nothing ran here.
func (n *Server) passOn(ctx context.Context, cs *connState, owner cluster.Node, args, keys [][]byte) resp.Reply {
	slot := int(keyslot.Of(keys[0]))
	switch {
	case owner.ID == "":
		return resp.Errorf("TRYAGAIN memgest: slot %d moved while the command waited; send it again", slot)
	case cs.forwarded || n.Cfg.Redirect:
		return resp.Moved(slot, owner.ClientAddr)
	}
	r, here := n.forwardFollowing(ctx, cs, slot, owner, args)
	if here {
		return resp.Errorf("TRYAGAIN memgest: slot %d moved while the command waited; send it again", slot)
	}
	return r
}

// coordinatorOf returns the common coordinator of keys, or single=false.
func coordinatorOf(m *cluster.Map, keys [][]byte) (owner cluster.Node, slot int, single bool) {
	for i, k := range keys {
		s := keyslot.Of(k)
		node, ok := m.Coordinator(s)
		if !ok {
			return cluster.Node{}, s, false
		}
		if i == 0 {
			owner, slot = node, s
		} else if node.ID != owner.ID {
			return cluster.Node{}, 0, false
		}
	}
	return owner, slot, true
}

// forward runs args on owner and relays its reply. If the owner's map says
// someone else coordinates the key (maps in flux), its -MOVED reaches the
// client, which retries. A failed forward is not -TRYAGAIN: the command may
// have run before the reply was lost, and clients retry TRYAGAIN by
// themselves, which would apply an INCR twice.
func (n *Server) forward(ctx context.Context, cs *connState, owner cluster.Node, args [][]byte) resp.Reply {
	payload, tail := forwardReq{Proto: cs.proto, Args: args}.spool()
	return n.relay(ctx, core.PeerReq{Node: owner, Typ: peer.MsgForward, Payload: payload, Tail: tail}, "command")
}

// relay sends req, a client's command or transaction (what), to the
// coordinator req.Node, and returns the RESP reply it answers.
func (n *Server) relay(ctx context.Context, req core.PeerReq, what string) resp.Reply {
	owner := req.Node
	out, err := n.CallUnder(ctx, req, nil)
	if errors.Is(err, transport.ErrNotSent) {
		// Safe to retry: the coordinator never saw the command.
		return resp.Errorf("TRYAGAIN memgest: coordinator %s unreachable; the %s was not sent: %v", owner.ClientAddr, what, err)
	}
	if err != nil {
		return resp.Errorf("ERR memgest: forwarding to coordinator %s failed; the %s may or may not have run: %v", owner.ClientAddr, what, err)
	}
	r, _, err := resp.ParseOwned(out) // a fresh frame's: a huge value is not copied again
	if err != nil {
		return resp.Errorf("ERR bad reply from coordinator %s: %v", owner.ClientAddr, err)
	}
	n.Stats.Forwarded.Add(1)
	return r
}

// runOn executes args on node (locally or forwarded) for fan-out commands.
func (n *Server) runOn(ctx context.Context, cs *connState, node cluster.Node, args [][]byte) resp.Reply {
	if node.ID == n.NodeID {
		return n.execute(ctx, cs.sub(), args)
	}
	return n.forward(ctx, cs, node, args)
}
