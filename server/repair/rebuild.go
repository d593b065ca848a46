package repair

import (
	"context"
	"errors"
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/wire"
)

// This file is rebuild (DESIGN.md §4, issue 4): after a failure the map
// lists, per shard, the placement positions whose pieces went with the
// failed node (Shard.Rebuild). Once the shard is recovered, its coordinator
// restores the redundancy of every key it coordinates there: it lists what
// the live holders have (planShard), then re-creates what they lack, paced
// by --rebuild-rate and --rebuild-share: rep replicas copied in bulk frames
// (rebuildCopies), split keys decoded in bulk batches (rebuildDecodes,
// rebuild_decode.go), the rest one read-modify-write per key (rebuildKey),
// and the stripe engine's lists and batch stripes (stripe.RebuildTask). A
// node does the work of all the shards it coordinates as one round, lowest
// redundancy level first (rebuild_order.go, rebuild_round.go). Because the
// listing comes first, a rebuild that starts again (after an error, a new
// failure, or on the node that took the shard over when the rebuilding
// coordinator failed) skips the keys already done. When a shard is done
// the coordinator proposes RebuildDone.

// recoveryUnderway says whether some shard of m is recovering on a live
// coordinator, or has stripe keys still to restore (their chunks must
// stay in parity until then). A shard with no live node left stays
// recovering until one comes back, and holds no rebuild up.
func recoveryUnderway(m *cluster.Map) bool {
	if m.RecoveringShards() == 0 && m.StripesPendingShards() == 0 {
		return false
	}
	for _, sh := range m.Shards {
		if _, ok := m.CoordinatorOf(&sh); ok && (sh.Recovering || sh.StripesPending) {
			return true
		}
	}
	return false
}

// rebuildWorkers is how many keys rebuilt one by one a node works on at
// once; their pieces share frames through the group commit.
const rebuildWorkers = 16

// planShard plans the rebuild of sh: its stripe tasks, and for every key
// of sh this node coordinates, the pieces its holders lack. It first
// lists what the live nodes hold (as recovery does), so a rebuild that
// starts again, here or on the node that took the shard over after this
// one failed, resumes: keys whose pieces are all in place are skipped.
func (n *Repairer) planShard(ctx context.Context, m *cluster.Map, sh cluster.Shard) (shardWork, error) {
	tasks, err := n.stripes.RebuildTasks(ctx, m, sh)
	if err != nil {
		return shardWork{}, err
	}
	w := shardWork{shard: sh, tasks: tasks}
	if !piecesMayBeMissing(m, &sh) {
		// The lost positions are past every scheme's width: no key lost a
		// piece there, but its directory nodes may have changed.
		n.resendDirectory(uint16(sh.ID), n.keysInSlots(sh.First, sh.Last))
		return w, nil
	}
	have := &held{pieces: map[string][]heldPiece{}, listed: receivers(m, &sh)}
	err = n.listShard(ctx, m, sh, have.listed, func(node cluster.Node, e pieceEntry) {
		index := e.Index
		if e.Kind == core.PieceKindDirectory {
			index = dirIndex
		}
		key := string(e.Key)
		have.pieces[key] = append(have.pieces[key], heldPiece{node: node.ID, index: index, version: e.Version})
	})
	if err != nil {
		return shardWork{}, err
	}
	w.items = n.rebuildPlan(m, sh, n.keysInSlots(sh.First, sh.Last), have)
	return w, nil
}

// piecesMayBeMissing says whether some key of sh may lack a piece: a
// position listed for rebuild, or one a survivor stands in for (cheap
// insurance: a stand-in that changes is listed too), lies within the widest scheme of
// the catalogue. Listing the holders costs a scan of their stores, so
// shards that cannot need it skip it.
func piecesMayBeMissing(m *cluster.Map, sh *cluster.Shard) bool {
	width := widestScheme(m, sh)
	for _, p := range sh.Rebuild {
		if p < width {
			return true
		}
	}
	for p := range width {
		if m.StoodIn(sh, p) {
			return true
		}
	}
	return false
}

