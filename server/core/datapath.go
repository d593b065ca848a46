package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// This file is the coordinator's data path (DESIGN.md §3, Ring §5.2): every
// key has one coordinator, which assigns versions, writes redundancy, and
// commits in its primary store only after every redundancy node has
// acknowledged. Readers read committed state; every write of a key waits
// until no other write of it is in flight, so writes of one key never
// overlap and commit in version order.

// maxAttempts bounds retries of a split read whose pieces a newer commit
// released under it.
const maxAttempts = 16

// Current is a key's committed state as a read-modify-write sees it.
type Current struct {
	Exists bool
	Meta   store.Meta
	Value  []byte
	Entry  cluster.SchemeEntry
}

// WriteOp is the new state of a key: a value under a scheme, or a deletion.
// Its value never changes once the op is made: peers' pieces are sent from
// it without a copy (spool), and the primary store keeps a large one as it
// is (store.ExchangeIfOwned). Values come from a client's request (whose
// buffers are never written again), a peer's frame, a read (store.View) or
// a fresh computation.
type WriteOp struct {
	Key      []byte
	Value    []byte
	ExpireAt int64
	Entry    cluster.SchemeEntry
	Del      bool
	// Shrinks marks a write that stores no more than the record it replaces
	// (a new TTL, a move to a cheaper scheme); maxmemory never refuses it,
	// as Redis does not refuse EXPIRE or PERSIST.
	Shrinks bool
	// CRC32 is value's CRC32C once CRCKnown: computed once for the record
	// and its replicas (valueCRC), or taken from a record already checked.
	CRC32    uint32
	CRCKnown bool
	// staged is a packed scheme's write of op's object, placed from
	// Stage until it commits or aborts (Place set; packed.go).
	staged kind.Staged
	// flushing is staged alone, for Flush without allocating a slice.
	flushing [1]*kind.Staged
	// relocate makes a packed write append its object even if it could
	// update it in place: compaction moves objects out of their chunks.
	relocate bool
	// began is when a write to none that commits at once began (a
	// monotime; 0: when it commits), for its write-duration metric.
	began int64
	// unpeeked marks a plain SET to none that nothing read the key for
	// (writeUnpeeked): it commits only over no record or one in its own
	// scheme, where a lookup would have decided the same; over any other,
	// commitLocked returns errPeekNeeded and changes nothing.
	unpeeked bool
	// removals remove the object a commit replaced or deleted from a
	// packed scheme's chunks; commit sends them (packed.go).
	removals []kind.Pending
	// bound is entry's bound scheme once scheme has looked it up.
	bound kind.Scheme
	// policyMove marks a move a temperature policy makes or causes, from
	// policyFrom; commitLocked counts it (temperature.go).
	policyMove policyMove
	policyFrom cluster.SchemeEntry
}

// scheme is op's bound scheme (Node.kindOf of its entry), looked up once:
// a write asks it several things on its way. op.entry never changes once
// the write is under way (valueOp sets it first).
func (op *WriteOp) scheme(n *Coordinator) kind.Scheme {
	if op.bound == nil {
		op.bound = n.KindOf(op.Entry)
	}
	return op.bound
}

// Bytes is op's value (kind.Value).
func (op *WriteOp) Bytes() []byte { return op.Value }

// CRC is valueCRC (kind.Value).
func (op *WriteOp) CRC() uint32 { return op.valueCRC() }

// valueCRC returns the CRC32C of op's value, computing it on first use. A
// writeOp belongs to one goroutine at a time.
func (op *WriteOp) valueCRC() uint32 {
	if !op.CRCKnown {
		op.CRC32, op.CRCKnown = bigcopy.Checksum(op.Value), true
	}
	return op.CRC32
}

// Get returns the committed value of key. It does not wait for writes in
// flight: the committed record changes only when a write commits, which is
// before that write is acknowledged, so a read returns a value at least as
// new as every write acknowledged before it began and never an
// unacknowledged one (decision 0002 explains why Ring's wait is not needed).
func (n *Coordinator) Get(ctx context.Context, key []byte) (Current, error) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		cur, err := n.readCommitted(ctx, key)
		if !errors.Is(err, kind.ErrPieceGone) {
			switch {
			case cur.Exists:
				n.Metrics.read(cur.Entry)
				n.Stats.KeyspaceHits.Add(1)
			case err == nil:
				n.Stats.KeyspaceMisses.Add(1)
			}
			return cur, err
		}
	}
	return Current{}, fmt.Errorf("server: key %q kept changing under a read", key)
}

