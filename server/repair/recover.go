package repair

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/wire"
)

// This file is metadata-first recovery of a shard whose coordinator failed
// (Ring §5.5, DESIGN.md §4). The shard's next up node becomes coordinator
// with the shard marked Recovering, and answers TRYAGAIN for its keys until
// it has rebuilt the shard's primary records from what the live placement
// nodes hold:
//
//   - every live node of the placement lists the pieces and directory
//     entries it holds for the shard's slots (ListPieces: key, scheme,
//     version, kind, shard index, expiry, CRC32C);
//   - each key is judged: the newest version that can still be read wins
//     (a rep version any live node holds a replica of, or a split version
//     with at least k distinct shards), unless its directory entry is newer,
//     and then the key is reported lost (server/core/directory.go), `none` keys of the
//     dead coordinator included;
//   - each surviving key gets a stub record (server/repair/value_fill.go): its value is fetched
//     when first needed, or by a background pass;
//   - the version clock moves past every recovered version, then the node
//     proposes ShardRecovered and serves the shard.
//
// A version that was sent but never committed may win: its write was never
// acknowledged, so it may take effect.

// shardClaims tracks the shards a node is working on (recovering, or
// rebuilding), so that each job runs once at a time.
type shardClaims struct {
	mu      sync.Mutex
	running map[int]bool
}

// claim marks shard as taken; false if it already is.
func (r *shardClaims) claim(shard int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[int]bool{}
	}
	if r.running[shard] {
		return false
	}
	r.running[shard] = true
	return true
}

func (r *shardClaims) release(shard int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.running, shard)
}

// startRecoveries begins recovering every shard the map has handed to this
// node; a recovery that fails is retried at the next call.
func (n *Repairer) startRecoveries(ctx context.Context) {
	n.startShardJobs(ctx, "recovery", &n.recovering,
		func(_ *cluster.Map, sh cluster.Shard) bool { return sh.Recovering },
		n.recoverShard,
		func(sh cluster.Shard) cluster.Command {
			return cluster.ShardRecovered{Shard: sh.ID, By: n.NodeID, StripesPending: n.stripes.Pending(sh.ID), Losses: n.shardLosses(sh)}
		})
}

// startShardJobs runs job for every shard of the current map that wants
// it and that this node coordinates, one job per shard at a time (claims),
// and proposes done(shard) when the job succeeds. A failed job or proposal
// is retried at the next call (every heartbeat tick).
func (n *Repairer) startShardJobs(ctx context.Context, what string, claims *shardClaims, wants func(*cluster.Map, cluster.Shard) bool,
	job func(context.Context, *cluster.Map, cluster.Shard) error, done func(cluster.Shard) cluster.Command) {
	m := n.Ctl.Map()
	if m.State != cluster.OK || !n.Serving() {
		return
	}
	for _, sh := range m.Shards {
		if c, ok := m.CoordinatorOf(&sh); !wants(m, sh) || !ok || c.ID != n.NodeID || !claims.claim(sh.ID) {
			continue
		}
		go func(sh cluster.Shard) {
			defer claims.release(sh.ID)
			if err := job(ctx, m, sh); err != nil {
				n.Log.Warn("shard "+what+" failed; retrying", "shard", sh.ID, "err", err)
				return
			}
			if _, err := n.Propose(ctx, done(sh)); err != nil {
				n.Log.Warn("shard "+what+" done, proposal failed; retrying", "shard", sh.ID, "err", err)
			}
		}(sh)
	}
}

// pieceEntry is one piece a node holds, as ListPieces reports it.
type pieceEntry struct {
	Key      []byte
	Scheme   uint16
	Version  uint64
	Kind     uint8 // pieceKindReplica, pieceKindShard or pieceKindDirectory
	Index    uint8
	ExpireAt int64
	CRC      uint32 // the piece's CRC32C
}

// candidate is one readable version of a key found during recovery.
type candidate struct {
	scheme   uint16
	version  uint64
	expireAt int64
	crc      uint32         // a rep replica's CRC32C: the value's
	shards   map[uint8]bool // shard indexes present (split)
	holders  []cluster.Node // the nodes that listed a piece of it
	// complete: a piece at every position a commit would have stored one
	// (markComplete).
	complete bool
	// value is a stripe object's, decoded from the failed coordinator's
	// chunk (stripe.Engine.Recover).
	value []byte
}

