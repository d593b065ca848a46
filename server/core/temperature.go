package core

import (
	"context"
	"hash/maphash"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/store"
)

// This file is the coordinator's half of a temperature policy
// (cluster.PolicyTemperature, decision 0010): an approximate record of
// when each key was last used, kept by hashing keys into a fixed table of
// counters as Redis keeps a 24-bit LRU clock per key, but without a byte
// in any record (no per-key state, no timers); the moves the node's policy
// loop (server/temperature.go) makes with it; and their counts.

const (
	// sketchBits sizes the access table: 2^20 cells of 8 bytes, 8 MiB per
	// node, made when a temperature policy is first seen.
	sketchBits = 20
	sketchMask = 1<<sketchBits - 1
	// PromoteReads is how many reads of a cold key within the policy's
	// idle time move it back to the hot scheme.
	PromoteReads = 3
	// promoteQueue bounds the cold keys waiting to be moved back.
	promoteQueue = 1024
)

// accessSketch is when keys were last used and how often lately, by hash:
// each key has two cells, each cell the last second a key hashed there was
// used (+1; 0: never) and how many uses it saw within the idle time before
// that. A key's answer is the least of its two cells, so a key looks used
// only if both its cells were: another key sharing one cell cannot keep it
// hot alone. A collision errs toward hot, never toward cold.
type accessSketch struct {
	seed maphash.Seed
	// start is the second the sketch was made, or the node last took
	// keys over: a cell never used counts as used then.
	start atomic.Int64
	cells []atomic.Uint64
}

func newAccessSketch(now int64) *accessSketch {
	s := &accessSketch{seed: maphash.MakeSeed(), cells: make([]atomic.Uint64, 1<<sketchBits)}
	s.start.Store(now)
	return s
}

func (s *accessSketch) probes(key []byte) (*atomic.Uint64, *atomic.Uint64) {
	h := maphash.Bytes(s.seed, key)
	return &s.cells[h&sketchMask], &s.cells[(h>>32)&sketchMask]
}

// touch records a use of key at second now and returns the uses counted
// within window seconds, this one included. Unless count is set, a cell
// already stamped this second is left alone, so that reads of hot keys
// write nothing most of the time.
func (s *accessSketch) touch(key []byte, now, window int64, count bool) uint32 {
	a, b := s.probes(key)
	return min(s.bump(a, now, window, count), s.bump(b, now, window, count))
}

func (s *accessSketch) bump(c *atomic.Uint64, now, window int64, count bool) uint32 {
	for {
		old := c.Load()
		t, uses := s.last(old), uint32(old)
		if !count && t == now && old != 0 {
			return uses
		}
		if now-t > window {
			uses = 0
		}
		if uses < 1<<31 {
			uses++
		}
		if c.CompareAndSwap(old, uint64(now+1)<<32|uint64(uses)) {
			return uses
		}
	}
}

// last is the second a cell was last used.
func (s *accessSketch) last(cell uint64) int64 {
	if cell == 0 {
		return s.start.Load()
	}
	return int64(cell>>32) - 1
}

// idle is how many seconds ago key was last used, at most.
func (s *accessSketch) idle(key []byte, now int64) int64 {
	a, b := s.probes(key)
	return now - min(s.last(a.Load()), s.last(b.Load()))
}

// Temperature is a node's state for a temperature policy: the access
// sketch, the cold keys read often enough to move back, the counts.
type Temperature struct {
	sketch atomic.Pointer[accessSketch]
	// Promote takes the cold keys read PromoteReads times within the idle
	// time; the policy loop moves them back to the hot scheme. Full: the
	// key waits for its next read.
	Promote chan []byte
	// ToCold and ToHot count the moves committed by the policy: idle keys
	// moved to the cold scheme, and cold keys moved back by a write or
	// repeated reads.
	ToCold, ToHot atomic.Int64
	// BytesSaved is the memory the moves saved, net: each move's logical
	// bytes times the difference of its schemes' overheads.
	BytesSaved atomic.Int64
	// Cursor is where the policy loop's scan of the primary store resumes.
	Cursor uint64
}

// policyMove marks a write the temperature policy makes or causes, which
// commitLocked counts.
type policyMove uint8

const (
	moveNone policyMove = iota
	moveToCold
	moveToHot
)

// seconds is the failure clock in whole seconds since the node started:
// the injected clock in tests.
func (n *Coordinator) seconds() int64 { return n.MonoNow() / 1e9 }

// sketchFor returns the access sketch, made on first use.
func (n *Coordinator) sketchFor() *accessSketch {
	if s := n.Temp.sketch.Load(); s != nil {
		return s
	}
	n.Temp.sketch.CompareAndSwap(nil, newAccessSketch(n.seconds()))
	return n.Temp.sketch.Load()
}

