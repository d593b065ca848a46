package core

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/wire"
)

// This file is the key directory (issue 4, "beyond tolerance"): so that a
// key whose every piece died can still be reported lost rather than go
// silently missing, the coordinator keeps a small entry for each key (its
// scheme, the version at which it was created or changed scheme or expiry,
// and that expiry) on two more nodes: the last up nodes of the shard's
// placement, which for every scheme narrower than the placement hold none
// of the key's pieces. A rebuild sends an entry again where a directory
// node lacks it, so the directory heals with the pieces. Recovery lists the
// entries with the pieces (ListPieces); a key with an entry newer than
// every readable version is reported lost, `none` keys of a dead
// coordinator included.
//
// Entries are sent after the commit, in the background, batched 20 ms per
// node: they cost a `none` write no round trip. The price is a window: a
// key created within that window before its coordinator dies may go
// unreported. Deletions are the exception: a tombstone is stored, and
// acknowledged, before the deletion commits (announcement), so that a
// deleted key is never reported lost nor brought back by recovery; a purge
// entry removes it once every piece is released.
// Plain overwrites send nothing: they change neither the key's existence
// nor its scheme.

// dirKind is what a directory entry says of its key.
type dirKind uint8

const (
	// DirExists: the key exists in Scheme since Version.
	DirExists dirKind = iota
	// DirTombstone: the key is deleted as of Version, so recovery restores
	// none of its versions up to it, whatever pieces a failure left behind.
	DirTombstone
	// DirPurge: the deletion at Version is complete, every piece of the key
	// released; the tombstone can go.
	DirPurge
)

// DirTombstoneFlag marks a stored directory entry as a tombstone
// (store.Meta.Flags; ListPieces reports it as the entry's Index).
const DirTombstoneFlag = 1

// DirEntry is one directory change of a key, as shard Shard keeps it.
type DirEntry struct {
	Key      []byte
	Shard    uint16
	Scheme   uint16
	Version  uint64
	ExpireAt int64
	Kind     dirKind
}

func (e DirEntry) encode(b wire.Enc) wire.Enc {
	return b.Bytes(e.Key).U16(e.Shard).U16(e.Scheme).U64(e.Version).I64(e.ExpireAt).U8(uint8(e.Kind))
}

func EncodeDirectory(entries []DirEntry) []byte {
	return wire.EncodeList(entries, func(e wire.Enc, d DirEntry) wire.Enc { return d.encode(e) })
}

func DecodeDirectory(b []byte) ([]DirEntry, error) { return wire.DecodeList(b, readDirEntry) }

// readDirEntry reads what dirEntry.encode wrote.
func readDirEntry(d *wire.Dec) DirEntry {
	x := DirEntry{Key: d.Bytes(), Shard: d.U16(), Scheme: d.U16(), Version: d.U64(), ExpireAt: d.I64(), Kind: dirKind(d.U8())}
	if x.Kind > DirPurge {
		d.Fail()
	}
	return x
}

// DirSchemeID is the Meta.Scheme of stored directory entries (the key's
// own scheme is in Meta.Aux), so that their memory counts toward no
// scheme's overhead: it is the node's, shown in its piece bytes. Scheme ids
// count up from 0 and never reach it.
const DirSchemeID = 0xFFFF

// DirKey is where a node keeps a key's directory entry among its pieces:
// scheme field 0, kind byte 2 and the shard that keeps the key, so a key
// has one entry per shard whatever its scheme (kept in the entry's
// metadata), apart from its replica and shards. It is appended to buf[:0].
func DirKey(buf []byte, shard uint16, key []byte) []byte {
	e := binary.AppendUvarint(wire.Enc(buf[:0]).U16(0).U8(PieceKindDirectory), uint64(shard))
	return append(e, key...)
}

