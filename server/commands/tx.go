package commands

import (
	"bytes"
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// MULTI, EXEC, DISCARD, WATCH and UNWATCH for the keys of one slot, as
// Redis Cluster serves them (docs/commands.md, decision 0015). MULTI
// queues the connection's commands; EXEC runs them on their slot's
// coordinator under the slot's exclusive lock (slotlock.go), locally or
// forwarded there in one request (tx_remote.go), after checking that no
// watched key changed: each watched key's version and existence, and the
// slot's deletion count (core.Deletions), as the coordinator read them at
// WATCH.
func init() {
	register("multi", &command{run: cmdMulti, tx: true})
	register("exec", &command{run: cmdExec, tx: true})
	register("discard", &command{run: cmdDiscard, tx: true})
	register("watch", &command{run: cmdWatch, tx: true, routes: true})
	register("unwatch", &command{run: cmdUnwatch})
}

var (
	errNestedMulti   = resp.Err("ERR MULTI calls can not be nested")
	errExecNoMulti   = resp.Err("ERR EXEC without MULTI")
	errDiscardNoTx   = resp.Err("ERR DISCARD without MULTI")
	errWatchInMulti  = resp.Err("ERR WATCH inside MULTI is not allowed")
	errExecAbort     = resp.Err("EXECABORT Transaction discarded because of previous errors.")
	errCrossSlot     = resp.Err("CROSSSLOT Keys in request don't hash to the same slot")
	errNotInTx       = resp.Err("ERR Command not allowed inside a transaction")
	errSlotNotServed = resp.Err("CLUSTERDOWN Hash slot not served")
	queuedReply      = resp.Simple("QUEUED")
)

// watchSpec is WATCH's spec: the pipeline runs it in order, since it
// changes the session.
var watchSpec, _ = resp.Lookup([]byte("watch"))

// txState is a connection's transaction: the commands MULTI queued and
// the keys WATCH watches. Only the connection's goroutine touches it: the
// pipeline runs every command in order while it queues, and WATCH always
// (runPipeline).
type txState struct {
	multi  bool
	dirty  bool       // a command was refused while queuing: EXEC answers EXECABORT
	queued [][][]byte // the arguments stay valid (requestReader never rewrites them)
	watch  *watchSet
}

// watchSet is what WATCH recorded: the versions of keys of one slot as
// their coordinator read them.
type watchSet struct {
	slot int
	node cluster.NodeID // the coordinator that read them
	boot uint64         // its Server's boot nonce: a restart loses its counts
	mark uint64         // the slot's deletion count (core.Deletions.Mark)
	// broken marks versions read by two coordinators (the slot moved
	// between two WATCHes): EXEC aborts.
	broken bool
	keys   []watchedKey
}

type watchedKey struct {
	key     []byte
	exists  bool
	version uint64
}

// queuing says whether cs is between MULTI and EXEC or DISCARD.
func (cs *connState) queuing() bool { return cs.tx != nil && cs.tx.multi }

// flagTx marks a transaction being queued as failed: EXEC will answer
// EXECABORT, as Redis's flagTransaction does for a refused command.
func (cs *connState) flagTx() {
	if cs.queuing() {
		cs.tx.dirty = true
	}
}

func cmdMulti(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if cs.queuing() {
		return errNestedMulti
	}
	if cs.tx == nil {
		cs.tx = &txState{}
	}
	cs.tx.multi = true
	return resp.OK()
}

func cmdDiscard(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if !cs.queuing() {
		return errDiscardNoTx
	}
	cs.tx = nil // unwatches too
	return resp.OK()
}

func cmdUnwatch(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if cs.tx != nil {
		cs.tx.watch = nil
		if !cs.tx.multi {
			cs.tx = nil
		}
	}
	return resp.OK()
}

// queue is the reply to a command sent between MULTI and EXEC: +QUEUED,
// or the error Redis Cluster would give it now (which makes EXEC answer
// EXECABORT). Its arity and name were checked already.
func (n *Server) queue(cs *connState, spec *resp.CommandSpec, args, keys [][]byte) resp.Reply {
	if r := n.refuseQueued(spec, args, keys); r.IsError() {
		cs.flagTx()
		return r
	}
	if !cs.tx.dirty { // a failed transaction keeps nothing, as Redis's
		cs.tx.queued = append(cs.tx.queued, args)
	}
	return queuedReply
}

// refuseQueued is the error a command gets while being queued: the checks
// dispatch makes before running one, and Redis Cluster's, which refuses
// keys of several slots and, with redirects, keys coordinated elsewhere.
func (n *Server) refuseQueued(spec *resp.CommandSpec, args, keys [][]byte) resp.Reply {
	// HELLO and AUTH would change the protocol or the user under replies
	// still queued, on a node the transaction may not even run on; a
	// subscription's confirmations are pushed on the connection, not
	// returned, so they cannot be EXEC's elements (Redis makes them so).
	switch topName(spec) {
	case "hello", "auth", "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe":
		return errNotInTx
	}
	if len(args) > n.Cfg.MaxArgs {
		return resp.Err("ERR too many arguments")
	}
	if commands[topName(spec)].needsFormed || len(keys) > 0 {
		if r, down := n.clusterDown(); down {
			return r
		}
	}
	if len(keys) == 0 {
		return resp.Reply{}
	}
	for _, k := range keys {
		if len(k) > MaxKeySize {
			return resp.Errorf("ERR memgest: key of %d bytes exceeds the %d-byte limit", len(k), MaxKeySize)
		}
	}
	slot, ok := oneSlot(keys)
	if !ok {
		return errCrossSlot
	}
	if n.Cfg.Redirect {
		if owner, ok := n.Ctl.Map().Coordinator(slot); ok && owner.ID != n.NodeID {
			return resp.Moved(slot, owner.ClientAddr)
		}
	}
	return resp.Reply{}
}

// oneSlot is the slot every key hashes to, or ok false.
func oneSlot(keys [][]byte) (slot int, ok bool) {
	for i, k := range keys {
		s := keyslot.Of(k)
		if i == 0 {
			slot = s
		} else if s != slot {
			return 0, false
		}
	}
	return slot, true
}

// slot is the slot of every key the queued commands name (keyed false if
// they name none), or ok false when they name several, which Redis
// Cluster refuses at EXEC.
func (tx *txState) slot() (slot int, keyed, ok bool) {
	var buf [][]byte
	for _, args := range tx.queued {
		spec, bad := resp.Resolve(args)
		if bad.IsError() {
			continue
		}
		buf = spec.AppendKeys(buf[:0], args)
		for _, k := range buf {
			s := keyslot.Of(k)
			if keyed && s != slot {
				return 0, true, false
			}
			slot, keyed = s, true
		}
	}
	return slot, keyed, true
}

// cmdExec runs the queued commands where their slot is coordinated and
// ends the transaction, whatever its outcome: the queue is dropped and
// every key unwatched.
func cmdExec(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if !cs.queuing() {
		return errExecNoMulti
	}
	tx := cs.tx
	cs.tx = nil
	slot, keyed, ok := tx.slot() // Redis Cluster checks the slot first
	if !ok {
		return errCrossSlot
	}
	if tx.dirty {
		return errExecAbort
	}
	if w := tx.watch; w != nil {
		if keyed && w.slot != slot {
			return errCrossSlot
		}
		slot, keyed = w.slot, true
	}
	if !keyed { // nothing to hold: the commands run here
		return n.runTx(ctx, cs, -1, nil, tx.queued)
	}
	if r, down := n.clusterDown(); down {
		return r
	}
	m := n.Ctl.Map()
	owner, ok := m.Coordinator(slot)
	switch {
	case !ok:
		return errSlotNotServed
	case m.ImporterOf(slot) != nil:
		// A migrating slot's keys may be on two nodes (migrate.go).
		return resp.Err("TRYAGAIN memgest: the transaction's slot is migrating; retry")
	case owner.ID == n.NodeID:
		return n.runTx(ctx, cs, slot, tx.watch, tx.queued)
	case cs.forwarded || n.Cfg.Redirect:
		return resp.Moved(slot, owner.ClientAddr)
	}
	r := n.forwardTx(ctx, cs, owner, slot, tx.watch, tx.queued)
	noteWrites(cs, tx.queued, r) // they ran on the coordinator's connection
	return r
}

// noteWrites records on cs the writes of a transaction run elsewhere, as
// runQueued records those it runs (WAIT asks about the last).
func noteWrites(cs *connState, cmds [][][]byte, r resp.Reply) {
	items := r.Items()
	for i, args := range cmds {
		if spec, bad := resp.Resolve(args); !bad.IsError() && i < len(items) {
			cs.noteWrite(spec, spec.Keys(args), items[i])
		}
	}
}

// runTx runs a transaction's commands on the coordinator of slot (-1: a
// transaction without keys, run where it was sent), under the slot's
// exclusive lock, unless a watched key changed (a null array). Each reply
// is the command's, errors included: nothing is rolled back.
func (n *Server) runTx(ctx context.Context, cs *connState, slot int, w *watchSet, cmds [][][]byte) resp.Reply {
	if slot < 0 {
		return resp.Array(n.runQueued(ctx, cs, cmds)...)
	}
	keys := txKeys(w, cmds)
	if r, refused := n.refuseKeys(n.Ctl.Map(), keys); refused {
		return r
	}
	if err := n.stripes.RestoreKeys(ctx, keys); err != nil {
		return resp.Errorf("TRYAGAIN memgest: restoring the key's stripe chunk: %v", err)
	}
	a := n.TakeAuthority()
	if !a.Ok {
		return errFenced
	}
	n.slots.lock(slot)
	held, err := n.watchHolds(ctx, w)
	var r resp.Reply
	switch {
	case err != nil:
		r = errReply(err)
	case !held:
		r = resp.NilArray()
	default:
		r = resp.Array(n.runQueued(context.WithValue(ctx, txHeld{}, slot), cs, cmds)...)
	}
	n.slots.unlock(slot)
	return n.WithinLease(ctx, a, readOnly(cmds), r)
}

// runQueued runs queued commands in order; the caller holds their slot.
// Their keys are coordinated here, so each runs its handler directly.
func (n *Server) runQueued(ctx context.Context, cs *connState, cmds [][][]byte) []resp.Reply {
	replies := make([]resp.Reply, len(cmds))
	for i, args := range cmds {
		spec, bad := resp.Resolve(args)
		if bad.IsError() { // queued only after the same check
			replies[i] = bad
			continue
		}
		cmd := commands[topName(spec)]
		cs.lastCmd.Store(spec)
		n.Stats.Commands.Add(1)
		start := core.Monotime()
		replies[i] = cmd.run(n, ctx, cs, args)
		n.ran(cs, cmd, spec, spec.Keys(args), replies[i], start)
	}
	return replies
}

// txKeys are every key a transaction names: the watched ones and the
// queued commands'.
func txKeys(w *watchSet, cmds [][][]byte) [][]byte {
	var keys [][]byte
	if w != nil {
		for _, k := range w.keys {
			keys = append(keys, k.key)
		}
	}
	for _, args := range cmds {
		if spec, bad := resp.Resolve(args); !bad.IsError() {
			keys = spec.AppendKeys(keys, args)
		}
	}
	return keys
}

// readOnly says whether every command of a transaction only reads: a
// lapsed lease then makes EXEC a refused read rather than a write whose
// outcome is unknown (WithinLease).
func readOnly(cmds [][][]byte) bool {
	for _, args := range cmds {
		if spec, bad := resp.Resolve(args); bad.IsError() || !spec.Has(resp.FlagReadOnly) {
			return false
		}
	}
	return true
}

// cmdWatch records the versions of keys of one slot, read by their
// coordinator, for the next EXEC. It routes itself (command.routes):
// locally, by a Tx request to the coordinator, or -MOVED with redirects.
func cmdWatch(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if cs.queuing() {
		return errWatchInMulti
	}
	keys := args[1:]
	slot, ok := oneSlot(keys)
	if !ok || cs.tx != nil && cs.tx.watch != nil && cs.tx.watch.slot != slot {
		return errCrossSlot
	}
	if r, down := n.clusterDown(); down {
		return r
	}
	owner, ok := n.Ctl.Map().Coordinator(slot)
	var w watchSet
	var r resp.Reply
	switch {
	case !ok:
		return errSlotNotServed
	case owner.ID == n.NodeID:
		w, r = n.watchHere(ctx, slot, keys)
	case cs.forwarded || n.Cfg.Redirect:
		return resp.Moved(slot, owner.ClientAddr)
	default:
		w, r = n.watchRemote(ctx, owner, slot, keys)
	}
	if r.IsError() {
		return r
	}
	if cs.tx == nil {
		cs.tx = &txState{}
	}
	cs.tx.watch = cs.tx.watch.merge(w)
	return resp.OK()
}

// watchHere reads the versions WATCH records, as the coordinator of slot,
// with the slot held shared: an EXEC in progress finishes first.
func (n *Server) watchHere(ctx context.Context, slot int, keys [][]byte) (watchSet, resp.Reply) {
	if r, refused := n.refuseKeys(n.Ctl.Map(), keys); refused {
		return watchSet{}, r
	}
	a := n.TakeAuthority()
	if !a.Ok {
		return watchSet{}, errFenced
	}
	var buf [4]uint16
	held := n.slots.rlock(append(buf[:0], uint16(slot)))
	w := watchSet{slot: slot, node: n.NodeID, boot: n.boot, mark: n.Deletions.Mark(slot)}
	var err error
	for _, k := range keys {
		var cur core.Current
		if cur, err = n.MetaCommitted(ctx, k); err != nil {
			break
		}
		w.keys = append(w.keys, watchedKey{key: bytes.Clone(k), exists: cur.Exists, version: cur.Meta.Version})
	}
	n.slots.runlock(held)
	if err != nil {
		return w, errReply(err)
	}
	return w, n.WithinLease(ctx, a, true, resp.OK())
}

// merge adds the keys of a later WATCH of the same slot. The earlier
// deletion count stays: a deletion since the first WATCH counts.
func (w *watchSet) merge(later watchSet) *watchSet {
	if w == nil {
		return &later
	}
	if later.node != w.node || later.boot != w.boot {
		w.broken = true
	}
	w.keys = append(w.keys, later.keys...)
	return w
}

// watchHolds says whether no watched key changed since WATCH: the caller
// coordinates w's slot and holds it exclusively. A key changed if it
// appeared, disappeared (deleted or expired) or has another version, or,
// absent both times, if a key of the slot was deleted meanwhile (it may
// have been created and deleted). Versions are a coordinator's own, so
// versions another coordinator read count as changed.
func (n *Server) watchHolds(ctx context.Context, w *watchSet) (bool, error) {
	if w == nil {
		return true, nil
	}
	if w.broken || w.node != n.NodeID || w.boot != n.boot {
		return false, nil
	}
	deleted := n.Deletions.Mark(w.slot) != w.mark
	for _, k := range w.keys {
		cur, err := n.MetaCommitted(ctx, k.key)
		if err != nil {
			return false, err
		}
		if cur.Exists != k.exists || cur.Meta.Version != k.version || !cur.Exists && deleted {
			return false, nil
		}
	}
	return true, nil
}
