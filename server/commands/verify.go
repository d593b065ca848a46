package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// SCHEME.VERIFY key checks, on the key's coordinator, that every piece of
// the key agrees with its committed version: each replica holds the
// committed bytes; each split shard of the committed version is present
// with a valid CRC32C, and the value decodes the same from the data shards
// and from the parity shards. No write of the key runs meanwhile (the check
// holds the key's write slot, as a read-modify-write does), so a write in
// flight is never mistaken for a disagreement. Pieces on failed nodes that
// no survivor stands in for are counted as unavailable, not checked.
//
// The robustness suite runs it on every key after its faults heal; an
// operator can run it on a key a scrub or a client doubts.
func cmdSchemeVerify(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	key := args[1]
	var rep verifyReport
	var found bool
	err := n.RMW(ctx, key, func(cur core.Current) (*core.WriteOp, error) {
		if found = cur.Exists; found {
			rep = n.verifyPieces(ctx, n.Ctl.Map(), key, cur)
		}
		return nil, nil // change nothing
	})
	switch {
	case err != nil:
		return errReply(err)
	case !found:
		return resp.Nil()
	case len(rep.problems) > 0:
		return resp.Errorf("ERR memgest: pieces of '%s' disagree with its version %d: %s",
			key, rep.version, strings.Join(rep.problems, "; "))
	}
	fields := []resp.Reply{
		resp.BulkString("scheme"), resp.BulkString(rep.scheme),
		resp.BulkString("version"), resp.Int(int64(rep.version)),
		resp.BulkString("pieces"), resp.Int(int64(rep.checked)),
		resp.BulkString("unavailable"), resp.Int(int64(rep.unavailable)),
	}
	for _, d := range rep.details {
		fields = append(fields, resp.BulkString(d.Name), detailReply(d.Value))
	}
	return resp.Map(fields...)
}

// detailReply is a kind.Detail's value as a reply.
func detailReply(v any) resp.Reply {
	switch v := v.(type) {
	case string:
		return resp.BulkString(v)
	case int64:
		return resp.Int(v)
	case bool:
		return intBool(v)
	case []string:
		items := make([]resp.Reply, len(v))
		for i, s := range v {
			items[i] = resp.BulkString(s)
		}
		return resp.Array(items...)
	}
	return resp.BulkString(fmt.Sprint(v))
}

// verifyReport is what SCHEME.VERIFY found for one key.
type verifyReport struct {
	scheme      string
	version     uint64
	checked     int // redundancy pieces read and found to agree
	unavailable int // pieces on failed nodes nobody stands in for
	problems    []string
	details     []kind.Detail // the kind's own fields (kind.Check.Details)
}

// verifyPieces checks key's pieces against cur, its committed state (whose
// primary record readCommitted has already checked against its CRC32C, or
// decoded), through its scheme (kind.Scheme.Verify).
func (n *Server) verifyPieces(ctx context.Context, m *cluster.Map, key []byte, cur core.Current) verifyReport {
	r := verifyReport{scheme: cur.Entry.Name(), version: cur.Meta.Version}
	sch := n.KindOf(cur.Entry)
	if _, err := sch.Targets(m, key); err != nil {
		r.problems = append(r.problems, err.Error())
		return r
	}
	c := sch.Verify(ctx, key, cur.Meta, cur.Value)
	r.checked, r.unavailable, r.problems, r.details = c.Checked, c.Unavailable, c.Problems, c.Details
	return r
}
