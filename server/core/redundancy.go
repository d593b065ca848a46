package core

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
	"github.com/memgest/memgest/wire"
)

// Release names pieces that are no longer needed: replicas up to a version
// (or of exactly one version, for a write that did not commit: its Release
// must not touch the committed replicas), or the shards of one split
// version.
type Release struct {
	Key     []byte
	Shard   uint16 // the shard whose pieces these are (kind.Piece)
	Scheme  uint16
	Version uint64
	Exact   bool
	// everywhere sends the release to every up node of the key's shard
	// placement, not only its current holders: a deletion must also reach
	// copies left on a node that stood in for a failed one, or recovery
	// could bring them back once the tombstone is purged.
	everywhere bool
}

// LivePieces drops the targets (and their pieces) on failed nodes, which no
// survivor could stand in for: the write goes ahead with reduced tolerance,
// as long as sch's quorum of pieces is stored.
func LivePieces(sch kind.Scheme, targets []kind.Target, pieces []kind.Piece) ([]kind.Target, []kind.Piece, error) {
	keep := 0
	for i, t := range targets {
		if t.Node.State == cluster.Failed {
			continue
		}
		targets[keep], pieces[keep] = t, pieces[i]
		keep++
	}
	if q := sch.Traits().Quorum; keep < q {
		return nil, nil, fmt.Errorf("server: scheme %s cannot be placed: %d of its %d nodes are up, it needs %d",
			sch.Entry().Spec, keep, len(targets), q)
	}
	return targets[:keep], pieces[:keep], nil
}

// sendRedundancy stores op's pieces at version v on their nodes and waits
// for every acknowledgement. It returns what was sent, for release on error.
// Writes that arrive together from different connections share frames
// (commitGroups).
func (n *Coordinator) sendRedundancy(ctx context.Context, op *WriteOp, v uint64) ([]Release, error) {
	sch := op.scheme(n)
	if op.Del || sch.Traits().Immediate {
		return nil, nil
	}
	if p, ok := sch.(kind.Packed); ok {
		return nil, n.sendPacked(ctx, p, op, v)
	}
	targets, pieces, err := PlanPieces(n.Ctl.Map(), sch, op, v)
	if err != nil {
		return nil, err
	}
	n.Metrics.SentRedundancy(op.Entry, piecesBytes(pieces))
	sent := n.ownPieces(op, v)
	if faults.Active(faults.BugEarlyAck) {
		n.sendLate(targets, pieces)
		return sent, nil
	}
	if err := n.groups.send(ctx, n, targets, pieces); err != nil {
		return sent, notAcknowledged(op.Key, err)
	}
	return sent, nil
}

// earlyAckDelay is how late BugEarlyAck sends redundancy.
const earlyAckDelay = 200 * time.Millisecond

// sendLate is the injected bug faults.BugEarlyAck (test builds only): the
// pieces go out after earlyAckDelay, while the write commits and is
// acknowledged at once. Nothing else calls it.
func (n *Coordinator) sendLate(targets []kind.Target, pieces []kind.Piece) {
	go func() {
		time.Sleep(earlyAckDelay)
		_ = n.groups.send(context.Background(), n, targets, pieces)
	}()
}

// ownPieces names the pieces a write of op at version v stores, for their
// release if it does not commit.
func (n *Coordinator) ownPieces(op *WriteOp, v uint64) []Release {
	return []Release{{Key: op.Key, Shard: kind.ShardID(n.Ctl.Map(), op.Key), Scheme: op.Entry.ID, Version: v, Exact: true}}
}

// commitGroups is group commit for redundancy: the first write to arrive
// opens a group and yields the processor once, so that writes from other
// connections that are ready to run join it; then it sends the group's
// pieces, one PutPieces frame per node, and hands every member its result.
// A member is one write (send) or a pipeline's writes (join). Under load
// this divides the frames, wake-ups and replies of replicated writes by the
// group size; an idle node pays one Gosched.
type commitGroups struct {
	mu   sync.Mutex
	open *commitGroup
	// yield is how a group's leader lets other writes join before it
	// sends: runtime.Gosched when nil (tests wait for their members).
	yield func()
	// sendFn sends a group's batch in tests; nil is Node.sendBatch.
	sendFn func(b *PieceBatch, owners int) []error
}

