package commands

import (
	"context"
	"errors"
	"strconv"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

func init() {
	data := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("get", data(cmdGet))
	register("set", data(cmdSet))
	register("getdel", data(cmdGetDel))
	register("getex", data(cmdGetEx))
	register("strlen", data(cmdStrlen))
	register("append", data(cmdAppend))
	register("incr", data(incrBy(1, false)))
	register("decr", data(incrBy(-1, false)))
	register("incrby", data(incrBy(1, true)))
	register("decrby", data(incrBy(-1, true)))
	register("mget", &command{run: cmdMGet, fanout: fanMGet, needsFormed: true})
	register("mset", &command{run: cmdMSet, fanout: fanMSet, needsFormed: true})
	register("msetnx", &command{run: cmdMSetNX, fanout: fanMSetNX, needsFormed: true})
}

func cmdGet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	cur, err := n.Get(ctx, args[1])
	if err != nil {
		return errReply(err)
	}
	if !cur.Exists {
		return resp.Nil()
	}
	if notString(cur) {
		return resp.ErrWrongType
	}
	n.Accessed(args[1], cur)
	return resp.BulkOwned(cur.Value) // a read's value is never modified (readCommitted)
}

func cmdStrlen(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	cur, err := n.Get(ctx, args[1])
	if err != nil {
		return errReply(err)
	}
	if notString(cur) {
		return resp.ErrWrongType
	}
	n.Accessed(args[1], cur)
	return resp.Int(int64(len(cur.Value)))
}

func cmdSet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	a, bad := resp.ParseSet(args)
	if bad.IsError() {
		return bad
	}
	if r, ok := n.checkStringValue(args[2]); !ok {
		return r
	}
	expireAt, ok := a.ExpireAt(core.NowMs())
	if !ok {
		return resp.ErrInvalidExpire("set")
	}
	var entry *cluster.SchemeEntry
	if a.Scheme != "" {
		e, err := n.ResolveScheme(ctx, a.Scheme)
		if err != nil {
			return errReply(err)
		}
		entry = &e
	}
	key, value := args[1], args[2]
	if !a.NX && !a.XX && !a.Get {
		err := n.Set(ctx, key, value, expireAt, a.KeepTTL, entry)
		if err != nil {
			return errReply(err)
		}
		return resp.OK()
	}
	return n.setConditional(ctx, key, value, expireAt, a, entry)
}

// setConditional is SET with NX, XX or GET: a read-modify-write.
func (n *Server) setConditional(ctx context.Context, key, value []byte, expireAt int64, a resp.SetArgs, entry *cluster.SchemeEntry) resp.Reply {
	var old []byte
	var existed, wrote bool
	err := n.RMW(ctx, key, func(cur core.Current) (*core.WriteOp, error) {
		old, existed, wrote = cur.Value, cur.Exists, false
		if a.Get && notString(cur) {
			return nil, errWrongType
		}
		if (a.NX && cur.Exists) || (a.XX && !cur.Exists) {
			return nil, nil
		}
		wrote = true
		return n.ValueOp(cur, key, value, expireAt, a.KeepTTL, entry), nil
	})
	switch {
	case err != nil:
		return errReply(err)
	case a.Get && existed:
		return resp.BulkOwned(old)
	case a.Get:
		return resp.Nil()
	case !wrote:
		return resp.Nil()
	}
	return resp.OK()
}

func cmdGetDel(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var old []byte
	var existed bool
	err := n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		old, existed = cur.Value, cur.Exists
		if !cur.Exists {
			return nil, nil
		}
		if notString(cur) {
			return nil, errWrongType
		}
		return &core.WriteOp{Key: args[1], Del: true, Entry: cur.Entry}, nil
	})
	if err != nil {
		return errReply(err)
	}
	if !existed {
		return resp.Nil()
	}
	return resp.BulkOwned(old)
}

