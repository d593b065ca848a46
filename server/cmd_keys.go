package server

import (
	"context"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/resp"
)

func init() {
	data := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("del", &command{run: cmdDel, fanout: fanCount, needsFormed: true})
	register("unlink", &command{run: cmdDel, fanout: fanCount, needsFormed: true})
	register("exists", &command{run: cmdExists, fanout: fanCount, needsFormed: true})
	register("type", data(cmdType))
	for _, name := range []string{"expire", "pexpire", "expireat", "pexpireat"} {
		register(name, data(cmdExpire))
	}
	register("ttl", data(ttlCmd(1000)))
	register("pttl", data(ttlCmd(1)))
	register("persist", data(cmdPersist))
	register("scan", data(cmdScan))
	register("dbsize", data(cmdDBSize))
	register("flushall", data(cmdFlush))
	register("flushdb", data(cmdFlush))
}

func cmdDel(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var count int64
	for _, key := range args[1:] {
		deleted, err := n.del(ctx, key)
		if err != nil {
			return errReply(err)
		}
		if deleted {
			count++
		}
	}
	return resp.Int(count)
}

// del removes key through the coordinator's write path: a versioned
// deletion whose redundancy is released before it is acknowledged.
func (n *Node) del(ctx context.Context, key []byte) (bool, error) {
	var existed bool
	err := n.rmwMeta(ctx, key, func(cur current) (*writeOp, error) {
		existed = cur.exists
		if !cur.exists {
			return nil, nil
		}
		return &writeOp{key: key, del: true, entry: cur.entry}, nil
	})
	return existed, err
}

func cmdExists(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var count int64
	for _, key := range args[1:] {
		if cur, _ := n.metaCommitted(ctx, key); cur.exists {
			count++
		}
	}
	return resp.Int(count)
}

// fanCount runs DEL, UNLINK or EXISTS per coordinator and sums the counts.
func fanCount(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	replies := n.runGroups(ctx, cs, n.groupKeys(args, 1))
	if r, bad := firstError(replies); bad {
		return r
	}
	var sum int64
	for _, r := range replies {
		sum += r.Int()
	}
	return resp.Int(sum)
}

func cmdType(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	meta, ok := n.keyMeta(args[1])
	if !ok || (meta.ExpireAt != 0 && meta.ExpireAt <= nowMs()) {
		return resp.Simple("none")
	}
	return resp.Simple("string")
}

// cmdExpire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with Redis 7's NX,
// XX, GT and LT conditions (the parser reads the unit from the name).
func cmdExpire(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	now := nowMs()
	a, bad := resp.ParseExpire(args, now)
	if bad.IsError() {
		return bad
	}
	at := a.At
	if at <= now { // a time in the past deletes the key, as in Redis
		at = now
	}
	var set bool
	err := n.rmw(ctx, args[1], func(cur current) (*writeOp, error) {
		set = cur.exists && expireAllowed(a, cur.meta.ExpireAt, at)
		if !set {
			return nil, nil
		}
		return n.retimeOp(cur, args[1], at), nil
	})
	if err != nil {
		return errReply(err)
	}
	return intBool(set)
}

// expireAllowed applies NX/XX/GT/LT; a key without expiry has an infinite
// TTL for GT and LT, as in Redis 7.
func expireAllowed(a resp.ExpireArgs, current, next int64) bool {
	switch {
	case a.NX:
		return current == 0
	case a.XX:
		return current != 0
	case a.GT:
		return current != 0 && next > current
	case a.LT:
		return current == 0 || next < current
	}
	return true
}

func ttlCmd(unit int64) handler {
	return func(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		meta, ok := n.keyMeta(args[1])
		now := nowMs()
		switch {
		case !ok || (meta.ExpireAt != 0 && meta.ExpireAt <= now):
			return resp.Int(-2)
		case meta.ExpireAt == 0:
			return resp.Int(-1)
		}
		left := meta.ExpireAt - now
		return resp.Int((left + unit/2) / unit)
	}
}

func cmdPersist(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var changed bool
	err := n.rmw(ctx, args[1], func(cur current) (*writeOp, error) {
		changed = cur.exists && cur.meta.ExpireAt != 0
		if !changed {
			return nil, nil
		}
		return n.retimeOp(cur, args[1], 0), nil
	})
	if err != nil {
		return errReply(err)
	}
	return intBool(changed)
}

// coordinators lists the nodes that coordinate at least one shard, in shard
// order: the nodes SCAN and DBSIZE visit.
func coordinators(m *cluster.Map) []cluster.Node {
	seen := map[cluster.NodeID]bool{}
	var out []cluster.Node
	for i := range m.Shards {
		node, ok := m.Coordinator(m.Shards[i].First)
		if ok && !seen[node.ID] {
			seen[node.ID] = true
			out = append(out, node)
		}
	}
	return out
}

func cmdDBSize(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	all, err := n.clusterStats(ctx)
	if err != nil {
		return errReply(err)
	}
	var keys int64
	for _, st := range all {
		keys += st.Keys
	}
	return resp.Int(keys)
}

func cmdFlush(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	for _, a := range args[1:] {
		if opt := strings.ToUpper(string(a)); opt != "ASYNC" && opt != "SYNC" {
			return resp.Err("ERR syntax error")
		}
	}
	m := n.ctl.Map()
	for _, node := range m.Nodes {
		if node.ID == n.id {
			n.flushLocal()
			continue
		}
		if _, err := n.call(ctx, node, msgFlush, nil); err != nil {
			return errReply(err)
		}
	}
	return resp.OK()
}

// flushLocal drops every key this node coordinates and every piece it
// holds, and forgets the stripe chunks its recoveries deferred (their keys
// are flushed too). It holds every inflight shard lock meanwhile, so no
// commit on this node interleaves with it; writes in flight across nodes
// can still leave a piece or a record behind (docs/decisions/0002, "Known
// gaps").
func (n *Node) flushLocal() {
	n.pending.work.Lock() // after the restore in flight, if any
	defer n.pending.work.Unlock()
	n.pending.clearLocked()
	for i := range n.inflight.shards {
		n.inflight.shards[i].mu.Lock()
	}
	defer func() {
		for i := range n.inflight.shards {
			n.inflight.shards[i].mu.Unlock()
		}
	}()
	n.primary.Clear()
	n.pieces.Clear()
	n.stripes.clear()
	n.stats.splitValues.Clear()
}
