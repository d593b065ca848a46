package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
	"github.com/memgest/memgest/wire"
)

// This file is the core's side of repairing one key: re-creating the
// pieces its holders lack (rebuildKey, which the rebuild and the sweep
// call), a record found corrupt (repairRecord, repairKey), a holder's
// report of a corrupt piece (onRepair), and the node's checksum counters
// (integrity).

// PieceFilter says whether target t should be sent key's piece at version
// v.
type PieceFilter func(key []byte, t kind.Target, v uint64) bool

// EveryPiece sends a key's every piece again: a holder that has the
// committed version keeps its copy (storePiece), one that lacks it stores
// it.
func EveryPiece([]byte, kind.Target, uint64) bool { return true }

// RebuildKey stores again, at its committed version, the pieces of key
// that need says are missing, and returns the bytes sent. It is a
// read-modify-write that writes nothing, so no write of the key runs
// meanwhile and the pieces are of the committed version.
func (n *Coordinator) RebuildKey(ctx context.Context, key []byte, need PieceFilter) (int, error) {
	sent := 0
	err := n.RMW(ctx, key, func(cur Current) (*WriteOp, error) {
		if !cur.Exists {
			return nil, nil
		}
		op := &WriteOp{Key: key, Value: cur.Value, ExpireAt: cur.Meta.ExpireAt, Entry: cur.Entry}
		targets, pieces, err := PlanPieces(n.Ctl.Map(), n.KindOf(cur.Entry), op, cur.Meta.Version)
		if err != nil {
			return nil, err
		}
		var lostTargets []kind.Target
		var lostPieces []kind.Piece
		for i, t := range targets {
			if need(key, t, cur.Meta.Version) {
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

// integrity counts what checksums found and what was repaired, for INFO and
// /metrics.
type integrity struct {
	Corrupt  atomic.Int64 // corrupt copies found, by reads and the scrub
	Repaired atomic.Int64 // keys whose redundancy was stored again
	Scrubbed atomic.Int64 // bytes the scrub has checked
	Swept    atomic.Int64 // garbage pieces the sweep dropped (server/repair/sweep.go)
}

// repairRecord replaces key's corrupt primary record, if it is still at
// meta's version, with stored: a copy that passes its check (a scheme's
// Read found it; kind.Env).
func (n *Coordinator) repairRecord(key []byte, meta store.Meta, stored []byte) error {
	s := n.Inflight.Shard(key)
	s.Mu.Lock()
	var err error
	if cur, ok := n.Primary.Meta(key); ok && cur.Version == meta.Version {
		err = n.Primary.Put(key, stored, meta)
	}
	s.Mu.Unlock()
	if err != nil {
		return err
	}
	n.Health.Repaired.Add(1)
	n.Log.Warn("corrupt record repaired from a replica", "key", string(key))
	return nil
}

// repairLater stores key's pieces again in the background, after a read
// found some of them corrupt.
func (n *Coordinator) repairLater(key []byte) {
	key = append([]byte(nil), key...)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*n.Cfg.PeerTimeout)
		defer cancel()
		if err := n.RepairKey(ctx, key); err != nil {
			n.Log.Warn("repairing a key", "key", string(key), "err", err)
		}
	}()
}

// RepairKey stores every piece of key again from its committed value (a
// read-modify-write that writes nothing, as rebuild does).
func (n *Coordinator) RepairKey(ctx context.Context, key []byte) error {
	all := func([]byte, kind.Target, uint64) bool { return true }
	if _, err := n.RebuildKey(ctx, key, all); err != nil {
		return err
	}
	n.Health.Repaired.Add(1)
	return nil
}

// OnRepair is a coordinator's side of a holder's report that a piece of a
// key failed its checksum.
func (n *Coordinator) OnRepair(b []byte) ([]byte, error) {
	d := wire.NewDec(b)
	key := d.Bytes()
	if err := d.Done(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.Cfg.PeerTimeout)
	defer cancel()
	return nil, n.RepairKey(ctx, key)
}

// isCorruptReply says whether a peer answered that a piece failed its
// checksum.
func isCorruptReply(err error) bool {
	var re *transport.RemoteError
	return errors.As(err, &re) && strings.HasPrefix(re.Msg, kind.ErrPieceCorrupt.Error())
}