// packedRereads is how many times readCommitted reads a packed key whose
// Fetch asked it to read again before it gives the caller that answer.
const packedRereads = 4

// readCommitted reads the committed record without waiting: locally for
// none and rep, by gathering k shards for split.
//
// A large value is the store's own bytes (store.View), not a copy: nothing
// may modify a current's value.
func (n *Coordinator) readCommitted(ctx context.Context, key []byte) (Current, error) {
	val, meta, ok := n.Primary.View(key)
	for attempt := 1; !ok; attempt++ {
		var cur Current
		var inStripe bool
		if val, meta, cur, inStripe, ok = n.lookupPacked(key, true); !inStripe {
			break
		}
		if cur.Meta.Flags&kind.RemoteValue == 0 {
			return n.unlessExpired(key, cur), nil
		}
		// A packed scheme that repaired the key's chunk has it read again
		// (kind.ErrPieceGone), as does one whose key moved meanwhile.
		got, err := n.fetchPacked(ctx, key, cur)
		if !errors.Is(err, kind.ErrPieceGone) || attempt == packedRereads {
			return got, err
		}
	}
	if !ok {
		if lost, isLost := n.Lost.Get(key); isLost {
			return Current{}, lost.Err()
		}
		return Current{}, nil
	}
	if meta.ExpireAt != 0 && meta.ExpireAt <= NowMs() {
		n.expireLater(key)
		return Current{}, nil
	}
	sch, ok := n.Schemes(n.Ctl.Map()).Lookup(meta.Scheme)
	if !ok {
		return Current{}, fmt.Errorf("server: key %q uses unknown scheme id %d", key, meta.Scheme)
	}
	entry := sch.Entry()
	if IsStub(meta) { // recovered metadata first: fetch the value now
		n.Metrics.DegradedRequest(degradedRefetched)
		v, full, err := n.FillStub(ctx, key, meta)
		return Current{Exists: true, Meta: full, Value: v, Entry: entry}, err
	}
	v, err := sch.Read(ctx, key, meta, val)
	if err != nil {
		return Current{}, err
	}
	return Current{Exists: true, Meta: meta, Value: v, Entry: entry}, nil
}

// unlessExpired is cur, or nothing if it has expired (queued for deletion).
func (n *Coordinator) unlessExpired(key []byte, cur Current) Current {
	if cur.Meta.ExpireAt != 0 && cur.Meta.ExpireAt <= NowMs() {
		n.expireLater(key)
		return Current{}
	}
	return cur
}

// RMW runs a read-modify-write: fn sees the committed state with no write in
// flight and returns the new state, or nil for no change.
func (n *Coordinator) RMW(ctx context.Context, key []byte, fn func(cur Current) (*WriteOp, error)) error {
	return n.rmwWith(ctx, key, n.readCommitted, fn)
}

// RMWMeta is rmw for operations that need only the key's metadata (DEL,
// expiry): the value is not read, so a split key costs no shard gathering
// and a key whose value cannot be read can still be deleted.
func (n *Coordinator) RMWMeta(ctx context.Context, key []byte, fn func(cur Current) (*WriteOp, error)) error {
	return n.rmwWith(ctx, key, n.MetaCommitted, fn)
}

// MetaCommitted is readCommitted without the value.
func (n *Coordinator) MetaCommitted(_ context.Context, key []byte) (Current, error) {
	meta, ok := n.Primary.Meta(key)
	if !ok {
		var cur Current
		var inStripe bool
		if _, meta, cur, inStripe, ok = n.lookupPacked(key, false); inStripe {
			return n.unlessExpired(key, cur), nil
		}
	}
	if _, isLost := n.Lost.Get(key); !ok && isLost {
		// A lost key exists, unreadable: DEL removes it, EXISTS counts it.
		return Current{Exists: true, Entry: n.Ctl.Map().DefaultScheme()}, nil
	}
	if !ok || (meta.ExpireAt != 0 && meta.ExpireAt <= NowMs()) {
		return Current{}, nil
	}
	entry, ok := n.Ctl.Map().SchemeByID(meta.Scheme)
	if !ok {
		return Current{}, fmt.Errorf("server: key %q uses unknown scheme id %d", key, meta.Scheme)
	}
	return Current{Exists: true, Meta: meta, Entry: entry}, nil
}

