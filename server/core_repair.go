package server

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

// pieceFilter says whether target t should be sent key's piece at version
// v.
type pieceFilter func(key []byte, t kind.Target, v uint64) bool

// everyPiece sends a key's every piece again: a holder that has the
// committed version keeps its copy (storePiece), one that lacks it stores
// it.
func everyPiece([]byte, kind.Target, uint64) bool { return true }

// rebuildKey stores again, at its committed version, the pieces of key
// that need says are missing, and returns the bytes sent. It is a
// read-modify-write that writes nothing, so no write of the key runs
// meanwhile and the pieces are of the committed version.
func (n *Coordinator) rebuildKey(ctx context.Context, key []byte, need pieceFilter) (int, error) {
	sent := 0
	err := n.rmw(ctx, key, func(cur current) (*writeOp, error) {
		if !cur.exists {
			return nil, nil
		}
		op := &writeOp{key: key, value: cur.value, expireAt: cur.meta.ExpireAt, entry: cur.entry}
		targets, pieces, err := planPieces(n.ctl.Map(), n.kindOf(cur.entry), op, cur.meta.Version)
		if err != nil {
			return nil, err
		}
		var lostTargets []kind.Target
		var lostPieces []kind.Piece
		for i, t := range targets {
			if need(key, t, cur.meta.Version) {
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
	corrupt  atomic.Int64 // corrupt copies found, by reads and the scrub
	repaired atomic.Int64 // keys whose redundancy was stored again
	scrubbed atomic.Int64 // bytes the scrub has checked
	swept    atomic.Int64 // garbage pieces the sweep dropped (repair_sweep.go)
}

// repairRecord replaces key's corrupt primary record, if it is still at
// meta's version, with stored: a copy that passes its check (a scheme's
// Read found it; kind.Env).
func (n *Coordinator) repairRecord(key []byte, meta store.Meta, stored []byte) error {
	s := n.inflight.shard(key)
	s.mu.Lock()
	var err error
	if cur, ok := n.primary.Meta(key); ok && cur.Version == meta.Version {
		err = n.primary.Put(key, stored, meta)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	n.health.repaired.Add(1)
	n.log.Warn("corrupt record repaired from a replica", "key", string(key))
	return nil
}

// repairLater stores key's pieces again in the background, after a read
// found some of them corrupt.
func (n *Coordinator) repairLater(key []byte) {
	key = append([]byte(nil), key...)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.PeerTimeout)
		defer cancel()
		if err := n.repairKey(ctx, key); err != nil {
			n.log.Warn("repairing a key", "key", string(key), "err", err)
		}
	}()
}

// repairKey stores every piece of key again from its committed value (a
// read-modify-write that writes nothing, as rebuild does).
func (n *Coordinator) repairKey(ctx context.Context, key []byte) error {
	all := func([]byte, kind.Target, uint64) bool { return true }
	if _, err := n.rebuildKey(ctx, key, all); err != nil {
		return err
	}
	n.health.repaired.Add(1)
	return nil
}

// onRepair is a coordinator's side of a holder's report that a piece of a
// key failed its checksum.
func (n *Coordinator) onRepair(b []byte) ([]byte, error) {
	d := wire.NewDec(b)
	key := d.Bytes()
	if err := d.Done(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.PeerTimeout)
	defer cancel()
	return nil, n.repairKey(ctx, key)
}

// isCorruptReply says whether a peer answered that a piece failed its
// checksum.
func isCorruptReply(err error) bool {
	var re *transport.RemoteError
	return errors.As(err, &re) && strings.HasPrefix(re.Msg, kind.ErrPieceCorrupt.Error())
}