// recoverShard rebuilds the primary records of sh's keys from the pieces
// (and directory entries) of its live placement nodes.
func (n *Repairer) recoverShard(ctx context.Context, m *cluster.Map, sh cluster.Shard) error {
	n.seedLosses(m, sh) // what earlier coordinators found lost stays lost
	found := map[string][]*candidate{}
	dir := map[string]pieceEntry{}
	err := n.listShard(ctx, m, sh, nil, func(node cluster.Node, e pieceEntry) {
		if e.Kind != core.PieceKindDirectory {
			addCandidate(found, node, e)
		} else if old, ok := dir[string(e.Key)]; !ok || e.Version > old.Version {
			dir[string(e.Key)] = e
		}
	})
	if err != nil {
		return err
	}
	left, err := n.leaveToOtherEnd(ctx, m, sh, found, dir)
	if err != nil {
		return err
	}
	known := map[uint32]bool{} // tags of keys found outside stripe chunks
	for key := range found {
		known[keyslot.Tag([]byte(key))] = true
	}
	for key := range dir {
		known[keyslot.Tag([]byte(key))] = true
	}
	if !core.DirectoryIntact(m, &sh) {
		n.loseUnnamed(sh)
	}
	rec, err := n.stripes.Recover(ctx, m, sh, known)
	if err != nil {
		return err
	}
	for key, cands := range packedCandidates(rec.Objects) {
		found[key] = append(found[key], cands...)
	}
	for key := range dir {
		if _, ok := found[key]; !ok {
			found[key] = nil
		}
	}
	for _, d := range dir {
		n.Versions.Observe(d.Version) // a key written again must outrank its tombstone
	}
	now := core.NowMs()
	var keys []string
	var picks []*candidate
	var stale []staleVersion
	var partial []string
	var tombstones []core.DirEntry // purges of the deleted keys' tombstones
	t := n.Schemes(m)
	for key, cands := range left.cands { // the other end's keys: every version here is stale
		stale = append(stale, staleVersions(t, uint16(sh.ID), key, cands, nil)...)
	}
	for _, d := range left.dir {
		tombstones = append(tombstones, core.PurgeOf(d.Key, uint16(sh.ID), d.Version))
	}
	for key, cands := range found {
		markComplete(t, &sh, cands)
		best, lost := judge(t, key, cands, dir, now)
		if lost != nil {
			n.Lost.Add(*lost)
			continue
		}
		if best != nil && (best.expireAt == 0 || best.expireAt > now) {
			keys, picks = append(keys, key), append(picks, best)
			if !best.complete {
				partial = append(partial, key)
			}
		} else {
			best = nil // deleted or expired: every version is stale
			if d, ok := dir[key]; ok && d.Index == core.DirTombstoneFlag {
				tombstones = append(tombstones, core.PurgeOf(d.Key, uint16(sh.ID), d.Version))
			}
		}
		stale = append(stale, staleVersions(t, uint16(sh.ID), key, cands, best)...)
	}
	faults.Hit(faults.MidRecovery)
	var metaOnly, stripeKeys []string // stubs that hold no bytes; stripe keys
	var stripePicks []*candidate
	for i, key := range keys {
		if sch, ok := t.Lookup(picks[i].scheme); ok && core.IsPacked(sch) {
			stripeKeys, stripePicks = append(stripeKeys, key), append(stripePicks, picks[i])
			continue
		}
		if err := n.writeStub([]byte(key), picks[i]); err != nil {
			return err
		}
		if sch, ok := t.Lookup(picks[i].scheme); ok && !sch.Traits().ReadsLocally {
			metaOnly = append(metaOnly, key)
		}
	}
	if err := n.RehomePacked(ctx, m, packedObjects(stripeKeys, stripePicks)); err != nil {
		return err
	}
	n.stripes.Defer(sh, rec)
	// Values follow, metadata first (server/repair/value_fill.go): rep values come back with
	// the shard's rebuild, which lists the stubs as lost copies; split
	// stubs hold no bytes, and a background pass checks their shards.
	go n.fillStubs(ctx, metaOnly)
	go func() {
		if failed := n.sweepStale(ctx, stale); ctx.Err() == nil {
			n.PurgeTombstones(tombstones, failed)
		}
	}()
	go n.completeVersions(ctx, partial)
	n.Log.Info("shard recovered", "shard", sh.ID, "keys", len(keys), "lost", n.Lost.Count(), "stale", len(stale), "stripe_chunks_pending", rec.Deferred())
	return nil
}

// staleVersion is a version of a key that recovery did not restore, and
// the nodes that hold pieces of it.
type staleVersion struct {
	ref     peer.PieceRef
	holders []cluster.Node
}

