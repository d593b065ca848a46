package commands

import (
	"context"
	"strconv"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/store"
)

// SCAN answers for the node it is sent to: the keys of the slots it
// coordinates, with a node-local cursor (scanLocal), as a Redis Cluster
// master does. SCAN ... CLUSTER walks every coordinator (decision 0004).
//
// A cluster-wide cursor has clusterCursorFlag set, packs the index of the
// coordinator being scanned (in shard order) into its low scanNodeBits and
// that node's own cursor above them. Node-local cursors stay below 1<<53
// (stripeScanFlag), so the flag is free and each kind of cursor is refused
// by the other form. Like Redis, a full iteration returns every key present
// throughout it at least once, and a cursor from an older map may revisit
// or skip a node that joined or left in between.
const (
	scanNodeBits      = 10
	clusterCursorFlag = 1 << 63
)

// maxScanCount caps SCAN's COUNT hint: one step visits at most this many
// records, which also keeps the peer message's 32-bit field honest.
const maxScanCount = 1 << 20

var (
	errClusterCursor = resp.Err("ERR invalid cursor: it comes from SCAN ... CLUSTER; repeat the CLUSTER option to go on")
	errNodeCursor    = resp.Err("ERR invalid cursor: SCAN ... CLUSTER takes 0 or a cursor it returned")
)

func cmdScan(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	a, bad := resp.ParseScan(args)
	if bad.IsError() {
		return bad
	}
	req := scanReq{Count: min(a.Count, maxScanCount), Match: a.Match, Type: a.Type}
	if a.Cluster {
		return n.scanCluster(ctx, a.Cursor, req)
	}
	if a.Cursor&clusterCursorFlag != 0 {
		return errClusterCursor
	}
	if r, refused := n.refuseKeyspace(ctx); refused {
		return r
	}
	req.Cursor = a.Cursor
	res := n.scanLocal(ctx, req)
	return scanReply(res.Next, res.Keys)
}

// scanCluster is one step of SCAN ... CLUSTER: a step of the coordinator
// the cursor names, here or through peer.MsgScan.
func (n *Server) scanCluster(ctx context.Context, cursor uint64, req scanReq) resp.Reply {
	if cursor != 0 && cursor&clusterCursorFlag == 0 {
		return errNodeCursor
	}
	cursor &^= clusterCursorFlag
	nodes := coordinators(n.Ctl.Map())
	idx := int(cursor & (1<<scanNodeBits - 1))
	req.Cursor = cursor >> scanNodeBits
	if idx >= len(nodes) {
		return scanReply(0, nil)
	}
	var res scanResp
	if nodes[idx].ID == n.NodeID {
		if err := n.stripes.RestoreAll(ctx); err != nil {
			return errReply(err)
		}
		res = n.scanLocal(ctx, req)
	} else {
		out, err := n.Call(ctx, nodes[idx], peer.MsgScan, req.encode(nil))
		if err == nil {
			res, err = decodeScanResp(out)
		}
		if err != nil {
			return errReply(err)
		}
	}
	next := clusterCursorFlag | res.Next<<scanNodeBits | uint64(idx)
	if res.Next == 0 {
		next = clusterCursorFlag | uint64(idx+1)
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

// scanLocal is one SCAN step over the keys this node coordinates: its
// primary store, then its stripe schemes' objects. Only keys of the slots
// its map says it coordinates are listed, so the nodes' answers stay
// disjoint while a takeover is applied.
func (n *Server) scanLocal(ctx context.Context, req scanReq) scanResp {
	count := req.Count
	if count <= 0 {
		count = 10
	}
	now := core.NowMs()
	m := n.Ctl.Map()
	var out scanResp
	visit := func(key []byte, expireAt int64) {
		if (expireAt == 0 || expireAt > now) && (len(req.Match) == 0 || resp.GlobMatch(req.Match, key, false)) &&
			n.coordinates(m, key) {
			out.Keys = append(out.Keys, append([]byte(nil), key...))
		}
	}
	out.Next = n.walkKeys(req.Cursor, count, visit)
	if req.Type != "" {
		out.Keys = n.keysOfType(ctx, out.Keys, req.Type)
	}
	return out
}

// keysOfType keeps the keys whose value is of type name (SCAN's TYPE,
// compared as Redis does, ignoring case; an unknown name keeps none).
// A key's type is in its value, so each is read: a split key's shards are
// gathered. A key deleted since the walk, or unreadable, is left out.
func (n *Server) keysOfType(ctx context.Context, keys [][]byte, name string) [][]byte {
	kept := keys[:0]
	for _, k := range keys {
		cur, err := n.Get(ctx, k)
		if err == nil && cur.Exists && strings.EqualFold(typeOf(cur).String(), name) {
			kept = append(kept, k)
		}
	}
	return kept
}

// walkKeys visits up to about count of the keys this node holds as
// coordinator from cursor on, the primary store's first and then the
// stripe schemes', expired ones included, and returns the next cursor (0
// when done). visit must not call back into the stores.
func (n *Server) walkKeys(cursor uint64, count int, visit func(key []byte, expireAt int64)) uint64 {
	if cursor&stripeScanFlag == 0 {
		next := n.Primary.Scan(cursor, count, func(key []byte, m store.Meta) bool {
			visit(key, m.ExpireAt)
			return true
		})
		if next != 0 || !n.stripes.InUse() {
			return next
		}
		cursor = stripeScanFlag // on to the stripe schemes' keys
	}
	return n.scanStripes(cursor, count, visit)
}

// coordinates says whether m makes this node the coordinator of key, or
// of the shard importing key's slot (a key moved here answers here).
func (n *Server) coordinates(m *cluster.Map, key []byte) bool {
	slot := keyslot.Of(key)
	if c, ok := m.Coordinator(slot); ok && c.ID == n.NodeID {
		return true
	}
	if imp := m.ImporterOf(slot); imp != nil {
		c, ok := m.CoordinatorOf(imp)
		return ok && c.ID == n.NodeID
	}
	return false
}

// stripeScanFlag marks a node-local SCAN cursor that has passed the
// primary store and walks the stripe schemes: flag | scheme index << 32 |
// chunk number. The primary store's cursors stay below it.
const stripeScanFlag = 1 << 52

// scanStripes is one SCAN step over the stripe schemes' keys from cursor.
func (n *Server) scanStripes(cursor uint64, count int, visit func(key []byte, expireAt int64)) uint64 {
	next, done := n.stripes.Scan(cursor&^stripeScanFlag, count, visit)
	if done {
		return 0
	}
	return stripeScanFlag | next
}
