package server

import (
	"context"
	"strconv"
	"strings"

	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
)

// A cluster-wide SCAN cursor packs the index of the coordinator being
// scanned (in shard order) into its low bits and that node's own store
// cursor above them. Like Redis, a full iteration returns every key present
// throughout it at least once, and a cursor from an older map may revisit or
// skip a node that joined or left in between.
const scanNodeBits = 10

// maxScanCount caps SCAN's COUNT hint: one step visits at most this many
// records, which also keeps the peer message's 32-bit field honest.
const maxScanCount = 1 << 20

func cmdScan(n *Node, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	a, bad := resp.ParseScan(args)
	if bad.IsError() {
		return bad
	}
	nodes := coordinators(n.ctl.Map())
	idx := int(a.Cursor & (1<<scanNodeBits - 1))
	local := a.Cursor >> scanNodeBits
	if idx >= len(nodes) {
		return scanReply(0, nil)
	}
	req := scanReq{Cursor: local, Count: min(a.Count, maxScanCount), Match: a.Match, Type: a.Type}
	var res scanResp
	if nodes[idx].ID == n.id {
		if err := n.restoreAll(ctx); err != nil {
			return errReply(err)
		}
		res = n.scanLocal(req)
	} else {
		out, err := n.call(ctx, nodes[idx], msgScan, req.encode(nil))
		if err == nil {
			res, err = decodeScanResp(out)
		}
		if err != nil {
			return errReply(err)
		}
	}
	next := res.Next<<scanNodeBits | uint64(idx)
	if res.Next == 0 {
		next = uint64(idx + 1)
		if idx+1 >= len(nodes) {
			next = 0
		}
	}
	return scanReply(next, res.Keys)
}

func scanReply(next uint64, keys [][]byte) resp.Reply {
	items := make([]resp.Reply, len(keys))
	for i, k := range keys {
		items[i] = resp.Bulk(k)
	}
	return resp.Array(resp.BulkString(strconv.FormatUint(next, 10)), resp.Array(items...))
}

// scanLocal is one SCAN step over the keys this node coordinates.
func (n *Node) scanLocal(req scanReq) scanResp {
	count := req.Count
	if count <= 0 {
		count = 10
	}
	now := nowMs()
	var out scanResp
	typeOK := req.Type == "" || strings.EqualFold(req.Type, "string")
	visit := func(key []byte, expireAt int64) {
		if typeOK && (expireAt == 0 || expireAt > now) && (len(req.Match) == 0 || resp.GlobMatch(req.Match, key, false)) {
			out.Keys = append(out.Keys, append([]byte(nil), key...))
		}
	}
	if req.Cursor&stripeScanFlag == 0 {
		out.Next = n.primary.Scan(req.Cursor, count, func(key []byte, m store.Meta) bool {
			visit(key, m.ExpireAt)
			return true
		})
		if out.Next != 0 || !n.stripes.any.Load() {
			return out
		}
		req.Cursor = stripeScanFlag // on to the stripe schemes' keys
	}
	out.Next = n.scanStripes(req.Cursor, count, visit)
	return out
}

// stripeScanFlag marks a node-local SCAN cursor that has passed the
// primary store and walks the stripe schemes: flag | scheme index << 32 |
// chunk number. The primary store's cursors stay below it.
const stripeScanFlag = 1 << 52

// scanStripes is one SCAN step over the stripe schemes' keys from cursor.
func (n *Node) scanStripes(cursor uint64, count int, visit func(key []byte, expireAt int64)) uint64 {
	schemes := n.stripes.all()
	for i := int(cursor>>32) & 0xFFFFF; i < len(schemes); i++ {
		s := schemes[i]
		s.mu.Lock()
		next, done := s.data.Scan(uint32(cursor), count, func(o stripe.Object) { visit(o.Key, o.ExpireAt) })
		s.mu.Unlock()
		if !done {
			return stripeScanFlag | uint64(i)<<32 | uint64(next)
		}
		cursor = 0
	}
	return 0
}