// staleVersions lists the versions of key other than best (all of them when
// best is nil: the key is deleted or expired) whose pieces are garbage: left
// by a write that never committed, by a release that a failure cut short,
// or by a deletion recovery honoured. A rep replica in best's own scheme is
// the same stored piece as best's, replaced in place, so it is never one.
func staleVersions(t *core.SchemeTable, shard uint16, key string, cands []*candidate, best *candidate) []staleVersion {
	var out []staleVersion
	for _, c := range cands {
		versioned := shardsOf(t, c.scheme)
		if c == best || best != nil && c.scheme == best.scheme && !versioned {
			continue
		}
		ref := peer.PieceRef{Key: []byte(key), Shard: shard, Scheme: c.scheme, Version: c.version, Versioned: versioned, Exact: true}
		out = append(out, staleVersion{ref: ref, holders: c.holders})
	}
	return out
}

// shardsOf says whether scheme id keeps its pieces per version (shards).
func shardsOf(t *core.SchemeTable, id uint16) bool {
	sch, ok := t.Lookup(id)
	return ok && sch.Traits().Pieces == kind.Shards
}

// sweepStale releases stale versions from the nodes that listed them, in
// the background of a recovered shard: they cost memory, never a wrong
// read (reads go through the primary record's version). It returns the
// keys with a release that failed.
func (n *Repairer) sweepStale(ctx context.Context, stale []staleVersion) map[string]bool {
	failed := map[string]bool{}
	for _, s := range stale {
		reqs := make([]core.PeerReq, 0, len(s.holders))
		for _, h := range s.holders {
			reqs = append(reqs, core.PeerReq{Node: h, Typ: peer.MsgDelPiece, Payload: s.ref.Encode(nil)})
		}
		if _, errs := n.CallEach(ctx, reqs); ctx.Err() != nil {
			return failed
		} else if err := errors.Join(errs...); err != nil {
			failed[string(s.ref.Key)] = true
			n.Log.Debug("stale pieces not released", "key", string(s.ref.Key), "err", err)
		}
	}
	return failed
}

// judge decides a key's fate in recovery: the newest readable version to
// restore, or a loss. The key is lost when no version can be read, or when
// its directory entry (sent only after a commit) is newer than every
// readable version: then that committed version died with its pieces, and
// an older one must not come back. An expired directory entry loses
// nothing. A tombstone says the key was deleted at its version: the
// versions before it are dead, and only a newer one (the key written
// again) can be restored, or found lost.
func judge(t *core.SchemeTable, key string, cands []*candidate, dir map[string]pieceEntry, now int64) (*candidate, *kind.LostKey) {
	m := t.M
	d, hasDir := dir[key]
	if hasDir && d.ExpireAt != 0 && d.ExpireAt <= now {
		hasDir = false
	}
	if hasDir && d.Index == core.DirTombstoneFlag {
		cands = slices.DeleteFunc(slices.Clone(cands), func(c *candidate) bool { return c.version < d.Version })
		if len(cands) == 0 {
			return nil, nil // deleted
		}
		hasDir = false // written again since; its entry is on its way
	}
	best := newestReadable(t, cands)
	// Unreadable pieces are a loss only if their version may have been
	// committed: complete but for positions a failure took. Fragments with
	// a piece missing where an up node should hold one are a write that
	// never committed (its coordinator was cut off sending it): no client
	// was told of it, and the sweep releases them.
	committable := slices.ContainsFunc(cands, func(c *candidate) bool { return c.complete })
	switch {
	case hasDir && (best == nil || d.Version > best.version):
		lost := lostByDirectory(m, key, d, cands)
		return nil, &lost
	case best == nil && committable:
		lost := lostReport(m, key, cands)
		return nil, &lost
	}
	return best, nil
}

// lostByDirectory describes a key whose directory entry outlived its
// pieces: the entry's scheme, and how many of that version's pieces are
// gone.
func lostByDirectory(m *cluster.Map, key string, d pieceEntry, cands []*candidate) kind.LostKey {
	e, _ := m.SchemeByID(d.Scheme)
	total := e.Spec.Nodes()
	left := 0
	for _, c := range cands {
		if c.scheme == d.Scheme && c.version == d.Version {
			left = len(c.shards)
		}
	}
	return kind.LostKey{Key: key, Scheme: e.Name(), Lost: total - left, Total: total}
}

func addCandidate(found map[string][]*candidate, node cluster.Node, e pieceEntry) {
	key := string(e.Key)
	for _, c := range found[key] {
		if c.scheme == e.Scheme && c.version == e.Version {
			c.shards[e.Index] = true
			if !slices.ContainsFunc(c.holders, func(h cluster.Node) bool { return h.ID == node.ID }) {
				c.holders = append(c.holders, node)
			}
			return
		}
	}
	c := &candidate{scheme: e.Scheme, version: e.Version, expireAt: e.ExpireAt, crc: e.CRC,
		shards: map[uint8]bool{e.Index: true}, holders: []cluster.Node{node}}
	found[key] = append(found[key], c)
}

