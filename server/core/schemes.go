package core

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
)

// SchemeTable is the node's bound schemes for one map: one kind.Scheme per
// catalogue entry, indexed by scheme id, and what the whole catalogue
// says about routing (runsLocally).
type SchemeTable struct {
	M    *cluster.Map
	byID []kind.Scheme
	// AllImmediate: every scheme's writes commit as they begin.
	AllImmediate bool
	// AllLocalReads: every scheme reads from the coordinator's record.
	AllLocalReads bool
	// packed are the schemes whose objects live in chunks of their own
	// (kind.Packed), where a read that misses the primary store looks.
	packed []kind.Packed
}

// boundSchemes keeps the table of the newest map a lookup saw; a scheme
// whose entry did not change keeps its binding across maps.
type boundSchemes struct {
	cur atomic.Pointer[SchemeTable]
	mu  sync.Mutex // serialises rebuilding the table
}

// Schemes returns the table for m, building it if m is newer than the
// one it has.
func (n *Coordinator) Schemes(m *cluster.Map) *SchemeTable {
	if t := n.bound.cur.Load(); t != nil && t.M == m {
		return t
	}
	n.bound.mu.Lock()
	defer n.bound.mu.Unlock()
	old := n.bound.cur.Load()
	if old != nil && old.M == m {
		return old
	}
	t := BindTable(n.Kinds, m, old, schemeEnv{n}, func(e cluster.SchemeEntry, err error) {
		n.Log.Error("a scheme of the catalogue cannot be served", "scheme", e.Name(), "err", err)
	})
	if old == nil || old.M.Epoch <= m.Epoch {
		n.bound.cur.Store(t)
	}
	return t
}

// BindTable binds every scheme of m's catalogue to env with kinds,
// keeping old's binding of an entry that did not change, and reports
// (refused) an entry no kind package serves.
func BindTable(kinds kind.Registry, m *cluster.Map, old *SchemeTable, env kind.Env, refused func(cluster.SchemeEntry, error)) *SchemeTable {
	t := &SchemeTable{M: m, AllImmediate: true, AllLocalReads: true}
	for _, e := range m.Schemes {
		s := old.reuse(e)
		if s == nil {
			var err error
			if s, err = kinds.Bind(e, env); err != nil {
				refused(e, err)
				continue
			}
		}
		for int(e.ID) >= len(t.byID) {
			t.byID = append(t.byID, nil)
		}
		t.byID[e.ID] = s
		if p, ok := s.(kind.Packed); ok {
			t.packed = append(t.packed, p)
		}
		t.AllImmediate = t.AllImmediate && s.Traits().Immediate
		t.AllLocalReads = t.AllLocalReads && s.Traits().ReadsLocally
	}
	return t
}

// reuse returns t's binding of entry e if it has one for that very entry.
func (t *SchemeTable) reuse(e cluster.SchemeEntry) kind.Scheme {
	if t == nil || int(e.ID) >= len(t.byID) || t.byID[e.ID] == nil || t.byID[e.ID].Entry() != e {
		return nil
	}
	return t.byID[e.ID]
}

// Of returns the bound scheme with id, or nil.
func (t *SchemeTable) Of(id uint16) kind.Scheme {
	if int(id) < len(t.byID) {
		return t.byID[id]
	}
	return nil
}

// KindOf returns entry's bound scheme: from the current map's table, or
// bound afresh when entry is not in it (a scheme the map has dropped). A
// scheme id is never reused and its spec never changes (cluster.Map), so
// the id alone finds the binding.
func (n *Coordinator) KindOf(entry cluster.SchemeEntry) kind.Scheme {
	if s := n.Schemes(n.Ctl.Map()).Of(entry.ID); s != nil {
		return s
	}
	s, err := n.Kinds.Bind(entry, schemeEnv{n})
	if err != nil {
		return unsupported{entry: entry, err: err}
	}
	return s
}

// schemeEnv is the node as its schemes see it (kind.Env).
type schemeEnv struct{ n *Coordinator }

func (e schemeEnv) Self() cluster.NodeID { return e.n.NodeID }
func (e schemeEnv) Map() *cluster.Map    { return e.n.Ctl.Map() }
func (e schemeEnv) Corrupt()             { e.n.Health.Corrupt.Add(1) }
func (e schemeEnv) RepairLater(key []byte) {
	e.n.repairLater(key)
}

func (e schemeEnv) LoadPiece(r kind.PieceRef) ([]byte, error) { return e.n.LoadPiece(peer.PieceRef(r)) }

func (e schemeEnv) GetPiece(ctx context.Context, node cluster.Node, r kind.PieceRef) ([]byte, error) {
	return e.n.getPiece(ctx, node, peer.PieceRef(r))
}

func (e schemeEnv) Superseded(key []byte, v uint64) bool { return e.n.superseded(key, v) }

func (e schemeEnv) RepairRecord(key []byte, meta store.Meta, stored []byte) error {
	return e.n.repairRecord(key, meta, stored)
}

func (e schemeEnv) ReportLost(k kind.LostKey) error {
	e.n.Lost.Add(k)
	return k.Err()
}

// unsupported stands for a catalogue entry of a kind this node has no
// package for (a map from a newer version, say): every write and read of
// it fails with err, naming the scheme, and it claims nothing.
type unsupported struct {
	entry cluster.SchemeEntry
	err   error
}

func (u unsupported) Entry() cluster.SchemeEntry         { return u.entry }
func (u unsupported) Traits() kind.Traits                { return kind.Traits{} }
func (u unsupported) Record(kind.Value) ([]byte, uint32) { return nil, 0 }
func (u unsupported) Detached(store.Meta) int64          { return 0 }
func (u unsupported) Targets(*cluster.Map, []byte) ([]kind.Target, error) {
	return nil, u.err
}
func (u unsupported) Encode(kind.Piece, kind.Value, []kind.Target) ([]kind.Piece, error) {
	return nil, u.err
}
func (u unsupported) Misplaced(*cluster.Map, []byte, int, cluster.NodeID, cluster.NodeID) bool {
	return false
}
func (u unsupported) Read(context.Context, []byte, store.Meta, []byte) ([]byte, error) {
	return nil, u.err
}
func (u unsupported) Fill(context.Context, []byte, store.Meta) ([]byte, []byte, uint32, error) {
	return nil, nil, 0, u.err
}

// IsPacked says whether sch keeps its objects in chunks of its own
// (kind.Packed).
func IsPacked(sch kind.Scheme) bool {
	_, ok := sch.(kind.Packed)
	return ok
}

// Lookup returns the bound scheme with id, if the table's map has it.
func (t *SchemeTable) Lookup(id uint16) (kind.Scheme, bool) {
	s := t.Of(id)
	return s, s != nil
}
func (u unsupported) Verify(context.Context, []byte, store.Meta, []byte) kind.Check {
	return kind.Check{Problems: []string{u.err.Error()}}
}