func cmdGetEx(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	a, bad := resp.ParseGetEx(args)
	if bad.IsError() {
		return bad
	}
	if a.ExpireMode == resp.ExpireNone && !a.Persist {
		return cmdGet(n, ctx, cs, args)
	}
	var val []byte
	var existed bool
	err := n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		val, existed = cur.Value, cur.Exists
		if !cur.Exists {
			return nil, nil
		}
		if notString(cur) {
			return nil, errWrongType
		}
		// Redis checks the expiry only once the key is found.
		var expireAt int64
		if expireAt, bad = a.ExpireAt(core.NowMs()); bad.IsError() {
			return nil, nil
		}
		return n.RetimeOp(cur, args[1], expireAt), nil
	})
	if bad.IsError() {
		return bad
	}
	if err != nil {
		return errReply(err)
	}
	if !existed {
		return resp.Nil()
	}
	return resp.BulkOwned(val)
}

func cmdAppend(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var newLen int
	err := n.RMW(ctx, args[1], func(cur core.Current) (*core.WriteOp, error) {
		if notString(cur) {
			return nil, errWrongType
		}
		v := bigcopy.Append(bigcopy.Append(make([]byte, 0, len(cur.Value)+len(args[2])), cur.Value), args[2])
		if err := n.storableString(v); err != nil {
			return nil, err
		}
		newLen = len(v)
		return n.ValueOp(cur, args[1], v, 0, true, nil), nil
	})
	if err != nil {
		return errReply(err)
	}
	return resp.Int(int64(newLen))
}

var (
	errNotInt   error = replyErr("ERR value is not an integer or out of range")
	errOverflow error = replyErr("ERR increment or decrement would overflow")
	errTooBig   error = replyErr("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
)

// incrBy builds INCR, DECR (fixed step) and INCRBY, DECRBY (step argument).
func incrBy(sign int64, hasArg bool) handler {
	return func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		delta := sign
		if hasArg {
			d, ok := resp.ParseInt(args[2])
			if !ok {
				return resp.Err(errNotInt.Error())
			}
			if sign < 0 && d == minInt64 {
				return resp.ErrDecrOverflow
			}
			delta = sign * d
		}
		return n.incr(ctx, args[1], delta)
	}
}

const minInt64 = -1 << 63

func (n *Server) incr(ctx context.Context, key []byte, delta int64) resp.Reply {
	var result int64
	err := n.RMW(ctx, key, func(cur core.Current) (*core.WriteOp, error) {
		var v int64
		if notString(cur) {
			return nil, errWrongType
		}
		if cur.Exists {
			var ok bool
			if v, ok = resp.ParseInt(cur.Value); !ok {
				return nil, errNotInt
			}
		}
		if (delta > 0 && v > maxInt64-delta) || (delta < 0 && v < minInt64-delta) {
			return nil, errOverflow
		}
		result = v + delta
		return n.ValueOp(cur, key, strconv.AppendInt(nil, result, 10), 0, true, nil), nil
	})
	if err != nil {
		return errReply(err)
	}
	return resp.Int(result)
}

const maxInt64 = 1<<63 - 1

// replyErr is an error that is a Redis error reply, code first: a
// read-modify-write returns one to refuse with Redis's own text, which
// errReply sends as it is.
type replyErr string

func (e replyErr) Error() string { return string(e) }

// errReply turns an error into a Redis-style reply: errors that already
// carry a Redis prefix pass through, others become "ERR memgest: ...".
func errReply(err error) resp.Reply {
	var lost *kind.LostError
	var corrupt *kind.CorruptError
	var reply replyErr
	switch {
	case errors.As(err, &lost):
		return resp.Err(lost.Error())
	case errors.As(err, &corrupt):
		return resp.Err(corrupt.Error())
	case errors.As(err, &reply):
		return resp.Err(string(reply))
	case errors.Is(err, core.ErrOOM):
		return resp.Err(core.ErrOOM.Error())
	case errors.Is(err, scheme.ErrSpec), errors.Is(err, scheme.ErrAlias):
		return resp.Err("ERR " + err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		// Not TRYAGAIN: clients retry that by themselves, and a write that
		// timed out may have taken effect (an INCR would apply twice).
		return resp.Err("ERR memgest: timed out; the command may or may not have run: " + err.Error())
	}
	return resp.Err("ERR " + err.Error())
}

// intBool is Redis's 1/0 integer reply for a yes/no outcome.
func intBool(b bool) resp.Reply {
	if b {
		return resp.Int(1)
	}
	return resp.Int(0)
}
