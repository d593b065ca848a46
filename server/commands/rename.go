package commands

import (
	"bytes"
	"context"
	"strings"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// RENAME, RENAMENX and COPY (issue 28) move or copy a key's value to
// another key of the same slot, as Redis Cluster requires (CROSSSLOT
// otherwise, even when one node coordinates both slots). The destination
// takes the source's value bytes as they are (so its type: a hash stays a
// hash), its TTL and its scheme; both keys are written under
// core.RMWPair, the destination first (docs/commands.md).

func init() {
	pair := func(h handler) *command { return &command{run: h, fanout: crossSlot, needsFormed: true} }
	register("rename", pair(renameCmd(false)))
	register("renamenx", pair(renameCmd(true)))
	register("copy", pair(cmdCopy))
}

var (
	errNoSuchKey = resp.Err("ERR no such key")
	errSameKeys  = resp.Err("ERR source and destination objects are the same")
	errIntRange  = resp.Err("ERR value is out of range, value must between -2147483648 and 2147483647")
)

// renameCmd builds RENAME (nx false: OK, the destination overwritten) and
// RENAMENX (1, or 0 when the destination exists), with
// renameGenericCommand's answers: ERR no such key for a missing source,
// and the same key renamed to itself does nothing.
func renameCmd(nx bool) handler {
	done, kept := resp.OK(), resp.OK()
	if nx {
		done, kept = resp.Int(1), resp.Int(0)
	}
	return func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		src, dst := args[1], args[2]
		if r, ok := sameSlot(src, dst); !ok {
			return r
		}
		if bytes.Equal(src, dst) {
			cur, err := n.MetaCommitted(ctx, src)
			switch {
			case err != nil:
				return errReply(err)
			case !cur.Exists:
				return errNoSuchKey
			}
			return kept
		}
		reply := done
		err := n.RMWPair(ctx, dst, src, func(to, from core.Current) (*core.WriteOp, *core.WriteOp, error) {
			switch {
			case !from.Exists:
				reply = errNoSuchKey
				return nil, nil, nil
			case nx && to.Exists:
				reply = kept
				return nil, nil, nil
			}
			return n.copyOp(to, dst, from), &core.WriteOp{Key: src, Del: true, Entry: from.Entry}, nil
		})
		if err != nil {
			return errReply(err)
		}
		return reply
	}
}

// copyOp writes from's value, TTL and scheme over to, key dst's state.
func (n *Server) copyOp(to core.Current, dst []byte, from core.Current) *core.WriteOp {
	entry := from.Entry
	return n.ValueOp(to, dst, from.Value, from.Meta.ExpireAt, false, &entry)
}

// cmdCopy is COPY source destination [DB destination-db] [REPLACE]: 1 if
// copied, 0 if the source is missing or the destination exists without
// REPLACE. A Redis Cluster node has database 0 only, so DB takes 0 and
// anything else is ERR DB index is out of range, as there.
func cmdCopy(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	src, dst := args[1], args[2]
	if r, ok := sameSlot(src, dst); !ok {
		return r // before the options, as Redis Cluster checks slots first
	}
	replace, bad := parseCopy(args)
	if bad.IsError() {
		return bad
	}
	if bytes.Equal(src, dst) {
		return errSameKeys
	}
	copied := false
	err := n.RMWPair(ctx, dst, src, func(to, from core.Current) (*core.WriteOp, *core.WriteOp, error) {
		if !from.Exists || (to.Exists && !replace) {
			return nil, nil, nil
		}
		copied = true
		return n.copyOp(to, dst, from), nil, nil
	})
	if err != nil {
		return errReply(err)
	}
	return intBool(copied)
}

// parseCopy reads COPY's options as copyCommand does: REPLACE, and DB
// with a 32-bit integer (getIntFromObjectOrReply's two errors) that must
// name database 0.
func parseCopy(args [][]byte) (replace bool, bad resp.Reply) {
	for j := 3; j < len(args); j++ {
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "replace":
			replace = true
		case opt == "db" && j+1 < len(args):
			db, ok := resp.ParseInt(args[j+1])
			switch {
			case !ok:
				return false, resp.ErrNotInteger
			case db < -1<<31 || db > 1<<31-1:
				return false, errIntRange
			case db != 0:
				return false, resp.ErrDBIndex
			}
			j++
		default:
			return false, resp.ErrSyntax
		}
	}
	return replace, resp.Reply{}
}