type commitGroup struct {
	batch  PieceBatch
	owners int // writes in the group; each member's take the next range of numbers
	errs   []error
	done   chan struct{}
}

// send stores pieces (for targets) as part of a group and returns this
// write's error. A large value's pieces go alone: writes that joined its
// group would wait until all of it was sent.
func (gs *commitGroups) send(ctx context.Context, n *Coordinator, targets []kind.Target, pieces []kind.Piece) error {
	fill := func(b *PieceBatch, base int) { b.Put(targets, pieces, base) }
	if piecesBytes(pieces) > transport.PartSize {
		var b PieceBatch
		fill(&b, 0)
		return n.SendBatch(ctx, &b, 1)[0]
	}
	return gs.join(ctx, n, 1, fill)[0]
}

// join adds owners writes to the open group, opening one if there is none:
// fill queues their pieces in the group's batch, numbering the writes from
// base. The group's leader sends the batch through n. join returns the
// writes' errors, in their order.
func (gs *commitGroups) join(ctx context.Context, n *Coordinator, owners int, fill func(b *PieceBatch, base int)) []error {
	gs.mu.Lock()
	g, lead := gs.open, gs.open == nil
	if lead {
		g = &commitGroup{done: make(chan struct{})}
		gs.open = g
	}
	base := g.owners
	fill(&g.batch, base)
	g.owners += owners
	gs.mu.Unlock()
	if !lead {
		<-g.done // the leader finishes within the peer timeout
		return g.errs[base : base+owners]
	}
	if gs.yield != nil {
		gs.yield()
	} else {
		runtime.Gosched()
	}
	gs.mu.Lock()
	gs.open = nil
	gs.mu.Unlock()
	if gs.sendFn != nil {
		g.errs = gs.sendFn(&g.batch, g.owners)
	} else {
		g.errs = n.SendBatch(ctx, &g.batch, g.owners)
	}
	close(g.done)
	return g.errs[base : base+owners]
}

// PieceBatch gathers the redundancy pieces of one or more writes by node, so
// that each node receives all of them in one PutPieces frame and
// acknowledges them in one reply: a pipeline of R-way SETs costs R−1 frames
// each way, not R−1 per command.
type PieceBatch struct {
	dests []*pieceDest
	// sizeHint is the payload capacity a node's frame starts with, when
	// the batch knows roughly what it will hold (0: a small default).
	sizeHint int
}

// pieceDest is what one node receives: PutPieces payload (a count, filled
// in by sendBatch, then the pieces; large pieces' data is not copied into
// it) and the write each piece belongs to.
type pieceDest struct {
	node    cluster.Node
	payload wire.Spool
	owners  []int
}

// add queues the pieces of op at version v, on behalf of write owner.
func (b *PieceBatch) add(n *Coordinator, m *cluster.Map, op *WriteOp, v uint64, owner int) error {
	targets, pieces, err := PlanPieces(m, op.scheme(n), op, v)
	if err != nil {
		return err
	}
	n.Metrics.SentRedundancy(op.Entry, piecesBytes(pieces))
	b.Put(targets, pieces, owner)
	return nil
}

// Put queues pieces (one per target) on behalf of write owner.
func (b *PieceBatch) Put(targets []kind.Target, pieces []kind.Piece, owner int) {
	for i, t := range targets {
		d := b.dest(t.Node)
		peer.Piece(pieces[i]).SpoolTo(&d.payload)
		d.owners = append(d.owners, owner)
	}
}

