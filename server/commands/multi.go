package commands

import (
	"context"
	"sync"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// Multi-key commands whose keys live on several coordinators are split into
// one sub-command per coordinator, run in parallel, and merged. They are
// atomic per node at most, never across nodes (docs/commands.md).

// group is the part of a multi-key command bound for one coordinator.
type group struct {
	node      cluster.Node
	args      [][]byte // the sub-command, name first
	positions []int    // index of each key in the original command
}

// groupKeys splits args (name, then keys in groups of step) by coordinator.
func (n *Server) groupKeys(args [][]byte, step int) []*group {
	m := n.Ctl.Map()
	byNode := map[cluster.NodeID]*group{}
	var order []*group
	for i := 1; i+step-1 < len(args); i += step {
		node, _ := m.Coordinator(keyslot.Of(args[i]))
		g := byNode[node.ID]
		if g == nil {
			g = &group{node: node, args: [][]byte{args[0]}}
			byNode[node.ID] = g
			order = append(order, g)
		}
		g.args = append(g.args, args[i:i+step]...)
		g.positions = append(g.positions, (i-1)/step)
	}
	return order
}

// runGroups runs every group's sub-command in parallel.
func (n *Server) runGroups(ctx context.Context, cs *connState, groups []*group) []resp.Reply {
	out := make([]resp.Reply, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		n.Workers.Go(func() {
			defer wg.Done()
			out[i] = n.runOn(ctx, cs, g.node, g.args)
		})
	}
	wg.Wait()
	return out
}

func firstError(replies []resp.Reply) (resp.Reply, bool) {
	for _, r := range replies {
		if r.IsError() {
			return r, true
		}
	}
	return resp.Reply{}, false
}

func cmdMGet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	items := make([]resp.Reply, 0, len(args)-1)
	for _, k := range args[1:] {
		items = append(items, cmdGet(n, ctx, cs, [][]byte{nil, k}))
	}
	for i, r := range items {
		switch {
		case r.Equal(resp.ErrWrongType): // MGET answers nil for a key of another type
			items[i] = resp.Nil()
		case r.IsError(): // a lost or unreadable key never reads as nil
			return r
		}
	}
	return resp.Array(items...)
}

func fanMGet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	groups := n.groupKeys(args, 1)
	replies := n.runGroups(ctx, cs, groups)
	if r, bad := firstError(replies); bad {
		return r
	}
	items := make([]resp.Reply, len(args)-1)
	for gi, g := range groups {
		sub := replies[gi].Items()
		for j, pos := range g.positions {
			if j < len(sub) {
				items[pos] = sub[j]
			} else {
				items[pos] = resp.Nil()
			}
		}
	}
	return resp.Array(items...)
}

func cmdMSet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if len(args)%2 != 1 {
		return resp.ErrWrongArity(string(args[0]))
	}
	for i := 2; i < len(args); i += 2 {
		if r, ok := n.checkStringValue(args[i]); !ok {
			return r
		}
	}
	last := lastOccurrence(args)
	ws := make([]core.BlindWrite, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		if last[string(args[i])] == i { // a later pair sets this key: Redis keeps the last
			ws = append(ws, core.BlindWrite{Key: args[i], Value: args[i+1]})
		}
	}
	n.WriteBlind(ctx, ws, core.Monotime())
	for _, w := range ws {
		if w.Err != nil {
			return errReply(w.Err)
		}
	}
	return resp.OK()
}

func fanMSet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if len(args)%2 != 1 {
		return resp.ErrWrongArity(string(args[0]))
	}
	if r, bad := firstError(n.runGroups(ctx, cs, n.groupKeys(args, 2))); bad {
		return r
	}
	return resp.OK()
}

// lastOccurrence maps each key of an MSET argument list to the index of its
// last pair, so that pairs run in parallel still leave the last value.
func lastOccurrence(args [][]byte) map[string]int {
	last := make(map[string]int, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		last[string(args[i])] = i
	}
	return last
}

// MSETNX sets all keys only if none exists. The check and the writes are
// separate steps, so it is not atomic against concurrent writers of the
// same keys (documented; Redis Cluster refuses it across slots instead).
// cmdMSetNX's keys are all coordinated here, and their slots held
// (coordinate): it counts them with EXISTS's handler, not through
// execute, which would take the slots again.
func cmdMSetNX(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	return msetnx(n, ctx, cs, args, cmdExists, cmdMSet)
}

func fanMSetNX(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	exists := func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		return n.execute(ctx, cs.sub(), args)
	}
	return msetnx(n, ctx, cs, args, exists, fanMSet)
}

func msetnx(n *Server, ctx context.Context, cs *connState, args [][]byte, count, mset handler) resp.Reply {
	if len(args)%2 != 1 {
		return resp.ErrWrongArity(string(args[0]))
	}
	exists := [][]byte{[]byte("EXISTS")}
	for i := 1; i < len(args); i += 2 {
		exists = append(exists, args[i])
	}
	r := count(n, ctx, cs, exists)
	if r.IsError() {
		return r
	}
	if r.Int() > 0 {
		return resp.Int(0)
	}
	set := append([][]byte{[]byte("MSET")}, args[1:]...)
	if r := mset(n, ctx, cs, set); r.IsError() {
		return r
	}
	return resp.Int(1)
}
