package commands

import (
	"context"

	"github.com/memgest/memgest/server/core"
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
	register("ttl", data(ttlCmd(1000, false)))
	register("pttl", data(ttlCmd(1, false)))
	register("persist", data(cmdPersist))
	register("scan", data(cmdScan))
	register("dbsize", data(cmdDBSize))
	register("flushall", data(cmdFlush))
	register("flushdb", data(cmdFlush))
}

func cmdDel(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
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
func (n *Server) del(ctx context.Context, key []byte) (bool, error) {
	var existed bool
	err := n.RMWMeta(ctx, key, func(cur core.Current) (*core.WriteOp, error) {
		existed = cur.Exists
		if !cur.Exists {
			return nil, nil
		}
		return &core.WriteOp{Key: key, Del: true, Entry: cur.Entry}, nil
	})
	return existed, err
}

func cmdExists(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var count int64
	for _, key := range args[1:] {
		if cur, _ := n.MetaCommitted(ctx, key); cur.Exists {
			count++
		}
	}
	return resp.Int(count)
}

// fanCount runs DEL, UNLINK or EXISTS per coordinator and sums the counts.
func fanCount(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
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

// cmdType answers a key's type, which its value carries (package
// object): the value is read, its shards gathered for a split key.
func cmdType(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	cur, err := n.Get(ctx, args[1])
	if err != nil {
		return errReply(err)
	}
	if !cur.Exists {
		return resp.Simple("none")
	}
	return resp.Simple(typeOf(cur).String())
}

// cmdExpire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT with Redis 7's NX,
// XX, GT and LT conditions (the parser reads the unit from the name).
func cmdExpire(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	now := core.NowMs()
	a, bad := resp.ParseExpire(args, now)
	if bad.IsError() {
		return bad
	}
	at := a.At
	if at <= now { // a time in the past deletes the key, as in Redis
		at = now
	}
	var set bool
	err := n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		set = cur.Exists && expireAllowed(a, cur.Meta.ExpireAt, at)
		if !set {
			return nil, nil
		}
		return n.RetimeOp(cur, args[1], at), nil
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

// ttlCmd builds TTL (unit 1000: seconds, rounded as Redis rounds) and
// PTTL (milliseconds), or with absolute EXPIRETIME and PEXPIRETIME (the
// Unix time at which the key expires): -1 without an expiry, -2 for a
// missing key.
func ttlCmd(unit int64, absolute bool) handler {
	return func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		meta, ok := n.KeyMeta(args[1])
		now := core.NowMs()
		switch {
		case !ok || (meta.ExpireAt != 0 && meta.ExpireAt <= now):
			return resp.Int(-2)
		case meta.ExpireAt == 0:
			return resp.Int(-1)
		}
		at := meta.ExpireAt
		if !absolute {
			at -= now
		}
		return resp.Int((at + unit/2) / unit)
	}
}

func cmdPersist(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var changed bool
	err := n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		changed = cur.Exists && cur.Meta.ExpireAt != 0
		if !changed {
			return nil, nil
		}
		return n.RetimeOp(cur, args[1], 0), nil
	})
	if err != nil {
		return errReply(err)
	}
	return intBool(changed)
}
