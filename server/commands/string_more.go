package commands

import (
	"context"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// The string commands Redis has kept beside SET's options (issue 28):
// SETNX, SETEX, PSETEX and GETSET are SET with NX, EX, PX and GET, with
// their own replies and error texts; GETRANGE (and its old name SUBSTR)
// reads a slice of a value.

func init() {
	data := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("setnx", data(cmdSetNX))
	register("setex", data(setWithExpiry("setex", "EX")))
	register("psetex", data(setWithExpiry("psetex", "PX")))
	register("getset", data(cmdGetSet))
	register("getrange", data(cmdGetRange))
	register("substr", data(cmdGetRange))
}

// cmdSetNX is SET key value NX answering 1 when it wrote, else 0.
func cmdSetNX(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if r, ok := n.checkStringValue(args[2]); !ok {
		return r
	}
	r := n.setConditional(ctx, args[1], args[2], 0, resp.SetArgs{NX: true}, nil)
	switch {
	case r.IsError():
		return r
	case r.IsNil():
		return resp.Int(0)
	}
	return resp.Int(1)
}

// setWithExpiry builds SETEX (unit "EX") and PSETEX ("PX"): key, a
// positive time, value. A time that is not an integer, not positive or
// overflows gets Redis's texts, naming the command.
func setWithExpiry(name, unit string) handler {
	return func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		t, ok := resp.ParseInt(args[2])
		if !ok {
			return resp.Err(errNotInt.Error())
		}
		if t <= 0 {
			return resp.ErrInvalidExpire(name)
		}
		set := [][]byte{[]byte("set"), args[1], args[3], []byte(unit), args[2]}
		a, bad := resp.ParseSet(set)
		if bad.IsError() {
			return resp.ErrInvalidExpire(name)
		}
		expireAt, ok := a.ExpireAt(core.NowMs())
		if !ok {
			return resp.ErrInvalidExpire(name)
		}
		if r, ok := n.checkStringValue(args[3]); !ok {
			return r
		}
		if err := n.Set(ctx, args[1], args[3], expireAt, false, nil); err != nil {
			return errReply(err)
		}
		return resp.OK()
	}
}

// cmdGetSet is SET key value GET: the old value, or nil.
func cmdGetSet(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if r, ok := n.checkStringValue(args[2]); !ok {
		return r
	}
	return n.setConditional(ctx, args[1], args[2], 0, resp.SetArgs{Get: true}, nil)
}

// cmdGetRange returns the bytes start..end (inclusive) of a value,
// negative offsets counting from its end, as Redis's getrangeCommand
// clamps them; "" for a missing key or an empty range.
func cmdGetRange(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	start, ok1 := resp.ParseInt(args[2])
	end, ok2 := resp.ParseInt(args[3])
	if !ok1 || !ok2 {
		return resp.Err(errNotInt.Error())
	}
	cur, err := n.Get(ctx, args[1])
	if err != nil {
		return errReply(err)
	}
	if notString(cur) {
		return resp.ErrWrongType
	}
	n.Accessed(args[1], cur)
	first, last, empty := byteRange(start, end, int64(len(cur.Value)))
	if empty {
		return resp.BulkString("")
	}
	return resp.BulkOwned(cur.Value[first : last+1])
}

// byteRange clamps a GETRANGE range to a value of size bytes.
func byteRange(start, end, size int64) (first, last int64, empty bool) {
	if start < 0 && end < 0 && start > end {
		return 0, 0, true
	}
	if start < 0 {
		start += size
	}
	if end < 0 {
		end += size
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, size-1)
	if start > end || size == 0 {
		return 0, 0, true
	}
	return start, end, false
}
