package rep

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/store"
)

// fixture is a rep:3 scheme on the coordinator of key in a 4-node map.
type fixture struct {
	m     *cluster.Map
	env   *kindtest.Env
	s     kind.Scheme
	coord cluster.NodeID
}

func newFixture(t *testing.T, key []byte) fixture { return fixtureOf(t, 4, key) }

// fixtureOf is newFixture in a map of nodes nodes.
func fixtureOf(t *testing.T, nodes int, key []byte) fixture {
	m := kindtest.Map(t, nodes, "rep:3")
	coord, _ := m.Coordinator(keyslot.Of(key))
	env := kindtest.NewEnv(m, coord.ID)
	s, err := New(kindtest.Entry(t, m, "rep:3"), env)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{m: m, env: env, s: s, coord: coord.ID}
}

// store writes value's replicas at version v where Targets and Encode put
// them.
func (f fixture) store(t *testing.T, key, value []byte, v uint64) []kind.Target {
	targets, err := f.s.Targets(f.m, key)
	if err != nil {
		t.Fatal(err)
	}
	base := kind.Piece{Key: key, Scheme: f.s.Entry().ID, Version: v}
	pieces, err := f.s.Encode(base, kindtest.Value(value), targets)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pieces {
		f.env.Store(targets[i].Node.ID, p)
	}
	return targets
}

// Ring §5.2: the coordinator's record is the first copy, so R−1 replicas
// go to the key's other holders, each the whole value with its CRC32C.
func TestReplicasGoToTheOtherHolders(t *testing.T) {
	key := []byte("k")
	f := newFixture(t, key)
	targets := f.store(t, key, []byte("value"), 3)
	if len(targets) != 2 || slices.ContainsFunc(targets, func(t kind.Target) bool { return t.Node.ID == f.coord }) {
		t.Fatalf("targets %+v: want the two holders other than the coordinator", targets)
	}
	pieces, _ := f.s.Encode(kind.Piece{Key: key}, kindtest.Value("value"), targets)
	for _, p := range pieces {
		if string(p.Data) != "value" || p.CRC != bigcopy.Checksum([]byte("value")) || p.Versioned {
			t.Fatalf("piece %+v: want the value itself, its CRC32C, one slot per key", p)
		}
	}
	for _, holder := range []cluster.NodeID{targets[0].Node.ID, targets[1].Node.ID} {
		if f.s.Misplaced(f.m, key, 0, holder, f.coord) {
			t.Errorf("a replica on holder %s is called misplaced", holder)
		}
	}
	if !f.s.Misplaced(f.m, key, 0, f.coord, f.coord) {
		t.Error("a replica on the coordinator itself is kept")
	}
}

// A corrupt primary record is read from a replica that passes its check,
// and repaired; with no good replica the read fails and nothing is
// repaired.
func TestReadRepairsACorruptRecord(t *testing.T) {
	key, value := []byte("k"), []byte("value")
	f := newFixture(t, key)
	f.store(t, key, value, 3)
	meta := store.Meta{Version: 3, Aux: bigcopy.Checksum(value)}
	got, err := f.s.Read(context.Background(), key, meta, []byte("valuX"))
	if err != nil || string(got) != "value" || string(f.env.Repaired["k"]) != "value" || f.env.Corrupts != 1 {
		t.Fatalf("read %q, %v; repaired %q, corrupt %d: want the replica's value, repaired", got, err, f.env.Repaired["k"], f.env.Corrupts)
	}
	other := newFixture(t, key)
	if _, err := other.s.Read(context.Background(), key, meta, []byte("valuX")); err == nil || len(other.env.Repaired) != 0 {
		t.Fatalf("no replica: read err %v, repaired %v; want an error and no repair", err, other.env.Repaired)
	}
}

// Filling a stub (metadata recovered first) takes a replica of that very
// value; when every holder answered without one, the error says no copy is
// left (kind.ErrNoCopy), which makes the key lost rather than retried.
func TestFillFindsAReplicaOrSaysNoneIsLeft(t *testing.T) {
	key, value := []byte("k"), []byte("value")
	f := newFixture(t, key)
	f.store(t, key, value, 3)
	meta := store.Meta{Version: 3, Aux: bigcopy.Checksum(value)}
	got, stored, aux, err := f.s.Fill(context.Background(), key, meta)
	if err != nil || string(got) != "value" || string(stored) != "value" || aux != meta.Aux {
		t.Fatalf("fill %q %q %x, %v", got, stored, aux, err)
	}
	stale := store.Meta{Version: 4, Aux: bigcopy.Checksum([]byte("newer"))}
	if _, _, _, err := f.s.Fill(context.Background(), key, stale); !errors.Is(err, kind.ErrNoCopy) {
		t.Fatalf("only replicas of another value: %v, want ErrNoCopy", err)
	}
}

// SCHEME.VERIFY: a replica holding other bytes is a problem; a holder
// marked failed that no survivor stands in for (three nodes) is
// unavailable, not a problem.
func TestVerifyFindsADisagreeingReplica(t *testing.T) {
	key, value := []byte("k"), []byte("value")
	f := fixtureOf(t, 3, key)
	targets := f.store(t, key, value, 3)
	meta := store.Meta{Version: 3}
	if c := f.s.Verify(context.Background(), key, meta, value); c.Checked != 2 || len(c.Problems) != 0 {
		t.Fatalf("healthy: %+v", c)
	}
	f.env.Store(targets[0].Node.ID, kind.Piece{Key: key, Scheme: f.s.Entry().ID, Version: 3, Data: []byte("other")})
	if c := f.s.Verify(context.Background(), key, meta, value); len(c.Problems) != 1 {
		t.Fatalf("one replica differs: %+v", c)
	}
	f.env.M = kindtest.Apply(t, f.m, cluster.MarkFailed{ID: targets[1].Node.ID})
	if c := f.s.Verify(context.Background(), key, meta, value); c.Unavailable != 1 {
		t.Fatalf("a holder failed: %+v, want it unavailable", c)
	}
}