// newestReadable returns the candidate to restore: the highest-versioned
// complete one that can be read (any replica for rep, at least k shards
// for split), else the highest-versioned readable one.
//
// A commit stores a piece at every up position of the key's placement
// that is not awaiting rebuild, before it is acknowledged. A version
// missing a piece at such a position was never committed: its
// coordinator died sending it. Restoring it over an older complete
// version would swap a fully redundant value for one a single further
// failure can lose (the robustness suite's "two kills 1 s apart" found a
// rep:3/split:3+2 key lost that way), and is never needed: no client
// was told it succeeded, and no reader saw it.
func newestReadable(t *core.SchemeTable, cands []*candidate) *candidate {
	var best, bestComplete *candidate
	for _, c := range cands {
		sch, ok := t.Lookup(c.scheme)
		if !ok || (sch.Traits().Pieces == kind.Shards && len(c.shards) < sch.Traits().Quorum) {
			continue // too few shards to decode
		}
		if best == nil || c.version > best.version {
			best = c
		}
		if c.complete && (bestComplete == nil || c.version > bestComplete.version) {
			bestComplete = c
		}
	}
	if bestComplete != nil {
		return bestComplete
	}
	return best
}

// markComplete sets each candidate's complete flag: it has a piece at every
// position of sh's placement for its scheme whose holder is up and not
// listed for rebuild (a split shard at its own index; a rep replica on the
// holder, the new coordinator's own included).
func markComplete(t *core.SchemeTable, sh *cluster.Shard, cands []*candidate) {
	for _, c := range cands {
		sch, ok := t.Lookup(c.scheme)
		c.complete = ok
		if !ok || core.IsPacked(sch) {
			continue // a packed object comes whole, from its decoded chunk
		}
		for p, h := range t.M.Holders(sh, sch.Entry().Spec.Nodes()) {
			if h.State != cluster.Up || slices.Contains(sh.Rebuild, p) {
				continue
			}
			has := c.shards[uint8(p)]
			if sch.Traits().Pieces == kind.Copies { // any holder's copy, not a position's
				has = slices.ContainsFunc(c.holders, func(n cluster.Node) bool { return n.ID == h.ID })
			}
			if !has {
				c.complete = false
				break
			}
		}
	}
}

// completeVersions stores again, in the background of a recovered shard,
// the pieces missing from the versions it restored incomplete (no complete
// one was readable), so that they regain their scheme's tolerance: every
// target is sent the piece of the committed version (its replica, or its
// shard) and keeps it if it has none of that version.
func (n *Repairer) completeVersions(ctx context.Context, keys []string) {
	for _, k := range keys {
		if _, err := n.RebuildKey(ctx, []byte(k), core.EveryPiece); err != nil && ctx.Err() == nil {
			n.Log.Debug("restored version not completed", "key", k, "err", err)
		}
	}
}

// listShard lists every piece (and directory entry) the live nodes of sh's
// placement (only those in only, unless it is nil) hold for its slots,
// asking them all at once, and calls fn for each, in placement order.
func (n *Repairer) listShard(ctx context.Context, m *cluster.Map, sh cluster.Shard, only map[cluster.NodeID]bool, fn func(cluster.Node, pieceEntry)) error {
	var nodes []cluster.Node
	for _, id := range sh.Placement {
		if node, ok := m.Node(id); ok && node.State != cluster.Failed && (only == nil || only[id]) {
			nodes = append(nodes, node)
		}
	}
	lists := make([][]pieceEntry, len(nodes))
	err := core.ForEach(ctx, len(nodes), len(nodes), func(ctx context.Context, i int) error {
		var err error
		lists[i], err = n.listPieces(ctx, nodes[i], uint16(sh.ID), sh.First, sh.Last)
		return err
	})
	if err != nil {
		return err
	}
	for i, entries := range lists {
		for _, e := range entries {
			fn(nodes[i], e)
		}
	}
	return nil
}