// PlanPieces returns where op's pieces at version v go under sch, and the
// pieces.
func PlanPieces(m *cluster.Map, sch kind.Scheme, op *WriteOp, v uint64) ([]kind.Target, []kind.Piece, error) {
	targets, err := sch.Targets(m, op.Key)
	if err != nil {
		return nil, nil, err
	}
	if len(targets) == 0 {
		return nil, nil, nil // none, or rep:1: the primary record is all
	}
	base := kind.Piece{Key: op.Key, Shard: kind.ShardID(m, op.Key), Scheme: op.Entry.ID, Version: v, ExpireAt: op.ExpireAt}
	pieces, err := sch.Encode(base, op, targets)
	if err != nil {
		return nil, nil, err
	}
	return LivePieces(sch, targets, pieces)
}

// into queues b's pieces in a group's batch g, numbering b's writes from
// base (a commitGroups.join fill): g takes b's buffers when b comes first.
func (b *PieceBatch) into(g *PieceBatch, base int) {
	if base == 0 {
		*g = *b
		return
	}
	g.merge(b, base)
}

// merge queues o's pieces too, its owners numbered from base.
func (b *PieceBatch) merge(o *PieceBatch, base int) {
	for _, od := range o.dests {
		d := b.dest(od.node)
		d.payload.Add(&od.payload, peer.PutPiecesHeader)
		for _, owner := range od.owners {
			d.owners = append(d.owners, base+owner)
		}
	}
}

func (b *PieceBatch) dest(node cluster.Node) *pieceDest {
	for _, d := range b.dests {
		if d.node.ID == node.ID {
			return d
		}
	}
	d := &pieceDest{node: node, payload: wire.Spool{Cur: make(wire.Enc, peer.PutPiecesHeader, max(b.sizeHint, 512))}}
	b.dests = append(b.dests, d)
	return d
}

// request is d's PutPieces request, its count filled in.
func (d *pieceDest) request() PeerReq {
	payload, tail := d.payload.Frame()
	binary.BigEndian.PutUint32(payload, uint32(len(d.owners)))
	return PeerReq{Node: d.node, Typ: peer.MsgPutPieces, Payload: payload, Tail: tail}
}

// SendBatch sends every node its pieces at once, waits for the replies, and
// returns each owner's error (nil when all its pieces were stored).
// A coordinator whose lease lapsed (it was paused mid-write, say) sends
// nothing (callEach): another node may coordinate its keys.
func (n *Coordinator) SendBatch(ctx context.Context, b *PieceBatch, owners int) []error {
	reqs := make([]PeerReq, len(b.dests))
	for i, d := range b.dests {
		reqs[i] = d.request()
	}
	replies, errs := n.CallEach(ctx, reqs)
	out := make([][]error, owners)
	for i, d := range b.dests {
		err := errs[i]
		var refusals []string
		if err == nil {
			if refusals, err = peer.DecodePutPiecesResp(replies[i], len(d.owners)); err != nil {
				err = fmt.Errorf("node %s: %w", d.node.PeerAddr, err)
			}
		}
		for j, owner := range d.owners {
			switch {
			case err != nil:
				out[owner] = append(out[owner], err)
			case refusals[j] != "":
				out[owner] = append(out[owner], fmt.Errorf("node %s: %s", d.node.PeerAddr, refusals[j]))
			}
		}
	}
	joined := make([]error, owners)
	for i, e := range out {
		joined[i] = errors.Join(e...)
	}
	return joined
}

func notAcknowledged(key []byte, err error) error {
	return fmt.Errorf("server: write of %q not acknowledged: %w", key, err)
}

