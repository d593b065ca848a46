package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/store"
)

// This file is rebuild (DESIGN.md §4, issue 4): when a spare takes a failed
// node's place, the map lists the placement positions of each shard whose
// pieces went with the failed node (Shard.Rebuild). The shard's coordinator
// re-creates them: for every key it coordinates in the shard, the replica
// or split shard the key keeps at such a position is made again from the
// committed value (a rep value is local; a split value is decoded from any
// k shards) and stored on the node now at that position. Each key is
// rebuilt as a read-modify-write that writes nothing, so no write of the
// key runs meanwhile and the piece sent is of the committed version. When
// the whole shard is done, the coordinator proposes RebuildDone.
//
// Still simple: one shard at a time per node, keys in store order, paced by
// --rebuild-rate; a rebuild interrupted by another failure starts over.

// rebuildProgress counts a node's rebuild work for INFO, /metrics and
// memgest status.
type rebuildProgress struct {
	keysTotal, keysDone, bytesDone atomic.Int64
	started                        atomic.Int64 // unix ns of the first rebuild
}

// RebuildReport is a node's rebuild progress as memgest status shows it.
type RebuildReport struct {
	KeysDone  int64   `json:"keys_done"`
	KeysTotal int64   `json:"keys_total"`
	BytesDone int64   `json:"bytes_done"`
	Seconds   float64 `json:"seconds"` // since the node's first rebuild began
}

func (p *rebuildProgress) report() RebuildReport {
	r := RebuildReport{KeysDone: p.keysDone.Load(), KeysTotal: p.keysTotal.Load(), BytesDone: p.bytesDone.Load()}
	if t := p.started.Load(); t != 0 {
		r.Seconds = time.Since(time.Unix(0, t)).Seconds()
	}
	return r
}

// add sums reports of several nodes; the duration is the longest.
func (r RebuildReport) add(o RebuildReport) RebuildReport {
	return RebuildReport{KeysDone: r.KeysDone + o.KeysDone, KeysTotal: r.KeysTotal + o.KeysTotal,
		BytesDone: r.BytesDone + o.BytesDone, Seconds: max(r.Seconds, o.Seconds)}
}

// Rate is the bytes rebuilt per second so far.
func (r RebuildReport) Rate() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.BytesDone) / r.Seconds
}

// ETA estimates the time left from the keys done so far, or 0.
func (r RebuildReport) ETA() time.Duration {
	if r.KeysDone == 0 || r.KeysDone >= r.KeysTotal {
		return 0
	}
	perKey := r.Seconds / float64(r.KeysDone)
	return time.Duration(perKey * float64(r.KeysTotal-r.KeysDone) * float64(time.Second))
}

// startRebuilds begins rebuilding every shard this node coordinates whose
// map entry lists lost positions, once its records are recovered.
func (n *Node) startRebuilds(ctx context.Context) {
	n.startShardJobs(ctx, "rebuild", &n.rebuilding,
		func(sh cluster.Shard) bool { return len(sh.Rebuild) > 0 && !sh.Recovering },
		n.rebuildShard,
		func(sh cluster.Shard) cluster.Command {
			return cluster.RebuildDone{Shard: sh.ID, By: n.id, Positions: sh.Rebuild}
		})
}

// rebuildShard re-creates the pieces at sh.Rebuild's positions for every key
// of sh this node coordinates.
func (n *Node) rebuildShard(ctx context.Context, m *cluster.Map, sh cluster.Shard) error {
	keys := n.keysInSlots(sh.First, sh.Last)
	n.rebuild.started.CompareAndSwap(0, time.Now().UnixNano())
	n.rebuild.keysTotal.Add(int64(len(keys)))
	start := time.Now()
	var sent int64
	for _, key := range keys {
		b, err := n.rebuildKey(ctx, key, sh.Rebuild)
		var lost *lostError
		if errors.As(err, &lost) {
			continue // beyond its tolerance: reads report it, nothing to rebuild
		}
		if err != nil {
			return err
		}
		sent += int64(b)
		n.rebuild.keysDone.Add(1)
		n.rebuild.bytesDone.Add(int64(b))
		n.pause(ctx, start, sent, n.cfg.RebuildRate)
	}
	n.log.Info("shard rebuilt", "shard", sh.ID, "keys", len(keys), "bytes", sent, "took", time.Since(start))
	return nil
}

// keysInSlots lists the keys of this node's primary store in a slot range.
func (n *Node) keysInSlots(first, last int) [][]byte {
	var out [][]byte
	var cursor uint64
	for {
		cursor = n.primary.Scan(cursor, 1024, func(k []byte, _ store.Meta) bool {
			if s := cluster.Slot(k); s >= first && s <= last {
				out = append(out, append([]byte(nil), k...))
			}
			return true
		})
		if cursor == 0 {
			return out
		}
	}
}

// rebuildKey stores key's pieces for the given placement positions again,
// and for every position a survivor stands in for (its stand-in may have
// changed since), at its committed version, and returns the bytes sent.
func (n *Node) rebuildKey(ctx context.Context, key []byte, positions []int) (int, error) {
	sent := 0
	err := n.rmw(ctx, key, func(cur current) (*writeOp, error) {
		if !cur.exists {
			return nil, nil
		}
		m := n.ctl.Map()
		op := &writeOp{key: key, value: cur.value, expireAt: cur.meta.ExpireAt, entry: cur.entry}
		targets, pieces, err := planPieces(m, op, cur.meta.Version)
		if err != nil {
			return nil, err
		}
		sh := m.ShardOf(cluster.Slot(key))
		// The directory nodes may have changed with the failure too.
		n.enqueueDirectory(dirEntry{Key: key, Scheme: cur.entry.ID, Version: cur.meta.Version, ExpireAt: cur.meta.ExpireAt})
		var lostTargets []target
		var lostPieces []piece
		for i, t := range targets {
			if slices.Contains(positions, t.index) || m.StoodIn(sh, t.index) {
				lostTargets, lostPieces = append(lostTargets, t), append(lostPieces, pieces[i])
				sent += len(pieces[i].Data)
			}
		}
		if len(lostTargets) == 0 {
			return nil, nil
		}
		if err := n.groups.send(ctx, n, lostTargets, lostPieces); err != nil {
			return nil, fmt.Errorf("server: rebuilding %q: %w", key, err)
		}
		return nil, nil // nothing to commit: the key keeps its version
	})
	return sent, err
}