// widestScheme is how many positions of sh's placement the widest scheme
// of the catalogue occupies.
func widestScheme(m *cluster.Map, sh *cluster.Shard) int {
	width := 0
	for _, e := range m.Schemes {
		width = max(width, e.Spec.Nodes())
	}
	return min(width, len(sh.Placement))
}

// receivers are the nodes of sh that may lack pieces or directory entries
// after a failure: the nodes now at positions listed for rebuild, the
// survivors standing in for failed positions of any scheme width, and the
// shard's directory nodes.
func receivers(m *cluster.Map, sh *cluster.Shard) map[cluster.NodeID]bool {
	out := map[cluster.NodeID]bool{}
	for _, p := range sh.Rebuild {
		if node, ok := m.Node(sh.Placement[p]); ok && node.State == cluster.Up {
			out[node.ID] = true
		}
	}
	for _, e := range m.Schemes {
		for p, node := range m.Holders(sh, e.Spec.Nodes()) {
			if m.StoodIn(sh, p) && node.State == cluster.Up {
				out[node.ID] = true // stand-ins differ by width
			}
		}
	}
	for _, node := range core.DirectoryNodes(m, sh) {
		out[node.ID] = true
	}
	return out
}

// resendDirectory sends the directory entries of shard's keys again.
func (n *Repairer) resendDirectory(shard uint16, keys [][]byte) {
	for _, key := range keys {
		if meta, ok := n.Primary.Meta(key); ok {
			n.EnqueueDirectory(core.EntryOf(key, shard, meta))
		}
	}
}

// dirIndex stands for a directory entry among a key's held pieces.
const dirIndex = 0xFF

// heldPiece is one piece (or directory entry) a live node holds, as listed
// for a rebuild.
type heldPiece struct {
	node    cluster.NodeID
	index   uint8
	version uint64
}

// held is what the nodes that may lack pieces of a shard (listed) hold of
// its keys. A node that is not listed kept its position through the
// failure, so it holds what it held.
type held struct {
	pieces map[string][]heldPiece
	listed map[cluster.NodeID]bool
}

// lacks says whether target t should receive key's piece at version v: it
// is listed and holds no piece of that index and version.
func (h held) lacks(key []byte, t kind.Target, v uint64) bool {
	if !h.listed[t.Node.ID] {
		return false
	}
	for _, p := range h.pieces[string(key)] {
		if p.node == t.Node.ID && p.index == uint8(t.Index) && p.version == v {
			return false
		}
	}
	return true
}

// rebuildItem is one key to rebuild and how many more failures it
// survives as it stands.
type rebuildItem struct {
	key       []byte
	remaining int
	bulk      kind.Rebuild // how: copied or decoded in bulk, or key by key
	bytes     int64        // what the plan expects its rebuild to send
	shard     int
	have      *held // what the holders of its shard hold
}

// level is the item's redundancy level: the failures its key survives
// until it is rebuilt, a key already beyond tolerance counting as 0.
func (it rebuildItem) level() int { return max(it.remaining, 0) }

// hasEntry says whether node holds a directory entry of key.
func (h held) hasEntry(key []byte, node cluster.NodeID) bool {
	if !h.listed[node] {
		return false // a node that was not a directory node before
	}
	for _, p := range h.pieces[string(key)] {
		if p.node == node && p.index == dirIndex {
			return true
		}
	}
	return false
}

// rebuildPlan lists the keys of sh missing pieces, with the redundancy
// they have left and the bytes their rebuild will send. On the way it
// sends a key's directory entry again where one of the shard's directory
// nodes (which a failure may have changed) lacks it.
func (n *Repairer) rebuildPlan(m *cluster.Map, sh cluster.Shard, keys [][]byte, have *held) []rebuildItem {
	var plan []rebuildItem
	t := n.Schemes(m)
	dirNodes := core.DirectoryNodes(m, &sh)
	for _, key := range keys {
		meta, ok := n.Primary.Meta(key)
		sch, known := t.Lookup(meta.Scheme)
		if !ok || !known {
			continue
		}
		for _, d := range dirNodes {
			if !have.hasEntry(key, d.ID) {
				n.EnqueueDirectory(core.EntryOf(key, kind.ShardID(m, key), meta))
				break
			}
		}
		if it, ok := n.planKey(m, key, meta, sch, have); ok {
			it.shard = sh.ID
			plan = append(plan, it)
		}
	}
	return plan
}