// StorePiece keeps a piece sent by a coordinator (or by this node to
// itself). It stores the piece's CRC32C as sent without computing it again:
// the frame's own CRC covered the piece in transit, the sender computed it
// from the value it committed (or checked it against the record it copies),
// and every read and the scrub check it against the stored bytes. With
// owned, p.Data becomes the store's as it is (a large piece is not copied
// again: store.PutIfNewerOwned), and nothing may change it afterwards.
func (n *Coordinator) StorePiece(p peer.Piece, owned bool) error {
	ref := peer.PieceRef{Key: p.Key, Shard: p.Shard, Scheme: p.Scheme, Version: p.Version, Versioned: p.Versioned}
	meta := store.Meta{Version: p.Version, ExpireAt: p.ExpireAt, Scheme: p.Scheme, Flags: p.Index, Aux: p.CRC}
	k := StoreKey(ref)
	put := n.Pieces.PutIfNewer
	if owned {
		put = n.Pieces.PutIfNewerOwned
	}
	applied, err := put(k, p.Data, meta)
	if err != nil || applied {
		return err
	}
	// Not newer: a repair (repair.go) or a rebuild sends the same
	// version again, which replaces a copy that fails its checksum or
	// holds another shard index.
	old, cur, ok := n.Pieces.View(k)
	if ok && cur.Version == p.Version && (bigcopy.Checksum(old) != cur.Aux || cur.Flags != p.Index) {
		return n.Pieces.Put(k, p.Data, meta)
	}
	return nil
}

// Piece kinds: the byte after the scheme id in a stored piece's key.
const (
	PieceKindReplica   uint8 = 0 // a rep replica, one per key and scheme
	PieceKindShard     uint8 = 1 // a split shard, stored per version
	PieceKindDirectory uint8 = 2 // a key directory entry (directory.go)
)

// MaxPiecePrefix is the most StoreKey puts before a key: scheme, kind, a
// shard id of up to three uvarint bytes, a version.
const MaxPiecePrefix = 2 + 1 + 3 + 8

// StoreKey is where a node keeps a piece: scheme id, the piece kind, the
// shard that keeps the key (uvarint), the version for versioned pieces,
// then the key, so one node can hold pieces of the same key in two schemes
// (during a move), two versions (split) or two shards (the two ends of a
// migration, decision 0016), and a directory entry beside them.
func StoreKey(r peer.PieceRef) []byte {
	kind := PieceKindReplica
	if r.Versioned {
		kind = PieceKindShard
	}
	e := wire.Enc(make([]byte, 0, MaxPiecePrefix+len(r.Key))).U16(r.Scheme).U8(kind)
	e = binary.AppendUvarint(e, uint64(r.Shard))
	if r.Versioned {
		e = e.U64(r.Version)
	}
	return append(e, r.Key...)
}

// LoadPiece returns a stored piece's bytes after checking its checksum. A
// large piece's bytes are the store's own (store.View), which nothing may
// modify: they are sent, decoded or compared, never written.
func (n *Coordinator) LoadPiece(r peer.PieceRef) ([]byte, error) {
	data, meta, ok := n.Pieces.View(StoreKey(r))
	return n.checkPiece(r, data, meta, ok)
}

// checkPiece returns the piece r names, found (ok) as data with meta, if
// it is the version and index r wants and passes its checksum.
func (n *Coordinator) checkPiece(r peer.PieceRef, data []byte, meta store.Meta, ok bool) ([]byte, error) {
	if !ok || (r.Versioned && meta.Version != r.Version) || (r.HasIndex && meta.Flags != r.Index) {
		return nil, kind.ErrPieceGone
	}
	if bigcopy.Checksum(data) != meta.Aux {
		n.Health.Corrupt.Add(1)
		return nil, fmt.Errorf("%w: %q", kind.ErrPieceCorrupt, r.Key)
	}
	return data, nil
}

// dropPieces releases r: the exact version for split, every replica up to
// r.Version otherwise.
func (n *Coordinator) dropPieces(r peer.PieceRef) {
	if r.Versioned {
		n.Pieces.Delete(StoreKey(r))
		return
	}
	n.Pieces.DeleteIf(StoreKey(r), func(m store.Meta) bool {
		if r.Exact {
			return m.Version == r.Version
		}
		return m.Version <= r.Version
	})
}

