package split

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/store"
)

// splitFixture is split:2+1 on the coordinator of key in a map of nodes
// nodes, with the shards of value stored at version 5.
type splitFixture struct {
	env     *kindtest.Env
	s       kind.Scheme
	targets []kind.Target
	meta    store.Meta
}

func newSplitFixture(t *testing.T, nodes int, key, value []byte) splitFixture {
	m := kindtest.Map(t, nodes, "split:2+1")
	coord, _ := m.Coordinator(keyslot.Of(key))
	env := kindtest.NewEnv(m, coord.ID)
	s, err := New(kindtest.Entry(t, m, "split:2+1"), env)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := s.Targets(m, key)
	if err != nil {
		t.Fatal(err)
	}
	pieces, err := s.Encode(kind.Piece{Key: key, Scheme: s.Entry().ID, Version: 5}, kindtest.Value(value), targets)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pieces {
		env.Store(targets[i].Node.ID, p)
	}
	stored, aux := s.Record(kindtest.Value(value))
	if stored != nil || int(aux) != len(value) {
		t.Fatalf("record keeps %q, aux %d: want no bytes and the length", stored, aux)
	}
	return splitFixture{env: env, s: s, targets: targets, meta: store.Meta{Version: 5, Aux: aux}}
}

// A read gathers k shards; with a data shard gone it decodes from parity
// (KVMD "splitting"); beyond M shards gone the key is reported lost,
// never read as absent.
func TestReadDecodesAroundLossesAndReportsBeyondTolerance(t *testing.T) {
	key, value := []byte("k"), []byte("a value of some length")
	f := newSplitFixture(t, 4, key, value)
	ctx := context.Background()
	if got, err := f.s.Read(ctx, key, f.meta, nil); err != nil || string(got) != string(value) {
		t.Fatalf("healthy read %q, %v", got, err)
	}
	f.env.Drop(f.targets[0].Node.ID)
	if got, err := f.s.Read(ctx, key, f.meta, nil); err != nil || string(got) != string(value) {
		t.Fatalf("one shard gone: read %q, %v; want it decoded from parity", got, err)
	}
	f.env.Drop(f.targets[1].Node.ID)
	_, err := f.s.Read(ctx, key, f.meta, nil)
	var lost *kind.LostError
	if !errors.As(err, &lost) || len(f.env.Lost) != 1 || f.env.Lost[0].Lost != 2 || f.env.Lost[0].Total != 3 {
		t.Fatalf("two of three shards gone: %v, reported %+v; want the key lost, 2 of 3", err, f.env.Lost)
	}
}

// A shard missing because a newer commit released it is no loss: the
// read answers kind.ErrPieceGone, and reads again from the newer record.
func TestReadOfASupersededVersionStartsAgain(t *testing.T) {
	key, value := []byte("k"), []byte("value")
	f := newSplitFixture(t, 4, key, value)
	f.env.Drop(f.targets[0].Node.ID)
	f.env.Newer = true
	if _, err := f.s.Read(context.Background(), key, f.meta, nil); !errors.Is(err, kind.ErrPieceGone) || len(f.env.Lost) != 0 {
		t.Fatalf("superseded: %v, lost %+v; want ErrPieceGone and nothing lost", err, f.env.Lost)
	}
}

// SCHEME.VERIFY decodes both from the data and from the parity shards;
// a shard of other bytes is found.
func TestVerifyDecodesBothWays(t *testing.T) {
	key, value := []byte("k"), []byte("value")
	f := newSplitFixture(t, 4, key, value)
	ctx := context.Background()
	if c := f.s.Verify(ctx, key, f.meta, value); c.Checked != 3 || len(c.Problems) != 0 {
		t.Fatalf("healthy: %+v", c)
	}
	if c := f.s.Verify(ctx, key, f.meta, []byte("other")); len(c.Problems) != 2 {
		t.Fatalf("another committed value: %+v, want both decodes to disagree", c)
	}
}

// TestReadOrderAvoidsDoubtfulPositions: a split read asks first for k
// shards whose pieces should be in place, so a degraded read takes one
// round trip; a position listed for rebuild or on a failed node goes last.
func TestReadOrderAvoidsDoubtfulPositions(t *testing.T) {
	m := kindtest.Map(t, 4, "split:2+1")
	s, _ := New(kindtest.Entry(t, m, "split:2+1"), nil)
	key := []byte("k")
	targets, err := s.Targets(m, key)
	if err != nil || len(targets) != 3 {
		t.Fatalf("targets %v, %v", targets, err)
	}
	if first, rest := ReadOrder(m, key, targets, 2); !slices.Equal(first, []int{0, 1}) || !slices.Equal(rest, []int{2}) {
		t.Fatalf("healthy: first %v rest %v, want the data shards first", first, rest)
	}
	next := kindtest.Apply(t, m, cluster.MarkFailed{ID: targets[0].Node.ID})
	targets, _ = s.Targets(next, key)
	first, rest := ReadOrder(next, key, targets, 2)
	if len(first) != 2 || slices.Contains(first, 0) || !slices.Equal(rest, []int{0}) {
		t.Fatalf("position 0 failed: first %v rest %v, want it last", first, rest)
	}
}

// A write needs k live shards; a shard belongs at its own position.
func TestQuorumAndPlacement(t *testing.T) {
	m := kindtest.Map(t, 4, "split:2+1")
	s, _ := New(kindtest.Entry(t, m, "split:2+1"), nil)
	key := []byte("k")
	targets, _ := s.Targets(m, key)
	if s.Traits().Quorum != 2 {
		t.Fatalf("quorum %d, want k=2", s.Traits().Quorum)
	}
	coord, _ := m.Coordinator(keyslot.Of(key))
	if s.Misplaced(m, key, 1, targets[1].Node.ID, coord.ID) || !s.Misplaced(m, key, 1, targets[0].Node.ID, coord.ID) {
		t.Fatal("a shard is kept only at its own position")
	}
	if !s.Misplaced(m, key, 7, targets[0].Node.ID, coord.ID) {
		t.Fatal("an index past the scheme's width is kept")
	}
}