type readFunc func(ctx context.Context, key []byte) (Current, error)

// rmwWith runs one read-modify-write. Every write of a key registers in the
// inflight table and a write finding one in flight waits (Node.set falls
// back to rmw), so once waitQuiet returns no other write of the key can
// commit before this one: the committed state read here is the state the
// new version replaces.
func (n *Coordinator) rmwWith(ctx context.Context, key []byte, read readFunc, fn func(cur Current) (*WriteOp, error)) error {
	s, err := n.Inflight.waitQuiet(ctx, key)
	if err != nil {
		return err
	}
	p := s.Begin(key, n.Versions.next())
	s.Mu.Unlock()
	cur, err := read(ctx, key)
	if errors.Is(err, kind.ErrPieceGone) {
		// Nothing can release the committed version's pieces while this
		// write is in flight: they are lost.
		err = fmt.Errorf("server: pieces of %q are missing; the key cannot be read", key)
	}
	var op *WriteOp
	if err == nil {
		op, err = fn(cur)
	}
	if err != nil || op == nil {
		n.abort(key, p)
		return err
	}
	return n.apply(ctx, p, op)
}

// writeLocked is a blind write (plain SET, MSET): it needs no earlier
// state, so it begins at once; for none it commits at once. The caller holds
// s.mu, which writeLocked releases, and peeked the key under it (pk).
func (n *Coordinator) writeLocked(ctx context.Context, s *inflightShard, op *WriteOp, pk peeked) error {
	if op.scheme(n).Traits().Immediate && !op.Del && !n.leavesRedundancy(op, pk) {
		if err := n.checkMemory(op); err != nil {
			s.Mu.Unlock()
			return err
		}
		rel, err := n.commitLocked(s, op, n.Versions.next(), nil)
		s.Mu.Unlock()
		n.ReleaseAll(ctx, rel, false)
		n.sendRemovalsLater(op)
		return err
	}
	p := s.Begin(op.Key, n.Versions.next())
	n.markOverlaps(p, op)
	s.Mu.Unlock()
	return n.apply(ctx, p, op)
}

// markOverlaps marks p, a blind write of op, as one that later plain
// SETs of the key may overlap, if op's scheme allows it
// (kind.Traits.Overlaps: a batching packed scheme keeps a key's newest
// object, decision 0009).
func (n *Coordinator) markOverlaps(p *pending, op *WriteOp) {
	if op.scheme(n).Traits().Overlaps {
		p.overlaps = uint32(op.Entry.ID) + 1
	}
}

// overlapLocked begins a plain SET of key = value beside q, the key's
// write in flight, if q may be overlapped and the SET goes to q's scheme
// (a plain SET keeps the key's scheme and sets no TTL, so what the
// committed state says of it holds whatever q commits); it returns nil
// when the SET must wait for q instead. The caller holds s.Mu.
func (n *Coordinator) overlapLocked(s *inflightShard, q *pending, key, value []byte) (*pending, *WriteOp) {
	if q.overlaps == 0 {
		return nil, nil
	}
	cur, _ := n.peekLocked(key)
	op := n.ValueOp(cur, key, value, 0, false, nil)
	if uint32(op.Entry.ID)+1 != q.overlaps || n.overwritesStub(cur, op) {
		return nil, nil
	}
	p := s.Begin(key, n.Versions.next())
	p.overlaps = q.overlaps
	return p, op
}

