package commands

import (
	"context"
	"hash/maphash"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// setGroup gathers the plain SETs of a pipeline whose keys this node
// coordinates, to be written together by writeBlind. The pipeline flushes
// it before any command that must see those writes: a command on one of its
// keys, a session command, or the end of the pipeline.
type setGroup struct {
	writes []core.BlindWrite
	at     []int               // each write's position in the pipeline
	keys   map[uint64]struct{} // hashes of the keys: a collision only flushes early
	slots  []uint16            // the keys' slots, for the flush to hold (slotlock.go)
}

// groupSeed hashes the keys of setGroups.
var groupSeed = maphash.MakeSeed()

// setSpec is SET's command spec, recorded as the connection's last command.
var setSpec, _ = resp.Lookup([]byte("set"))

// maxSetGroup bounds a group, so a very long pipeline is acknowledged to
// its peers in pieces of reasonable size.
const maxSetGroup = 256

// joins says whether the pipelined command p (args) can join the group: a
// plain SET, authenticated, of an acceptable key and value (storableString)
// that this node coordinates in a formed cluster. Anything else runs the
// usual way, and gets its error there.
func (n *Server) joins(cs *connState, p parsed, args [][]byte) bool {
	if !cs.authed || p.spec == nil || p.spec.Name != "set" || len(args) != 3 ||
		len(args[1]) > MaxKeySize || n.storableString(args[2]) != nil {
		return false
	}
	m := n.Ctl.Map()
	slot := keyslot.Of(args[1])
	c, ok := m.Coordinator(slot)
	if m.State != cluster.OK || !ok || c.ID != n.NodeID || m.ImporterOf(slot) != nil {
		return false // a migrating slot's SET must find its key first (migrate.go)
	}
	_, refused := n.refuseKeys(m, args[1:2])
	// A refused SET runs the usual way, to get its error; so does one
	// whose key recovery has yet to restore.
	return !refused && !n.stripes.KeyPending(m, args[1])
}

func (g *setGroup) has(key []byte) bool {
	_, ok := g.keys[maphash.Bytes(groupSeed, key)]
	return ok
}

func (g *setGroup) add(at int, key, value []byte) {
	if g.keys == nil {
		g.keys = make(map[uint64]struct{})
	}
	g.keys[maphash.Bytes(groupSeed, key)] = struct{}{}
	g.writes = append(g.writes, core.BlindWrite{Key: key, Value: value})
	g.at = append(g.at, at)
}

// slotsOf is the slots of the group's keys, in g.slots.
func (g *setGroup) slotsOf() []uint16 {
	g.slots = g.slots[:0]
	for _, w := range g.writes {
		g.slots = append(g.slots, uint16(keyslot.Of(w.Key)))
	}
	return g.slots
}

// stillJoinable says whether m, read under the group's slot locks, still
// has self coordinate every key's slot, none of them migrating: the SETs
// joined under an earlier map (joins), and a migration that began or
// ended since needs each to find its key first (runExporting) or run at
// the importer (coordinate's movedAway).
func (g *setGroup) stillJoinable(m *cluster.Map, self cluster.NodeID) bool {
	for _, w := range g.writes {
		slot := keyslot.Of(w.Key)
		if c, ok := m.Coordinator(slot); !ok || c.ID != self || m.ImporterOf(slot) != nil {
			return false
		}
	}
	return true
}

// runEach runs the group's SETs one by one the usual way, and empties it.
func (g *setGroup) runEach(n *Server, ctx context.Context, cs *connState, replies []resp.Reply) {
	for i, w := range g.writes {
		replies[g.at[i]] = n.execute(ctx, cs, [][]byte{[]byte("SET"), w.Key, w.Value})
	}
	g.reset()
}

// reset empties the group for the next SETs.
func (g *setGroup) reset() {
	clear(g.writes)
	g.writes, g.at = g.writes[:0], g.at[:0]
	clear(g.keys)
}

// touches says whether any of keys is in the group.
func (g *setGroup) touches(keys [][]byte) bool {
	for _, k := range keys {
		if g.has(k) {
			return true
		}
	}
	return false
}

// flush writes the group and files each SET's reply.
func (g *setGroup) flush(n *Server, ctx context.Context, cs *connState, replies []resp.Reply) {
	if len(g.writes) == 0 {
		return
	}
	start := core.Monotime()
	a := n.TakeAuthority()
	ok := errFenced // lapsed since the SETs joined: none runs
	if a.Ok {
		held := n.slots.rlock(g.slotsOf())
		if !g.stillJoinable(n.Ctl.Map(), n.NodeID) {
			n.slots.runlock(held)
			g.runEach(n, ctx, cs, replies)
			return
		}
		n.WriteBlind(ctx, g.writes, start)
		n.slots.runlock(held)
		ok = n.WithinLease(ctx, a, false, resp.OK()) // one check after every write ended covers them all
	}
	took := n.Metrics.ObserveCommands(commands["set"], "set", start, len(g.writes))
	cs.lastCmd.Store(setSpec)
	n.Stats.Commands.Add(int64(len(g.writes)))
	for i, w := range g.writes {
		if w.Err != nil {
			replies[g.at[i]] = errReply(w.Err)
		} else {
			replies[g.at[i]] = ok
		}
		n.info.cmds.ran(setSpec, replies[g.at[i]], took)
		cs.noteWrite(setSpec, [][]byte{w.Key}, replies[g.at[i]])
	}
	g.reset()
}
