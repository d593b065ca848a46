// Package kindtest helps test the scheme kinds without a node: formed
// cluster maps, and an Env whose nodes' pieces live in memory.
package kindtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/store"
)

// Map is a formed map of nodes nodes with the schemes specs registered.
func Map(t testing.TB, nodes int, specs ...string) *cluster.Map {
	t.Helper()
	m := cluster.NewMap(nodes, min(nodes, 3))
	for i := range nodes {
		m = Apply(t, m, cluster.AddNode{Node: cluster.Node{ID: cluster.NodeID(fmt.Sprintf("%040x", i+1)),
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i), PeerAddr: fmt.Sprintf("127.0.0.1:%d", 17000+i)}})
	}
	for _, s := range specs {
		sp, err := scheme.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		m = Apply(t, m, cluster.CreateScheme{Spec: sp})
	}
	return m
}

// Apply returns m with c applied, failing the test if c is refused.
func Apply(t testing.TB, m *cluster.Map, c cluster.Command) *cluster.Map {
	t.Helper()
	next, err := cluster.Apply(m, c)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// KeyInSlots is a key whose hash slot is in first..last.
func KeyInSlots(t testing.TB, first, last int) []byte {
	t.Helper()
	for i := range 1_000_000 {
		k := fmt.Appendf(nil, "k%d", i)
		if s := keyslot.Of(k); s >= first && s <= last {
			return k
		}
	}
	t.Fatalf("no key in slots %d-%d", first, last)
	return nil
}

// Entry is m's catalogue entry named name.
func Entry(t testing.TB, m *cluster.Map, name string) cluster.SchemeEntry {
	t.Helper()
	e, ok := m.Scheme(name)
	if !ok {
		t.Fatalf("no scheme %s", name)
	}
	return e
}

// Env is a kind.Env over in-memory nodes: each node's pieces in a map,
// the lost keys reported, the records repaired and the corrupt copies
// counted. Its zero value is not usable: make one with NewEnv.
type Env struct {
	M    *cluster.Map
	Node cluster.NodeID // the node the scheme runs on
	// Newer makes Superseded true: a newer commit released the version.
	Newer bool

	mu       sync.Mutex
	pieces   map[cluster.NodeID]map[string][]byte
	Lost     []kind.LostKey
	Repaired map[string][]byte
	Corrupts int
	Repairs  []string // keys RepairLater was asked for
}

// NewEnv is an Env of map m for node self, holding no piece.
func NewEnv(m *cluster.Map, self cluster.NodeID) *Env {
	return &Env{M: m, Node: self, pieces: map[cluster.NodeID]map[string][]byte{}, Repaired: map[string][]byte{}}
}

// Store keeps p on node, as the node's piece store would.
func (e *Env) Store(node cluster.NodeID, p kind.Piece) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pieces[node] == nil {
		e.pieces[node] = map[string][]byte{}
	}
	ref := kind.PieceRef{Key: p.Key, Scheme: p.Scheme, Version: p.Version, Versioned: p.Versioned, HasIndex: p.Versioned, Index: p.Index}
	e.pieces[node][refKey(ref)] = p.Data
}

// Drop removes every piece node holds, as a wipe would.
func (e *Env) Drop(node cluster.NodeID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pieces, node)
}

// refKey names the slot a piece lives in: one per key and scheme for a
// copy, one per version and index for a shard.
func refKey(r kind.PieceRef) string {
	if r.Versioned {
		return fmt.Sprintf("%d/%d/%d/%s", r.Scheme, r.Version, r.Index, r.Key)
	}
	return fmt.Sprintf("%d/copy/%s", r.Scheme, r.Key)
}

// Self is the node the scheme runs on.
func (e *Env) Self() cluster.NodeID { return e.Node }

// Map is M.
func (e *Env) Map() *cluster.Map { return e.M }

// LoadPiece is GetPiece on the scheme's own node.
func (e *Env) LoadPiece(r kind.PieceRef) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	data, ok := e.pieces[e.Node][refKey(r)]
	if !ok {
		return nil, kind.ErrPieceGone
	}
	return data, nil
}

// GetPiece returns the piece node holds, or why not.
func (e *Env) GetPiece(_ context.Context, node cluster.Node, r kind.PieceRef) ([]byte, error) {
	if node.State == cluster.Failed {
		return nil, kind.ErrNodeFailed
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	data, ok := e.pieces[node.ID][refKey(r)]
	if !ok {
		return nil, kind.ErrPieceGone
	}
	return data, nil
}

// Superseded is Newer.
func (e *Env) Superseded([]byte, uint64) bool { return e.Newer }

// RepairLater records key.
func (e *Env) RepairLater(key []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Repairs = append(e.Repairs, string(key))
}

// RepairRecord records the repaired bytes of key.
func (e *Env) RepairRecord(key []byte, _ store.Meta, stored []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Repaired[string(key)] = stored
	return nil
}

// Corrupt counts a corrupt copy.
func (e *Env) Corrupt() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Corrupts++
}

// ReportLost records k and returns its error.
func (e *Env) ReportLost(k kind.LostKey) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Lost = append(e.Lost, k)
	return k.Err()
}

// Value is a kind.Value of fixed bytes.
type Value []byte

// Bytes is v.
func (v Value) Bytes() []byte { return v }

// CRC is v's CRC32C.
func (v Value) CRC() uint32 { return bigcopy.Checksum(v) }
