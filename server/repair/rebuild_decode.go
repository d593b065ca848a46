package repair

import (
	"context"
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/split"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
)

// This file is the bulk rebuild of split keys. Rebuilding one split key on
// its own costs k round trips to fetch shards; here a batch of keys fetches
// every shard it needs with one GetPieces request per node, decodes each
// key, and sends the missing shards in one PutPieces frame per node. Like
// rebuildCopies it reads records without waiting for writes and checks them
// again once the batch is stored (releaseChanged): split pieces are stored
// per version, so a shard of a version that a write replaced meanwhile is
// never read, only released.

// decodeJob is one key of a bulk split batch.
type decodeJob struct {
	item    rebuildItem
	key     []byte
	shard   uint16 // the shard that keeps key (kind.Piece)
	meta    store.Meta
	entry   cluster.SchemeEntry
	targets []kind.Target
	shards  [][]byte // fetched shards by index; nil when not (yet) fetched
}

// shardFetch is what one node is asked for: refs, and for each, which job
// and shard index it fills.
type shardFetch struct {
	node cluster.Node
	refs []peer.PieceRef
	into [][2]int // job, shard index
}

// rebuildDecodes rebuilds a batch of split keys in bulk and returns the
// bytes sent and the items it could not decode (too few shards listed or
// fetched), which the caller rebuilds one by one.
func (n *Repairer) rebuildDecodes(ctx context.Context, items []rebuildItem, have held) (int, []rebuildItem, error) {
	m := n.Ctl.Map()
	jobs, left := planDecodes(m, n.Schemes(m), n.Primary, items, have)
	fetches := shardFetches(jobs, have)
	if err := n.fetchShards(ctx, jobs, fetches); err != nil {
		return 0, nil, err
	}
	var b core.PieceBatch
	var sent []core.Release
	bytes := 0
	for _, j := range jobs {
		pieces, err := j.missingPieces(have)
		if err != nil {
			left = append(left, j.item)
			continue
		}
		for _, p := range pieces {
			b.Put(p.targets, p.pieces, len(sent))
			bytes += len(p.pieces[0].Data)
		}
		sent = append(sent, core.Release{Key: j.key, Scheme: j.meta.Scheme, Version: j.meta.Version, Exact: true})
	}
	for _, err := range n.SendBatch(ctx, &b, len(sent)) {
		if err != nil {
			return bytes, left, fmt.Errorf("server: rebuilding shards: %w", err)
		}
	}
	n.releaseChanged(ctx, sent)
	return bytes, left, nil
}

// planDecodes reads the records of items and returns a job for each split
// key whose k shards the listing shows on live holders, and the items left
// for the per-key path.
func planDecodes(m *cluster.Map, t *core.SchemeTable, primary *store.Store, items []rebuildItem, have held) ([]*decodeJob, []rebuildItem) {
	var jobs []*decodeJob
	var left []rebuildItem
	for _, it := range items {
		meta, ok := primary.Meta(it.key)
		sch, known := t.Lookup(meta.Scheme)
		if !ok || !known || sch.Traits().Rebuild != kind.RebuildDecode {
			left = append(left, it)
			continue
		}
		entry := sch.Entry()
		targets, err := sch.Targets(m, it.key)
		if err != nil || listedShards(it.key, targets, meta.Version, have) < entry.Spec.K {
			left = append(left, it)
			continue
		}
		jobs = append(jobs, &decodeJob{item: it, key: it.key, shard: kind.ShardID(m, it.key), meta: meta, entry: entry, targets: targets,
			shards: make([][]byte, len(targets))})
	}
	return jobs, left
}

// listedShards counts the targets that the listing shows holding key's
// shard at version v.
func listedShards(key []byte, targets []kind.Target, v uint64, have held) int {
	count := 0
	for _, t := range targets {
		if t.Node.State != cluster.Failed && !have.lacks(key, t, v) {
			count++
		}
	}
	return count
}

// shardFetches asks, for each job, for k shards the listing shows, grouped
// by node.
func shardFetches(jobs []*decodeJob, have held) []*shardFetch {
	byNode := map[cluster.NodeID]*shardFetch{}
	var out []*shardFetch
	for ji, j := range jobs {
		picked := 0
		for _, t := range j.targets {
			if picked == j.entry.Spec.K {
				break
			}
			if t.Node.State == cluster.Failed || have.lacks(j.key, t, j.meta.Version) {
				continue
			}
			f := byNode[t.Node.ID]
			if f == nil {
				f = &shardFetch{node: t.Node}
				byNode[t.Node.ID] = f
				out = append(out, f)
			}
			f.refs = append(f.refs, peer.PieceRef{Key: j.key, Shard: j.shard, Scheme: j.entry.ID, Version: j.meta.Version,
				Versioned: true, HasIndex: true, Index: uint8(t.Index)})
			f.into = append(f.into, [2]int{ji, t.Index})
			picked++
		}
	}
	return out
}

// fetchShards sends every node its GetPieces request at once and puts the
// shards found into their jobs.
func (n *Repairer) fetchShards(ctx context.Context, jobs []*decodeJob, fetches []*shardFetch) error {
	reqs := make([]core.PeerReq, len(fetches))
	for i, f := range fetches {
		reqs[i] = core.PeerReq{Node: f.node, Typ: peer.MsgGetPieces, Payload: peer.EncodeGetPieces(f.refs)}
	}
	replies, errs := n.CallEach(ctx, reqs)
	for i, f := range fetches {
		if errs[i] != nil {
			continue // those jobs fall back to the per-key path
		}
		slots, err := peer.DecodeGetPiecesResp(replies[i], len(f.refs))
		if err != nil {
			return fmt.Errorf("server: shards from %s: %w", f.node.PeerAddr, err)
		}
		for s, slot := range slots {
			if slot.Status == peer.PieceFound {
				jobs[f.into[s][0]].shards[f.into[s][1]] = slot.Data
			}
		}
	}
	return nil
}

// repairPieces is the shards of one key for the targets that lack them.
type repairPieces struct {
	targets []kind.Target
	pieces  []kind.Piece
}

// missingPieces reconstructs the shards the job did not fetch from those it
// did, and returns the shards its live holders lack.
func (j *decodeJob) missingPieces(have held) ([]repairPieces, error) {
	spec := j.entry.Spec
	if err := split.Rebuild(j.shards, j.key, spec.K, spec.M); err != nil {
		return nil, err
	}
	all := j.shards
	var out []repairPieces
	for _, t := range j.targets {
		if t.Node.State == cluster.Failed || !have.lacks(j.key, t, j.meta.Version) {
			continue
		}
		shard := all[t.Index]
		p := kind.Piece{Key: j.key, Shard: j.shard, Scheme: j.entry.ID, Version: j.meta.Version, ExpireAt: j.meta.ExpireAt,
			Index: uint8(t.Index), Versioned: true, CRC: bigcopy.Checksum(shard), Data: shard}
		out = append(out, repairPieces{targets: []kind.Target{t}, pieces: []kind.Piece{p}})
	}
	return out, nil
}