// writeUnpeeked is a plain SET of key (no options) that commits at once,
// without reading the key's record first, when that read could only
// confirm it: the scheme of a new key of this size (the default, or the
// policy's pick) is none and no stripe scheme is in use, so the write goes
// to none unless the key holds a record of another scheme, which the
// commit's own lookup refuses (errPeekNeeded); a policy that picks none
// for a new key picks it for a key in none too (cluster.Policy.Pick). It
// reports done false, with s.mu still held, when the write must take the
// usual path; done true with s.mu released otherwise. The caller holds
// s.mu, and no write of key is in flight.
func (n *Coordinator) writeUnpeeked(s *inflightShard, key, value []byte, began int64) (op *WriteOp, done bool, err error) {
	if n.packedInUse() {
		return nil, false, nil
	}
	m := n.Ctl.Map()
	def := pickScheme(m, Current{}, len(value))
	if def.ID == 0 {
		return nil, false, nil
	}
	sch := n.KindOf(def)
	if !sch.Traits().Immediate {
		return nil, false, nil
	}
	op = &WriteOp{Key: key, Value: value, Entry: def, began: began, unpeeked: true, bound: sch}
	n.written(m, Current{}, op, true)
	if err := n.checkMemory(op); err != nil {
		s.Mu.Unlock()
		return op, true, err
	}
	if _, err = n.commitLocked(s, op, n.Versions.next(), nil); errors.Is(err, errPeekNeeded) {
		return nil, false, nil
	}
	s.Mu.Unlock()
	return op, true, err // none over none releases nothing
}

// leavesRedundancy says whether op, a write to none, replaces a record in
// another scheme: it must then announce itself before it commits
// (announcement), which the fast path for none skips. The caller holds the
// key's inflight shard lock and peeked the key under it (pk); an exact
// peek answers without reading the record again.
func (n *Coordinator) leavesRedundancy(op *WriteOp, pk peeked) bool {
	if pk.exact {
		return pk.stored && pk.scheme != op.Entry.ID
	}
	prev, had := n.Primary.Meta(op.Key)
	return had && prev.Scheme != op.Entry.ID || n.inPacked(op.Key)
}

// apply sends op's redundancy at p's version, then commits it.
func (n *Coordinator) apply(ctx context.Context, p *pending, op *WriteOp) error {
	if err := n.checkMemory(op); err != nil {
		n.abort(op.Key, p)
		return err
	}
	faults.Hit(faults.BeforeRedundancy)
	e, announce := n.Announcement(op, p.version)
	if announce {
		if err := n.announce(ctx, e); err != nil {
			n.abort(op.Key, p)
			n.withdraw(e)
			return notAcknowledged(op.Key, err)
		}
	}
	sent, err := n.sendRedundancy(ctx, op, p.version)
	if err = n.settle(ctx, p, op, sent, err); err != nil && announce {
		n.withdraw(e)
	}
	return err
}

// settle ends a write whose redundancy went out: it commits when sending
// succeeded (sendErr nil), else aborts and releases what was sent.
func (n *Coordinator) settle(ctx context.Context, p *pending, op *WriteOp, sent []Release, sendErr error) error {
	if sendErr != nil {
		n.abort(op.Key, p)
		n.abortStaged(op) // a packed write's object, if it has one
		if op.scheme(n).Traits().Pieces == kind.Copies {
			go n.undoReplicas(op.Key, sent) // its copies replaced the committed ones
		} else {
			n.ReleaseAll(context.Background(), sent, false)
		}
		return sendErr
	}
	faults.Hit(faults.BeforeCommit)
	return n.commit(ctx, p, op, sent)
}

// undoReplicas cleans up after a write of copies (rep) that did not
// commit. A copy is stored in one slot per key and scheme, so where the write's replica
// arrived it replaced the committed one, and releasing it leaves that
// node with none: a key one failure from loss though no failure happened
// (issue 3's known gap; the robustness suite lost rep:3 keys to it with
// two kills). So the aborted version is released, then the committed
// version's replicas are stored again where they are missing.
func (n *Coordinator) undoReplicas(key []byte, sent []Release) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*n.Cfg.PeerTimeout)
	defer cancel()
	_ = n.ReleaseAll(ctx, sent, true)
	if _, err := n.RebuildKey(ctx, key, EveryPiece); err != nil {
		n.Log.Debug("committed replicas not restored after an aborted write", "key", string(key), "err", err)
	}
}