// DropSketch frees the access sketch once no temperature policy is set.
func (n *Coordinator) DropSketch() { n.Temp.sketch.Store(nil) }

// TookOver restarts the idle time of keys the sketch never saw: the node
// took shards over (a failover), whose keys were used on their former
// coordinator, not here, and must not all look idle since the sketch was
// made.
func (n *Coordinator) TookOver() { n.sketchFor().start.Store(n.seconds()) }

// Accessed records a client's read of cur, key's committed state, for a
// temperature policy: a use of the key, and for a key in the cold scheme
// one more read toward moving it back. Without such a policy it does
// nothing.
func (n *Coordinator) Accessed(key []byte, cur Current) {
	p := n.Ctl.Map().Policy.Temperature()
	if p == nil || !cur.Exists {
		return
	}
	cold := cur.Entry.ID == p.Cold
	if n.sketchFor().touch(key, n.seconds(), p.IdleSeconds, cold) >= PromoteReads && cold {
		select {
		case n.Temp.Promote <- append([]byte(nil), key...):
		default:
		}
	}
}

// written records a write of a value as a use of its key, and marks a
// write that names no scheme (picked) and takes a key from the cold
// scheme back to the hot one as the policy's move.
func (n *Coordinator) written(m *cluster.Map, cur Current, op *WriteOp, picked bool) {
	p := m.Policy.Temperature()
	if p == nil {
		return
	}
	n.sketchFor().touch(op.Key, n.seconds(), p.IdleSeconds, false)
	if picked && cur.Exists && cur.Entry.ID == p.Cold && op.Entry.ID == p.Hot {
		op.policyMove, op.policyFrom = moveToHot, cur.Entry
	}
}

// countMove counts op, a policy's move, once committed.
func (n *Coordinator) countMove(op *WriteOp) {
	saved := int64(float64(op.logicalBytes()) * (op.policyFrom.Spec.Overhead() - op.Entry.Spec.Overhead()))
	n.Temp.BytesSaved.Add(saved)
	if op.policyMove == moveToCold {
		n.Temp.ToCold.Add(1)
	} else {
		n.Temp.ToHot.Add(1)
	}
}

// SampleIdle scans up to count records of the primary store from the
// policy loop's cursor and returns at most want keys in p's hot scheme
// idle longer than its idle time, stopping at the want-th. The scan wraps
// around, so every key is looked at once per pass, without a timer per
// key. Only the policy loop calls it.
func (n *Coordinator) SampleIdle(p *cluster.Policy, count, want int) [][]byte {
	sk, now := n.sketchFor(), n.seconds()
	var idle [][]byte
	n.Temp.Cursor = n.Primary.Scan(n.Temp.Cursor, count, func(key []byte, m store.Meta) bool {
		if m.Scheme == p.Hot && sk.idle(key, now) > p.IdleSeconds {
			idle = append(idle, append([]byte(nil), key...))
		}
		return len(idle) < want
	})
	return idle
}

// MoveForPolicy moves key from p's scheme from to its scheme to, as
// SCHEME.MOVE does (a read-modify-write: never absent, linearizable), if
// this node coordinates it, it is still in from, and, for a move to cold,
// still idle. It reports whether it moved the key.
func (n *Coordinator) MoveForPolicy(ctx context.Context, p *cluster.Policy, key []byte, toCold bool) (bool, error) {
	m := n.Ctl.Map()
	if c, ok := m.Coordinator(keyslot.Of(key)); !ok || c.ID != n.NodeID {
		return false, nil
	}
	from, to, move := p.Cold, p.Hot, moveToHot
	if toCold {
		from, to, move = p.Hot, p.Cold, moveToCold
	}
	target, ok := m.SchemeByID(to)
	if !ok {
		return false, nil
	}
	moved := false
	err := n.RMW(ctx, key, func(cur Current) (*WriteOp, error) {
		still := cur.Exists && cur.Entry.ID == from
		if toCold && still {
			still = n.sketchFor().idle(key, n.seconds()) > p.IdleSeconds
		}
		if !still {
			return nil, nil
		}
		moved = true
		return &WriteOp{Key: key, Value: cur.Value, ExpireAt: cur.Meta.ExpireAt, Entry: target,
			Shrinks: target.Spec.Overhead() <= cur.Entry.Spec.Overhead(), policyMove: move, policyFrom: cur.Entry}, nil
	})
	return moved && err == nil, err
}

// IdleSeconds is about how many seconds ago key was last used, from the
// access sketch (at most; a collision makes it look used more recently):
// OBJECT IDLETIME's answer. ok is false without a temperature policy, when
// the node keeps no record of uses.
func (n *Coordinator) IdleSeconds(key []byte) (idle int64, ok bool) {
	if n.Ctl.Map().Policy.Temperature() == nil {
		return 0, false
	}
	return max(n.sketchFor().idle(key, n.seconds()), 0), true
}