// planKey is key's rebuild, if it lacks a piece: the pieces its holders
// lack at the committed version, and for a record that is a stub of a
// scheme whose record is a copy (the shard's coordinator failed and this
// one recovered it metadata first) its filling, a lost copy unless this
// node holds the key's replica.
func (n *Repairer) planKey(m *cluster.Map, key []byte, meta store.Meta, sch kind.Scheme, have *held) (rebuildItem, bool) {
	targets, err := sch.Targets(m, key)
	if err != nil {
		return rebuildItem{}, false
	}
	missing := 0
	for _, t := range targets {
		if t.Node.State == cluster.Failed || have.lacks(key, t, meta.Version) {
			missing++
		}
	}
	stub := core.IsStub(meta) && sch.Traits().ReadsLocally
	if stub {
		if _, replica := n.localReplica(m, key, meta); !replica {
			missing++ // the coordinator's own copy, lost with the failed one
		}
	}
	if missing == 0 && !stub {
		return rebuildItem{}, false
	}
	return rebuildItem{key: key, remaining: sch.Entry().Spec.Tolerance() - missing, bulk: sch.Traits().Rebuild,
		bytes: n.pieceBytes(m, key, meta, sch) * int64(missing), have: have}, true
}

// pieceBytes is what one of key's pieces sends: the value for a scheme of
// copies, a Quorum-th of it for one of shards. A stub's value is its
// replica here, if this node holds one (else unknown, 0).
func (n *Repairer) pieceBytes(m *cluster.Map, key []byte, meta store.Meta, sch kind.Scheme) int64 {
	size, _ := n.Primary.ValueLen(key)
	if core.IsStub(meta) {
		size, _ = n.localReplica(m, key, meta)
	}
	size += int(sch.Detached(meta))
	if tr := sch.Traits(); tr.Pieces == kind.Shards && tr.Quorum > 0 {
		size = (size + tr.Quorum - 1) / tr.Quorum
	}
	return int64(size)
}

// localReplica is the length of the replica of key at meta's version this
// node holds as a piece, if it holds one: a node that took a failed
// coordinator's shard over was usually its next replica holder.
func (n *Repairer) localReplica(m *cluster.Map, key []byte, meta store.Meta) (int, bool) {
	sk := core.StoreKey(peer.PieceRef{Key: key, Shard: kind.ShardID(m, key), Scheme: meta.Scheme})
	if pm, ok := n.Pieces.Meta(sk); !ok || pm.Version != meta.Version {
		return 0, false
	}
	return n.Pieces.ValueLen(sk)
}

// copyBatch bounds one bulk batch of rep keys; copyWorkers batches are sent
// at once.
const (
	copyBatchKeys  = 512
	copyBatchBytes = 1 << 20
	copyWorkers    = 4
)

// rebuildCopies rebuilds the replicas of a batch of rep keys in bulk: each
// record is read as it is, without waiting for writes, and every replica the
// holders lack goes out in one PutPieces frame per node. That is safe
// because a replica carries its version and a holder keeps the newest it
// was sent: a write racing the batch sends its own, newer replica. What a
// racing deletion or scheme move released before the batch's replica
// arrived would outlive it, so once the batch is stored each key is looked
// at again, and the batch's replica of a key whose record changed is
// released (exactly that version). It returns the bytes sent.
func (n *Repairer) rebuildCopies(ctx context.Context, items []rebuildItem, need core.PieceFilter) (int, error) {
	total := n.fillRepStubs(ctx, n.Ctl.Map(), items, need)
	for len(items) > 0 {
		b, rest, err := n.copyBatch(ctx, items, need)
		total += b
		if err != nil {
			return total, err
		}
		items = rest
	}
	return total, nil
}