// commit makes op the key's committed state once its redundancy (sent) is
// stored, then releases what the commit replaced.
func (n *Coordinator) commit(ctx context.Context, p *pending, op *WriteOp, sent []Release) error {
	var shard uint16 // a deletion's tombstone's, in the map it committed under
	if op.Del {
		shard = kind.ShardID(n.Ctl.Map(), op.Key)
	}
	s := n.Inflight.Shard(op.Key)
	s.Mu.Lock()
	rel, err := n.commitLocked(s, op, p.version, p)
	s.Mu.Unlock()
	close(p.done)
	if err != nil {
		n.ReleaseAll(context.Background(), sent, false)
		return err
	}
	if len(rel) > 0 {
		faults.Hit(faults.BeforeRelease)
	}
	// A deletion, or a move to another scheme, is acknowledged once the
	// old redundancy is released, so that no piece outlives it. A deletion
	// whose every release was acknowledged needs its tombstone no more; one
	// with a release still to do is finished later (purge.go).
	err = n.ReleaseAll(ctx, rel, op.Del || len(rel) > 0 && rel[0].Scheme != op.Entry.ID)
	var stripeErr error
	if op.Del {
		stripeErr = n.sendRemovals(ctx, op)
	}
	n.sendRemovalsLater(op)
	switch {
	case op.Del && err == nil && stripeErr == nil:
		n.EnqueueDirectory(PurgeOf(op.Key, shard, p.version))
	case op.Del && stripeErr != nil:
		// The tombstone stays: the removal is logged and sent again, but
		// nothing tells the purge when it has arrived.
		n.Log.Debug("stripe removal not acknowledged; the deletion's tombstone stays", "key", string(op.Key), "err", stripeErr)
	case op.Del:
		n.Unfinished.add(op.Key, shard, p.version, rel)
	}
	faults.Hit(faults.AfterCommit)
	return nil
}

// logicalBytes is what op writes of key and value: 0 for a deletion.
func (op *WriteOp) logicalBytes() int {
	if op.Del {
		return 0
	}
	return len(op.Key) + len(op.Value)
}

// abort drops a write that will not commit.
func (n *Coordinator) abort(key []byte, p *pending) {
	s := n.Inflight.Shard(key)
	s.Mu.Lock()
	s.End(key, p)
	s.Mu.Unlock()
	close(p.done)
}

// commitLocked makes op at version v the committed state unless a newer
// version already is, and returns the pieces that are no longer needed: the
// replaced record's, or op's own if it lost. The caller holds s.mu.
func (n *Coordinator) commitLocked(s *inflightShard, op *WriteOp, v uint64, p *pending) ([]Release, error) {
	began := op.began // a write to none commits as it begins
	if p != nil {
		began = p.began
	} else if began == 0 {
		began = Monotime()
	}
	rel, err := n.commitRecordLocked(s, op, v, p)
	if err == nil && !op.relocate && op.Entry.ID != 0 {
		n.Metrics.wrote(op.Entry, began, op.logicalBytes())
	}
	if err == nil && op.policyMove != moveNone {
		n.countMove(op)
	}
	return rel, err
}

// commitRecordLocked is commitLocked less the metrics.
func (n *Coordinator) commitRecordLocked(s *inflightShard, op *WriteOp, v uint64, p *pending) ([]Release, error) {
	if p != nil {
		s.End(op.Key, p)
	}
	if op.Del {
		n.Deletions.note(op.Key)
	}
	if _, toPacked := op.packedOf(n); toPacked && !op.Del || n.inPacked(op.Key) {
		n.forgetLost(op) // written or deleted: no longer reported lost
		return n.commitPackedLocked(op, v)
	}
	var prev, next store.Meta
	var applied, had bool
	if op.Del {
		prev, had = n.Primary.Meta(op.Key)
		applied = n.Primary.DeleteIf(op.Key, func(m store.Meta) bool { return m.Version < v })
	} else {
		stored, meta := n.primaryRecord(op, v)
		next = meta
		var err error
		if applied, prev, had, err = n.Primary.ExchangeIfOwned(op.Key, stored, meta, op.commitsOver(v)); err != nil {
			return nil, fmt.Errorf("server: storing %q: %w", op.Key, err)
		}
		if op.unpeeked && had && prev.Scheme != op.Entry.ID {
			return nil, errPeekNeeded
		}
	}
	n.forgetLost(op)
	m := n.Ctl.Map()
	if applied {
		n.accountDetached(m, prev, had, next)
		if e, ok := DirChange(op, 0, !op.Del && op.scheme(n).Traits().Immediate, v, prev, had); ok {
			e.Shard = kind.ShardID(m, op.Key) // only now: a plain overwrite sends none
			n.EnqueueDirectory(e)
		}
		if had && n.needsRelease(m, prev.Scheme, op) {
			return []Release{{Key: op.Key, Shard: kind.ShardID(m, op.Key), Scheme: prev.Scheme, Version: prev.Version, everywhere: op.Del}}, nil
		}
		return nil, nil
	}
	if !op.Del && n.ownPiecesOrphaned(op, prev, had) {
		return []Release{{Key: op.Key, Shard: kind.ShardID(m, op.Key), Scheme: op.Entry.ID, Version: v, Exact: true}}, nil
	}
	return nil, nil
}

