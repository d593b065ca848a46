package server

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
	"github.com/memgest/memgest/wire"
)

// This file is corruption handling (issue 4, "Corruption"). Every stored
// value and piece carries a CRC32C. A copy whose CRC does not match is
// treated as lost and repaired from the key's redundancy:
//
//   - on read: a rep key's corrupt primary record is replaced by a replica
//     that passes its check; a split read decodes around a corrupt shard
//     (as around a missing one) and then has the key's pieces stored again;
//   - by the scrub: each node walks its primary records and pieces at
//     --scrub-rate bytes per second; a corrupt primary record is repaired as
//     on read, a corrupt piece is dropped and its key's coordinator asked
//     (peer message Repair) to store the key's pieces again.
//
// A `none` key has no redundancy: its corrupt record answers an error that
// says so, and is never served.
//
// DEBUG FLIP (allowed with --enable-debug-command) flips a byte of every
// copy of a key this node stores, so tests and drills can corrupt data.

// integrity counts what checksums found and what was repaired, for INFO and
// /metrics.
type integrity struct {
	corrupt  atomic.Int64 // corrupt copies found, by reads and the scrub
	repaired atomic.Int64 // keys whose redundancy was stored again
	scrubbed atomic.Int64 // bytes the scrub has checked
	swept    atomic.Int64 // garbage pieces the sweep dropped (repair_sweep.go)
}

// repairRecord replaces key's corrupt primary record, if it is still at
// meta's version, with stored: a copy that passes its check (a scheme's
// Read found it; kind.Env).
func (n *Node) repairRecord(key []byte, meta store.Meta, stored []byte) error {
	s := n.inflight.shard(key)
	s.mu.Lock()
	var err error
	if cur, ok := n.primary.Meta(key); ok && cur.Version == meta.Version {
		err = n.primary.Put(key, stored, meta)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	n.health.repaired.Add(1)
	n.log.Warn("corrupt record repaired from a replica", "key", string(key))
	return nil
}

// repairLater stores key's pieces again in the background, after a read
// found some of them corrupt.
func (n *Node) repairLater(key []byte) {
	key = append([]byte(nil), key...)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.PeerTimeout)
		defer cancel()
		if err := n.repairKey(ctx, key); err != nil {
			n.log.Warn("repairing a key", "key", string(key), "err", err)
		}
	}()
}

// repairKey stores every piece of key again from its committed value (a
// read-modify-write that writes nothing, as rebuild does).
func (n *Node) repairKey(ctx context.Context, key []byte) error {
	all := func([]byte, kind.Target, uint64) bool { return true }
	if _, err := n.rebuildKey(ctx, key, all); err != nil {
		return err
	}
	n.health.repaired.Add(1)
	return nil
}

// onRepair is a coordinator's side of a holder's report that a piece of a
// key failed its checksum.
func (n *Node) onRepair(b []byte) ([]byte, error) {
	d := wire.NewDec(b)
	key := d.Bytes()
	if err := d.Done(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.PeerTimeout)
	defer cancel()
	return nil, n.repairKey(ctx, key)
}

// isCorruptReply says whether a peer answered that a piece failed its
// checksum.
func isCorruptReply(err error) bool {
	var re *transport.RemoteError
	return errors.As(err, &re) && strings.HasPrefix(re.Msg, kind.ErrPieceCorrupt.Error())
}

// scrubPage is how many records one scrub step checks.
const scrubPage = 256

// scrubRecordCost is what the scrub counts against --scrub-rate for each
// record beyond its key and value bytes: the lookup and copy cost about as
// much as reading that many bytes more.
const scrubRecordCost = 256