// copyBatch sends the replicas of items' keys up to copyBatchBytes, checks
// them again once stored (rebuildCopies), and returns the bytes sent and
// the items left.
func (n *Repairer) copyBatch(ctx context.Context, items []rebuildItem, need core.PieceFilter) (int, []rebuildItem, error) {
	m := n.Ctl.Map()
	t := n.Schemes(m)
	var b core.PieceBatch
	var sent []core.Release
	bytes := 0
	var val []byte // a small value is copied into the batch before the next is read
	for len(items) > 0 && bytes < copyBatchBytes {
		key := items[0].key
		items = items[1:]
		var meta store.Meta
		var ok bool
		var err error
		if len(val) >= wire.SpoolMin {
			val = nil // the batch refers to a large one: never write over it
		}
		val, meta, ok, err = n.CopySource(ctx, t, key, val)
		if err != nil {
			return bytes, items, err // the shard's rebuild is tried again
		}
		if !ok {
			continue // gone, moved, or corrupt (reads and the scrub repair it)
		}
		sch, _ := t.Lookup(meta.Scheme)
		op := &core.WriteOp{Key: key, Value: val, ExpireAt: meta.ExpireAt, Entry: sch.Entry(), CRC32: meta.Aux, CRCKnown: true}
		targets, pieces, err := core.PlanPieces(m, sch, op, meta.Version)
		if err != nil {
			return bytes, items, err
		}
		for i, t := range targets {
			if need(key, t, meta.Version) {
				b.Put(targets[i:i+1], pieces[i:i+1], len(sent))
				bytes += len(val)
			}
		}
		sent = append(sent, core.Release{Key: key, Scheme: meta.Scheme, Version: meta.Version, Exact: true})
	}
	for _, err := range n.SendBatch(ctx, &b, len(sent)) {
		if err != nil {
			return bytes, items, fmt.Errorf("server: rebuilding replicas: %w", err)
		}
	}
	n.releaseChanged(ctx, sent)
	return bytes, items, nil
}

// CopySource reads key's rep record into buf for copyBatch, filling it
// first if it is a stub. It reports false for a key that is gone, no
// longer rep, corrupt, or lost (a stub no replica can fill, or one written
// over meanwhile: that write stored its own copies), and an error for a stub
// it could not fill for now: that copy is lost until it is filled, so the
// shard's rebuild must not end.
func (n *Repairer) CopySource(ctx context.Context, t *core.SchemeTable, key, buf []byte) ([]byte, store.Meta, bool, error) {
	val, meta, ok := n.Primary.Get(key, buf)
	sch, known := t.Lookup(meta.Scheme)
	if !ok || !known || sch.Traits().Rebuild != kind.RebuildCopy {
		return val, meta, false, nil
	}
	if core.IsStub(meta) {
		filled, full, err := n.FillStub(ctx, key, meta)
		var lost *kind.LostError
		if errors.As(err, &lost) || errors.Is(err, core.ErrStubReplaced) {
			return val, meta, false, nil
		}
		if err != nil {
			return val, meta, false, fmt.Errorf("server: rebuilding the record of %q: %w", key, err)
		}
		return filled, full, true, nil // fillStub checked its CRC32C
	}
	return val, meta, bigcopy.Checksum(val) == meta.Aux, nil
}

// releaseChanged releases, after a bulk batch was stored, the pieces it
// sent of keys whose committed record changed meanwhile (a deletion or a
// move may have released that version before the batch's pieces arrived).
func (n *Repairer) releaseChanged(ctx context.Context, sent []core.Release) {
	var stale []core.Release
	for _, r := range sent {
		if cur, ok := n.Primary.Meta(r.Key); !ok || cur.Version != r.Version || cur.Scheme != r.Scheme {
			stale = append(stale, r)
		}
	}
	n.ReleaseAll(ctx, stale, true)
}

// keysInSlots lists the keys of this node's primary store in a slot range.
func (n *Repairer) keysInSlots(first, last int) [][]byte {
	var out [][]byte
	var cursor uint64
	for {
		cursor = n.Primary.Scan(cursor, 1024, func(k []byte, _ store.Meta) bool {
			if s := keyslot.Of(k); s >= first && s <= last {
				out = append(out, append([]byte(nil), k...))
			}
			return true
		})
		if cursor == 0 {
			return out
		}
	}
}