// listPieces asks node for every piece it holds of shard in slots
// first..last.
func (n *Repairer) listPieces(ctx context.Context, node cluster.Node, shard uint16, first, last int) ([]pieceEntry, error) {
	var out []pieceEntry
	req := listReq{Shard: shard, First: uint16(first), Last: uint16(last)}
	for {
		var b []byte
		var err error
		if node.ID == n.NodeID {
			b, err = n.OnListPieces(req.encode(nil))
		} else {
			b, err = n.Call(ctx, node, peer.MsgListPieces, req.encode(nil))
		}
		if err != nil {
			return nil, fmt.Errorf("server: listing the pieces of %s: %w", node.PeerAddr, err)
		}
		page, err := decodeListResp(b)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Entries...)
		if page.Next == 0 {
			return out, nil
		}
		req.Cursor = page.Next
	}
}

// listReq asks for one page of the pieces held of a shard in a slot range.
type listReq struct {
	Shard       uint16
	First, Last uint16
	Cursor      uint64
}

func (r listReq) encode(e wire.Enc) wire.Enc {
	return e.U16(r.Shard).U16(r.First).U16(r.Last).U64(r.Cursor)
}

func decodeListReq(b []byte) (listReq, error) {
	d := wire.NewDec(b)
	r := listReq{Shard: d.U16(), First: d.U16(), Last: d.U16(), Cursor: d.U64()}
	return r, d.Done()
}

type listResp struct {
	Next    uint64
	Entries []pieceEntry
}

func (r listResp) encode(e wire.Enc) wire.Enc {
	e = e.U64(r.Next).U32(uint32(len(r.Entries)))
	for _, p := range r.Entries {
		e = e.Bytes(p.Key).U16(p.Scheme).U64(p.Version).U8(p.Kind).U8(p.Index).I64(p.ExpireAt).U32(p.CRC)
	}
	return e
}

func decodeListResp(b []byte) (listResp, error) {
	d := wire.NewDec(b)
	r := listResp{Next: d.U64()}
	count := int(d.U32())
	if count > len(b) {
		return r, wire.ErrMalformed
	}
	for i := 0; i < count && d.Err() == nil; i++ {
		p := pieceEntry{Key: d.Bytes(), Scheme: d.U16(), Version: d.U64(), Kind: d.U8()}
		if p.Kind > core.PieceKindDirectory {
			return r, wire.ErrMalformed
		}
		p.Index, p.ExpireAt, p.CRC = d.U8(), d.I64(), d.U32()
		r.Entries = append(r.Entries, p)
	}
	return r, d.Done()
}

// listPageSize is how many pieces one ListPieces reply visits.
const listPageSize = 16384

// OnListPieces serves one page of the pieces this node holds of a shard
// whose keys fall in a slot range.
func (n *Repairer) OnListPieces(b []byte) ([]byte, error) {
	req, err := decodeListReq(b)
	if err != nil {
		return nil, err
	}
	var out listResp
	out.Next = n.Pieces.Scan(req.Cursor, listPageSize, func(k []byte, meta store.Meta) bool {
		ref, kind, ok := core.ParsePieceKey(k)
		if !ok || ref.Shard != req.Shard {
			return true
		}
		if slot := keyslot.Of(ref.Key); slot < int(req.First) || slot > int(req.Last) {
			return true
		}
		if kind == core.PieceKindDirectory {
			ref.Scheme = uint16(meta.Aux) // one entry per key, its scheme in the metadata
		}
		out.Entries = append(out.Entries, pieceEntry{Key: append([]byte(nil), ref.Key...), Scheme: ref.Scheme,
			Version: meta.Version, Kind: kind, Index: meta.Flags, ExpireAt: meta.ExpireAt, CRC: meta.Aux})
		return true
	})
	return out.encode(nil), nil
}

// lostReport describes a key none of whose versions can be read: its newest
// version's scheme and how many of its pieces are gone.
func lostReport(m *cluster.Map, key string, cands []*candidate) kind.LostKey {
	newest := cands[0]
	for _, c := range cands {
		if c.version > newest.version {
			newest = c
		}
	}
	e, _ := m.SchemeByID(newest.scheme)
	total := e.Spec.Nodes()
	return kind.LostKey{Key: key, Scheme: e.Name(), Lost: total - len(newest.shards), Total: total}
}

// loseUnnamed reports every key of sh's slots as maybe lost
// (lostkeys.Set.AddRange): sh's coordinator failed together with every node
// that kept its key directory (directoryIntact), so a key whose pieces all
// died with them is named by nothing.
func (n *Repairer) loseUnnamed(sh cluster.Shard) {
	n.Lost.AddRange(sh.First, sh.Last, kind.LostKey{Cause: "its shard's coordinator failed together with every node of the shard's key directory"})
	n.Log.Error("a shard's coordinator and key directory failed together: every key of its slots the node does not hold answers -LOST",
		"shard", sh.ID, "first", sh.First, "last", sh.Last)
}