// superseded says whether key's committed version is no longer v (a newer
// write or a deletion committed): then missing pieces of v were released,
// not lost, and a read starts again. Otherwise they went with a failed node
// (or were never rebuilt on its replacement) and the parity stands in.
func (n *Coordinator) superseded(key []byte, v uint64) bool {
	cur, ok := n.Primary.Meta(key)
	return !ok || cur.Version != v
}

func (n *Coordinator) getPiece(ctx context.Context, node cluster.Node, r peer.PieceRef) ([]byte, error) {
	if node.ID == n.NodeID {
		return n.LoadPiece(r)
	}
	if node.State == cluster.Failed {
		return nil, fmt.Errorf("node %s: %w", node.PeerAddr, kind.ErrNodeFailed)
	}
	resp, err := n.Call(ctx, node, peer.MsgGetPiece, r.Encode(nil))
	var re *transport.RemoteError
	switch {
	case errors.As(err, &re) && re.Msg == kind.ErrPieceGone.Error():
		return nil, kind.ErrPieceGone
	case isCorruptReply(err):
		return nil, fmt.Errorf("node %s: %w", node.PeerAddr, kind.ErrPieceCorrupt)
	}
	return resp, err
}

// ReleaseAll sends each release to the nodes holding its pieces. With wait
// the caller blocks until all are answered and learns whether any failed;
// otherwise it runs in the background and answers nil. A lost release
// leaves garbage (never a wrong read: reads go through the primary record's
// version), which the next recovery of the shard sweeps (sweepStale).
func (n *Coordinator) ReleaseAll(ctx context.Context, rels []Release, wait bool) error {
	if len(rels) == 0 {
		return nil
	}
	run := func(ctx context.Context) error {
		var errs []error
		for _, r := range rels {
			errs = append(errs, n.releaseOne(ctx, r))
		}
		return errors.Join(errs...)
	}
	if wait {
		return run(ctx)
	}
	go run(context.Background())
	return nil
}

// releaseTargets are the nodes r goes to in m: the holders of its key under
// sch, or with everywhere every node of the key's shard placement. A
// release of a shard that no longer keeps the key (a migration moved it
// since: a deletion's release retried) goes to every node of that
// shard's placement, which, its pieces named by the shard, touches no
// other shard's.
func releaseTargets(m *cluster.Map, sch kind.Scheme, r Release) ([]kind.Target, error) {
	if kind.ShardID(m, r.Key) != r.Shard {
		return kind.ShardTargets(m, m.ShardByID(int(r.Shard))), nil
	}
	if r.everywhere {
		return kind.PlacementTargets(m, r.Key), nil
	}
	return sch.Targets(m, r.Key)
}

func (n *Coordinator) releaseOne(ctx context.Context, r Release) error {
	if !n.Leased() {
		return ErrLeaseGone // see sendBatch
	}
	m := n.Ctl.Map()
	entry, ok := m.SchemeByID(r.Scheme)
	if !ok {
		return fmt.Errorf("server: releasing %q: unknown scheme id %d", r.Key, r.Scheme)
	}
	sch := n.KindOf(entry)
	targets, err := releaseTargets(m, sch, r)
	if err != nil {
		return err
	}
	ref := peer.PieceRef{Key: r.Key, Shard: r.Shard, Scheme: r.Scheme, Version: r.Version, Versioned: sch.Traits().Pieces == kind.Shards, Exact: r.Exact}
	var wg sync.WaitGroup
	errs := make([]error, len(targets))
	for i, t := range targets {
		if t.Node.ID == n.NodeID {
			n.dropPieces(ref)
			continue
		}
		if t.Node.State == cluster.Failed {
			continue // its pieces went with it
		}
		wg.Add(1)
		go func(node cluster.Node) {
			defer wg.Done()
			if _, err := n.Call(ctx, node, peer.MsgDelPiece, ref.Encode(nil)); err != nil {
				n.Log.Debug("release failed", "key", string(r.Key), "node", node.ID, "err", err)
				errs[i] = err
			}
		}(t.Node)
	}
	wg.Wait()
	return errors.Join(errs...)
}