// OnDirectory applies directory changes sent by coordinators. An entry or
// a tombstone replaces an older one of the key; a purge removes a
// tombstone (or entry) up to its version.
func (n *Coordinator) OnDirectory(b []byte) ([]byte, error) {
	entries, err := DecodeDirectory(b)
	if err != nil {
		return nil, err
	}
	var k []byte
	for _, x := range entries {
		k = DirKey(k, x.Shard, x.Key)
		if x.Kind == DirPurge {
			n.Pieces.DeleteIf(k, func(m store.Meta) bool { return m.Version <= x.Version })
			continue
		}
		meta := store.Meta{Version: x.Version, ExpireAt: x.ExpireAt, Scheme: DirSchemeID, Aux: uint32(x.Scheme)}
		if x.Kind == DirTombstone {
			meta.Flags = DirTombstoneFlag
		}
		if _, err := n.Pieces.PutIfNewer(k, nil, meta); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// dirCopies is how many nodes keep each key's directory entry: with two, a
// key's loss is reported even when its coordinator and one of them die
// together.
const dirCopies = 2

// DirectoryNodes are the nodes that keep the directory entries of sh's keys
// in m: the last dirCopies up nodes of its placement other than the
// coordinator (for every scheme narrower than the placement, nodes that hold
// none of the key's pieces).
func DirectoryNodes(m *cluster.Map, sh *cluster.Shard) []cluster.Node {
	coord, _ := m.CoordinatorOf(sh)
	var out []cluster.Node
	for p := len(sh.Placement) - 1; p >= 0 && len(out) < dirCopies; p-- {
		node, ok := m.Node(sh.Placement[p])
		if ok && node.State == cluster.Up && node.ID != coord.ID {
			out = append(out, node)
		}
	}
	return out
}

// DirectoryIntact says whether a live node of sh's placement keeps every
// directory entry of sh's keys, for a recovery of sh after its coordinator
// failed: a node at one of the last dirCopies positions that were up
// before the failures (positions up now or awaiting a rebuild), other than
// the coordinator then, which is still up and not awaiting a rebuild
// itself (a node that took a position over, or a directory node chosen
// since, lacks the entries until the rebuild sends them). Where none is
// left, a key whose every piece died (every none key of the coordinator,
// for a start) may be named by nothing that survived.
func DirectoryIntact(m *cluster.Map, sh *cluster.Shard) bool {
	upBefore := func(p int) bool {
		node, ok := m.Node(sh.Placement[p])
		return ok && node.State == cluster.Up || slices.Contains(sh.Rebuild, p)
	}
	coord := -1 // the coordinator's position before the failures
	for p, id := range sh.Placement {
		if upBefore(p) && !slices.Contains(sh.Standby, id) {
			coord = p
			break
		}
	}
	seen := 0
	for p := len(sh.Placement) - 1; p >= 0 && seen < dirCopies; p-- {
		if !upBefore(p) || p == coord {
			continue
		}
		seen++
		if node, ok := m.Node(sh.Placement[p]); ok && node.State == cluster.Up && !slices.Contains(sh.Rebuild, p) {
			return true
		}
	}
	return false
}

// DirChange says what directory entry, if any, a commit of op at version v
// that replaced prev (had) sends after it: one when the key appears,
// changes scheme or changes expiry. Deletions and moves to a scheme whose
// writes commit at once (immediate: none, which leaves nothing recovery
// could find) send theirs before they commit (announcement).
func DirChange(op *WriteOp, shard uint16, immediate bool, v uint64, prev store.Meta, had bool) (DirEntry, bool) {
	switch {
	case op.Del, had && prev.Scheme != op.Entry.ID && immediate:
		return DirEntry{}, false
	case !had || prev.Scheme != op.Entry.ID || prev.ExpireAt != op.ExpireAt:
		return DirEntry{Key: op.Key, Shard: shard, Scheme: op.Entry.ID, Version: v, ExpireAt: op.ExpireAt}, true
	}
	return DirEntry{}, false
}

// Announcement is the directory entry a write of op at version v must
// store before it commits, if any: a tombstone for a deletion, the entry
// of a move to none. Both replace a record whose pieces the commit then
// releases, with nothing recovery could find. Were the entry sent after
// the commit, like the others, a coordinator failing between the commit
// (which readers may already have seen) and the releases would leave the
// old version's pieces and a directory that knows nothing newer, and
// recovery would bring the old value back; a coordinator failing right
// after an acknowledged DEL would leave the directory saying the key
// exists, and the deleted key would be reported lost. The robustness suite
// found all three, partitioning coordinators. With the entry first,
// recovery restores no version older than it (judge): a tombstone means
// deleted, a none entry means lost, never the old value. A deletion's
// tombstone is purged once the commit has released every piece
// (Node.commit).
//
// A move to a redundant scheme needs none of this: its committed version
// is complete, so recovery prefers it to the old one (newestReadable). And
// announcing it would cost more than a round trip: a coordinator cut off
// after the Announcement cannot withdraw it, and recovery would report
// the key lost though its old version is whole (the suite found that too).
// A move to none cut off that way leaves the key lost, which none allows.
//
// A key a migration moved away is deleted like any other (decision 0016):
// its shard's entries are its own, and the tombstone keeps a recovery of
// the source from restoring a moved key, deleted since at the importer,
// from pieces the deletion's releases had not reached.
//
// The caller holds the key's write slot, so the committed record read here
// is the one replaced.
func (n *Coordinator) Announcement(op *WriteOp, v uint64) (DirEntry, bool) {
	if op.Del {
		return DirEntry{Key: op.Key, Shard: kind.ShardID(n.Ctl.Map(), op.Key), Version: v, Kind: DirTombstone}, true
	}
	prev, had := n.Primary.Meta(op.Key)
	if had && prev.Scheme != op.Entry.ID && op.scheme(n).Traits().Immediate {
		return DirEntry{Key: op.Key, Shard: kind.ShardID(n.Ctl.Map(), op.Key), Scheme: op.Entry.ID, Version: v, ExpireAt: op.ExpireAt}, true
	}
	return DirEntry{}, false
}

// announce stores e on its shard's directory nodes and waits for them.
func (n *Coordinator) announce(ctx context.Context, e DirEntry) error {
	m := n.Ctl.Map()
	sh := m.ShardByID(int(e.Shard))
	if sh == nil {
		return nil
	}
	payload := EncodeDirectory([]DirEntry{e})
	var reqs []PeerReq
	for _, node := range DirectoryNodes(m, sh) {
		reqs = append(reqs, PeerReq{Node: node, Typ: peer.MsgDirectory, Payload: payload})
	}
	_, errs := n.CallEach(ctx, reqs)
	return errors.Join(errs...)
}

// withdraw undoes the entry announced for a write at v that did not
// commit: a purge, then the key's committed entry again, in one batch, so
// that the directory goes on describing the committed record (a stale
// tombstone would hide the key's loss; a stale scheme entry would report
// it lost).
func (n *Coordinator) withdraw(e DirEntry) {
	entries := []DirEntry{PurgeOf(e.Key, e.Shard, e.Version)}
	if meta, ok := n.Primary.Meta(e.Key); ok {
		entries = append(entries, EntryOf(e.Key, e.Shard, meta))
	}
	n.EnqueueDirectory(entries...)
}

// PurgeOf is the directory entry that removes key's entries up to version
// v: a deletion's tombstone once its releases are done, or an announcement
// withdrawn.
func PurgeOf(key []byte, shard uint16, v uint64) DirEntry {
	return DirEntry{Key: key, Shard: shard, Version: v, Kind: DirPurge}
}

// EntryOf is the directory entry of a key that shard keeps with primary
// record meta.
func EntryOf(key []byte, shard uint16, meta store.Meta) DirEntry {
	return DirEntry{Key: key, Shard: shard, Scheme: meta.Scheme, Version: meta.Version, ExpireAt: meta.ExpireAt}
}

// dirWindow is how long the directory sender gathers entries before it
// sends them.
const dirWindow = 20 * time.Millisecond

// directorySender batches directory entries and sends them in the
// background.
type directorySender struct {
	Mu    sync.Mutex
	Queue []DirEntry
	// Fences is the node's fence count when queue was filled: entries
	// decided before a fence are never sent after it (the node was
	// failed over, and others keep its keys' directory since).
	Fences uint64
	wake   chan struct{} // capacity 1
}

// EnqueueDirectory adds entries to send; the first one after a quiet spell
// starts a send dirWindow later.
func (n *Coordinator) EnqueueDirectory(entries ...DirEntry) {
	n.queueDirectory(n.Lease.Fences.Load(), entries)
}

// queueDirectory adds entries decided when the fence count was fences;
// entries of another fence count than those queued drop the older ones.
func (n *Coordinator) queueDirectory(fences uint64, entries []DirEntry) {
	d := &n.Directory
	d.Mu.Lock()
	if fences != d.Fences {
		if fences < d.Fences {
			d.Mu.Unlock()
			return // decided before a fence: void
		}
		d.Queue, d.Fences = nil, fences
	}
	for _, x := range entries {
		x.Key = append([]byte(nil), x.Key...) // it outlives the request that named it
		d.Queue = append(d.Queue, x)
	}
	d.Mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// DropDirectory forgets the queued entries (the node was fenced).
func (n *Coordinator) DropDirectory() {
	d := &n.Directory
	d.Mu.Lock()
	d.Queue = nil
	d.Mu.Unlock()
}

// DirectoryLoop sends queued entries until ctx ends.
func (n *Coordinator) DirectoryLoop(ctx context.Context) {
	d := &n.Directory
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		}
		time.Sleep(dirWindow)
		d.Mu.Lock()
		batch, fences := d.Queue, d.Fences
		d.Queue = nil
		d.Mu.Unlock()
		n.SendDirectory(batch, fences)
	}
}

// SendDirectory sends each entry to its shard's directory nodes under the
// current map, one frame per node, on the authority the node had at fence
// count fences. A send that fails is logged and dropped: the directory is
// best effort (see the file comment). A batch held back because the lease
// lapsed is queued again, once, unless the node was fenced since.
func (n *Coordinator) SendDirectory(batch []DirEntry, fences uint64) {
	m := n.Ctl.Map()
	byNode := map[cluster.NodeID][]DirEntry{}
	nodes := map[cluster.NodeID]cluster.Node{}
	byShard := map[int][]cluster.Node{} // every key of a shard has the same directory nodes
	for _, x := range batch {
		sh := m.ShardByID(int(x.Shard))
		if sh == nil {
			continue
		}
		dns, ok := byShard[sh.ID]
		if !ok {
			dns = DirectoryNodes(m, sh)
			byShard[sh.ID] = dns
		}
		for _, node := range dns {
			byNode[node.ID] = append(byNode[node.ID], x)
			nodes[node.ID] = node
		}
	}
	reqs := make([]PeerReq, 0, len(byNode))
	for id, entries := range byNode {
		reqs = append(reqs, PeerReq{Node: nodes[id], Typ: peer.MsgDirectory, Payload: EncodeDirectory(entries)})
	}
	_, errs := n.CallEachSince(context.Background(), reqs, fences)
	for i, err := range errs {
		if err != nil {
			n.Log.Debug("directory entries not sent", "node", reqs[i].Node.ID, "err", err)
		}
	}
	if slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, ErrLeaseGone) }) &&
		!n.Lease.Fenced.Load() && n.Lease.Fences.Load() == fences {
		n.queueDirectory(fences, batch) // the lease lapsed, no fence: later
	}
}