// scrubLoop checks the CRC32C of everything this node stores, over and
// over, at cfg.ScrubRate bytes per second.
func (n *Node) scrubLoop(ctx context.Context) {
	if n.cfg.ScrubRate <= 0 {
		return
	}
	for ctx.Err() == nil {
		n.scrubStore(ctx, n.primary, n.scrubPrimary)
		n.scrubStore(ctx, n.pieces, n.scrubPiece)
		// A pass over a small store is instant: rest between passes so
		// that an idle node does not spin.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// scrubStore runs check on every record of st, paced.
func (n *Node) scrubStore(ctx context.Context, st *store.Store, check func(context.Context, []byte, []byte, store.Meta)) {
	start, total := time.Now(), int64(0)
	var cursor uint64
	for {
		var keys [][]byte
		cursor = st.Scan(cursor, scrubPage, func(k []byte, _ store.Meta) bool {
			keys = append(keys, append([]byte(nil), k...))
			return true
		})
		for _, k := range keys {
			if val, meta, ok := st.View(k); ok { // checked, never modified
				// Pace on the record, not just its value: a store of small
				// values is scrubbed at a bounded number of records too.
				cost := int64(len(k) + len(val) + scrubRecordCost)
				total += cost
				n.health.scrubbed.Add(int64(len(val)))
				check(ctx, k, val, meta)
			}
		}
		n.pause(ctx, start, total, n.cfg.ScrubRate)
		if cursor == 0 || ctx.Err() != nil {
			return
		}
	}
}

// scrubPrimary checks one primary record that keeps its value (none,
// rep: kind.Scheme.ReadsLocally) against its CRC32C; a corrupt one is
// read through its scheme, which repairs it where it keeps another copy.
func (n *Node) scrubPrimary(ctx context.Context, key, val []byte, meta store.Meta) {
	sch, ok := n.schemes(n.ctl.Map()).lookup(meta.Scheme)
	if !ok || !sch.Traits().ReadsLocally || isStub(meta) || bigcopy.Checksum(val) == meta.Aux {
		return
	}
	if _, err := sch.Read(ctx, key, meta, val); err != nil {
		n.log.Warn("scrub: corrupt record", "key", string(key), "err", err)
	}
}

// scrubPiece checks one piece; a corrupt one is dropped and its key's
// coordinator asked to store the key's pieces again.
func (n *Node) scrubPiece(ctx context.Context, k, val []byte, meta store.Meta) {
	ref, kind, ok := parsePieceKey(k)
	if !ok || kind == pieceKindDirectory || bigcopy.Checksum(val) == meta.Aux {
		return
	}
	n.health.corrupt.Add(1)
	n.pieces.DeleteIf(k, func(m store.Meta) bool { return m.Version == meta.Version })
	m := n.ctl.Map()
	coord, ok := m.Coordinator(keyslot.Of(ref.Key))
	if !ok {
		return
	}
	var err error
	if coord.ID == n.id {
		err = n.repairKey(ctx, ref.Key)
	} else {
		_, err = n.call(ctx, coord, peer.MsgRepair, wire.Enc(nil).Bytes(ref.Key))
	}
	n.log.Warn("scrub: corrupt piece dropped, repair asked", "key", string(ref.Key), "coordinator", coord.ID, "err", err)
}

// pause sleeps as long as handling done bytes since start has outrun rate
// bytes per second (0: no bound).
func (n *Node) pause(ctx context.Context, start time.Time, done, rate int64) {
	if rate <= 0 {
		return
	}
	due := time.Duration(float64(done) / float64(rate) * float64(time.Second))
	if ahead := due - time.Since(start); ahead > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(ahead):
		}
	}
}

// cmdDebug is DEBUG, refused unless --enable-debug-command is set. DEBUG
// FLIP key flips the last byte of every copy of key this node stores (its
// primary record and its pieces) and answers how many it changed. DEBUG
// FAILPOINT and DEBUG LINK inject faults in binaries built with the
// failpoints tag (internal/faults); others refuse them.
func cmdDebug(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if !n.cfg.EnableDebugCommand {
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
func (n *Node) listOwnPieces() resp.Reply {
	m := n.ctl.Map()
	kinds := [...]string{pieceKindReplica: "replica", pieceKindShard: "shard", pieceKindDirectory: "directory"}
	var out []resp.Reply
	var cursor uint64
	for {
		cursor = n.pieces.Scan(cursor, 1024, func(k []byte, meta store.Meta) bool {
			ref, kind, ok := parsePieceKey(k)
			if !ok || kind == pieceKindDirectory {
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

// flipCopies corrupts every non-empty copy of key on this node, keeping its
// recorded checksum, and returns how many it changed.
func (n *Node) flipCopies(key []byte) int {
	flipped := 0
	flip := func(st *store.Store, k []byte) {
		val, meta, ok := st.Get(k, nil)
		if !ok || len(val) == 0 {
			return
		}
		val[len(val)-1] ^= 0xFF
		if st.Put(k, val, meta) == nil {
			flipped++
		}
	}
	flip(n.primary, key)
	var cursor uint64
	for {
		var match [][]byte
		cursor = n.pieces.Scan(cursor, 1024, func(k []byte, _ store.Meta) bool {
			if ref, _, ok := parsePieceKey(k); ok && string(ref.Key) == string(key) {
				match = append(match, append([]byte(nil), k...))
			}
			return true
		})
		for _, k := range match {
			flip(n.pieces, k)
		}
		if cursor == 0 {
			return flipped
		}
	}
}

func init() {
	register("debug", &command{run: cmdDebug})
}