// commitsOver is the condition under which op at version v replaces the
// primary record: a newer version, and for an unpeeked write no record or
// one in op's scheme.
func (op *WriteOp) commitsOver(v uint64) func(prev store.Meta, had bool) bool {
	if op.unpeeked {
		return func(prev store.Meta, had bool) bool { return !had || prev.Scheme == op.Entry.ID && v > prev.Version }
	}
	return func(prev store.Meta, had bool) bool { return !had || v > prev.Version }
}

// errPeekNeeded refuses an unpeeked write over a record of another scheme:
// the key keeps that scheme, or leaves redundancy behind, which the
// peeked path handles.
var errPeekNeeded = errors.New("server: the write needs its key's record read first")

// primaryRecord is what the coordinator keeps for op at version v: what
// op's scheme keeps of the value (kind.Scheme.Record), its expiry and
// version.
func (n *Coordinator) primaryRecord(op *WriteOp, v uint64) ([]byte, store.Meta) {
	stored, aux := op.scheme(n).Record(op)
	return stored, store.Meta{Version: v, ExpireAt: op.ExpireAt, Scheme: op.Entry.ID, Aux: aux}
}

// needsRelease says whether the pieces of the replaced record (in scheme
// prevID) must be released once op commits.
func (n *Coordinator) needsRelease(m *cluster.Map, prevID uint16, op *WriteOp) bool {
	prev, ok := n.Schemes(m).Lookup(prevID)
	return ok && releasedOnReplace(prev.Traits().Pieces, op.Del || prevID != op.Entry.ID)
}

// ownPiecesOrphaned says whether a write that lost to a newer one (winner,
// if the key had a record) left pieces nobody will release.
func (n *Coordinator) ownPiecesOrphaned(op *WriteOp, winner store.Meta, had bool) bool {
	return releasedOnReplace(op.scheme(n).Traits().Pieces, !had || winner.Scheme != op.Entry.ID)
}

// releasedOnReplace says whether pieces go when a newer version of their
// key commits (moved: in another scheme, or deleted). Shards are kept per
// version, so they always go; a copy slot is replaced in place by the next
// version in its scheme, so copies go only when the key leaves it.
func releasedOnReplace(p kind.Pieces, moved bool) bool {
	switch p {
	case kind.Shards:
		return true
	case kind.Copies:
		return moved
	}
	return false
}

func NowMs() int64 { return time.Now().UnixMilli() }

// accountDetached keeps the per-scheme logical byte counts of values
// whose bytes the primary store does not hold (kind.Scheme.Detached) as
// a commit replaces prev (had) with next (scheme 0 when the key leaves
// the primary store).
func (n *Coordinator) accountDetached(m *cluster.Map, prev store.Meta, had bool, next store.Meta) {
	t := n.Schemes(m)
	if s, ok := t.Lookup(prev.Scheme); had && ok {
		if d := s.Detached(prev); d != 0 {
			n.Stats.DetachedBytes(prev.Scheme).Add(-d)
		}
	}
	if s, ok := t.Lookup(next.Scheme); ok {
		if d := s.Detached(next); d != 0 {
			n.Stats.DetachedBytes(next.Scheme).Add(d)
		}
	}
}
