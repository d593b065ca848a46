package commands

import (
	"context"
	"strconv"
	"strings"

	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
)

// This file is DEBUG: corrupting copies, listing pieces, failpoints and
// link faults for tests, and checking every stripe.

// cmdDebug is DEBUG, refused unless --enable-debug-command is set. DEBUG
// FLIP key flips the last byte of every copy of key this node stores (its
// primary record and its pieces) and answers how many it changed. DEBUG
// FAILPOINT and DEBUG LINK inject faults in binaries built with the
// failpoints tag (internal/faults); others refuse them.
func cmdDebug(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if !n.Cfg.EnableDebugCommand {
		return resp.Err("ERR DEBUG command not allowed: start the node with --enable-debug-command")
	}
	switch sub := strings.ToUpper(string(args[1])); {
	case sub == "FLIP" && len(args) == 3:
		return resp.Int(int64(n.flipCopies(args[2])))
	case sub == "PIECES" && len(args) == 2:
		return n.listOwnPieces()
	case sub == "FAILPOINT" && len(args) == 4:
		return faultReply(faults.Arm(string(args[2]), string(args[3])))
	case sub == "LINK" && len(args) == 4:
		return faultReply(faults.SetLink(string(args[2]), string(args[3])))
	case sub == "STRIPES" && len(args) == 2:
		r := n.stripes.VerifyAll(ctx)
		out := []resp.Reply{resp.Int(int64(r.Checked)), resp.Int(int64(r.Unavailable))}
		for _, p := range r.Problems {
			out = append(out, resp.BulkString(p))
		}
		return resp.Array(out...)
	case sub == "HELP" && len(args) == 2:
		return resp.Array(resp.Simple("DEBUG FLIP <key>"),
			resp.Simple("    Flip a byte of every copy of <key> this node stores (to test corruption repair)."),
			resp.Simple("DEBUG PIECES"),
			resp.Simple("    List the redundancy pieces this node holds: key, scheme, version, kind, index."),
			resp.Simple("DEBUG FAILPOINT <name> crash|sleep:<duration>|on|off"),
			resp.Simple("    Arm a failpoint (binaries built with -tags failpoints; docs/robustness.md)."),
			resp.Simple("DEBUG STRIPES"),
			resp.Simple("    Check every chunk this node coordinates against its stripe: checked, unavailable, problems."),
			resp.Simple("DEBUG LINK <peer-address> drop|delay:<duration>|ok"),
			resp.Simple("    Cut or slow this node's connections to a peer (failpoints builds)."))
	}
	return resp.Errorf("ERR unknown subcommand or wrong number of arguments for '%s'. Try DEBUG HELP.", args[1])
}

// listOwnPieces answers DEBUG PIECES: one [key, scheme, version, kind,
// index] entry per piece this node holds (directory entries excluded), for
// tests and operators looking for garbage.
func (n *Server) listOwnPieces() resp.Reply {
	m := n.Ctl.Map()
	kinds := [...]string{core.PieceKindReplica: "replica", core.PieceKindShard: "shard", core.PieceKindDirectory: "directory"}
	var out []resp.Reply
	var cursor uint64
	for {
		cursor = n.Pieces.Scan(cursor, 1024, func(k []byte, meta store.Meta) bool {
			ref, kind, ok := core.ParsePieceKey(k)
			if !ok || kind == core.PieceKindDirectory {
				return true
			}
			name := strconv.Itoa(int(ref.Scheme))
			if e, ok := m.SchemeByID(ref.Scheme); ok {
				name = e.Name()
			}
			out = append(out, resp.Array(resp.BulkString(string(ref.Key)), resp.BulkString(name),
				resp.Int(int64(meta.Version)), resp.BulkString(kinds[kind]), resp.Int(int64(meta.Flags))))
			return true
		})
		if cursor == 0 {
			return resp.Array(out...)
		}
	}
}

func faultReply(err error) resp.Reply {
	if err != nil {
		return resp.Errorf("ERR %v", err)
	}
	return resp.OK()
}

// flipCopies corrupts every non-empty copy of key on this node — its
// primary record, its pieces, and its objects in packed schemes' chunks,
// copies and batch pieces (stripe.Engine.FlipKey) — keeping its recorded
// checksums, and returns how many it changed.
func (n *Server) flipCopies(key []byte) int {
	flipped := 0
	flip := func(st *store.Store, k []byte) {
		val, meta, ok := st.Get(k, nil)
		if !ok || len(val) == 0 {
			return
		}
		val[len(val)-1] ^= 0xFF
		// Only over the copy read: a write that replaced it meanwhile is
		// not turned back into the old, flipped one.
		same := func(prev store.Meta, existed bool) bool { return existed && prev == meta }
		if ok, _, _, err := st.ExchangeIf(k, val, meta, same); ok && err == nil {
			flipped++
		}
	}
	flip(n.Primary, key)
	flipped += n.stripes.FlipKey(key)
	var cursor uint64
	for {
		var match [][]byte
		cursor = n.Pieces.Scan(cursor, 1024, func(k []byte, _ store.Meta) bool {
			if ref, _, ok := core.ParsePieceKey(k); ok && string(ref.Key) == string(key) {
				match = append(match, append([]byte(nil), k...))
			}
			return true
		})
		for _, k := range match {
			flip(n.Pieces, k)
		}
		if cursor == 0 {
			return flipped
		}
	}
}

func init() {
	register("debug", &command{run: cmdDebug})
}
