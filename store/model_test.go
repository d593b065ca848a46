package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// The store is checked against a map[string]modelRec, the slow reference
// (STYLE.md item 5): every operation runs on both and must agree.

type modelRec struct {
	val []byte
	m   Meta
}

type model map[string]modelRec

type opKind uint8

const (
	opPut opKind = iota
	opPutIfNewer
	opDelete
	opDeleteIf
	opUpdateMeta
	opGet
	opKinds
)

// op is one store call; arg is the DeleteIf version bound or the UpdateMeta
// edit.
type op struct {
	kind opKind
	key  []byte
	val  []byte
	m    Meta
	arg  uint64
}

func (o op) String() string {
	return fmt.Sprintf("%d(key %.20q len %d, val len %d, %+v, arg %d)", o.kind, o.key, len(o.key), len(o.val), o.m, o.arg)
}

// run applies o to the store and the model and fails on any disagreement.
func (o op) run(t testing.TB, s *Store, mdl model) {
	t.Helper()
	k := string(o.key)
	old, had := mdl[k]
	switch o.kind {
	case opPut:
		mustNil(t, o, s.Put(o.key, o.val, o.m))
		mdl[k] = modelRec{bytes.Clone(o.val), o.m}
	case opPutIfNewer:
		applied, err := s.PutIfNewer(o.key, o.val, o.m)
		mustNil(t, o, err)
		want := !had || o.m.Version > old.m.Version
		expect(t, o, applied == want, "applied %v, want %v", applied, want)
		if want {
			mdl[k] = modelRec{bytes.Clone(o.val), o.m}
		}
	case opDelete:
		expect(t, o, s.Delete(o.key) == had, "Delete disagrees: model had %v", had)
		delete(mdl, k)
	case opDeleteIf:
		want := had && old.m.Version <= o.arg
		got := s.DeleteIf(o.key, func(m Meta) bool { return m.Version <= o.arg })
		expect(t, o, got == want, "DeleteIf %v, want %v", got, want)
		if want {
			delete(mdl, k)
		}
	case opUpdateMeta:
		o.runUpdateMeta(t, s, mdl)
	case opGet:
		o.check(t, s, mdl)
	}
}

// runUpdateMeta edits one field chosen by arg; arg%6 == 5 aborts.
func (o op) runUpdateMeta(t testing.TB, s *Store, mdl model) {
	t.Helper()
	k := string(o.key)
	old, had := mdl[k]
	var seen Meta
	got := s.UpdateMeta(o.key, func(m *Meta) bool {
		seen = *m
		return editMeta(m, o.arg)
	})
	want := had && o.arg%6 != 5
	expect(t, o, got == want, "UpdateMeta %v, want %v", got, want)
	if had {
		expect(t, o, seen == old.m, "fn saw %+v, want %+v", seen, old.m)
	}
	if want {
		editMeta(&old.m, o.arg)
		mdl[k] = old
	}
}

func editMeta(m *Meta, arg uint64) bool {
	switch arg % 6 {
	case 0:
		m.Version = arg >> 3
	case 1:
		m.ExpireAt = int64(arg>>3) - 1000
	case 2:
		m.Scheme, m.Flags = uint16(arg>>3), uint8(arg>>19)
	case 3:
		m.Aux = uint32(arg >> 3)
	case 4:
		*m = Meta{}
	default:
		return false
	}
	return true
}

// check compares Get and Meta of o.key with the model.
func (o op) check(t testing.TB, s *Store, mdl model) {
	t.Helper()
	want, had := mdl[string(o.key)]
	dst := []byte("scratch")
	if len(o.val)%2 == 0 {
		dst = nil
	}
	val, m, ok := s.Get(o.key, dst)
	expect(t, o, ok == had, "Get ok %v, model has %v", ok, had)
	expect(t, o, !had || bytes.Equal(val, want.val) && m == want.m,
		"Get: %d bytes %+v, want %d bytes %+v", len(val), m, len(want.val), want.m)
	expect(t, o, had || len(val) == 0, "Get of a missing key returned %d bytes", len(val))
	m2, ok2 := s.Meta(o.key)
	expect(t, o, ok2 == had && m2 == want.m, "Meta %+v %v, want %+v %v", m2, ok2, want.m, had)
}

func mustNil(t testing.TB, o op, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v: %v", o, err)
	}
}

func expect(t testing.TB, o op, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf("%v: "+format, append([]any{o}, args...)...)
	}
}

// checkAll compares the whole store with the model: Len, every key by Get,
// and a full Scan that must return each key exactly once (nothing changes
// during it).
func checkAll(t testing.TB, s *Store, mdl model) {
	t.Helper()
	checkInvariants(t, s)
	if s.Len() != len(mdl) {
		t.Fatalf("Len %d, model %d", s.Len(), len(mdl))
	}
	seen := map[string]int{}
	for c := s.Scan(0, 7, func(k []byte, m Meta) bool { seen[string(k)]++; return true }); c != 0; {
		c = s.Scan(c, 7, func(k []byte, m Meta) bool { seen[string(k)]++; return true })
	}
	for k := range mdl {
		if seen[k] != 1 {
			t.Fatalf("scan saw key %.20q %d times", k, seen[k])
		}
		op{kind: opGet, key: []byte(k)}.check(t, s, mdl)
	}
	if len(seen) != len(mdl) {
		t.Fatalf("scan saw %d keys, model has %d", len(seen), len(mdl))
	}
	st := s.Stats()
	if st.Keys != len(mdl) {
		t.Fatalf("Stats.Keys %d, model %d", st.Keys, len(mdl))
	}
	schemes := map[uint16]SchemeStats{}
	for k, r := range mdl {
		c := schemes[r.m.Scheme]
		c.Keys, c.KeyBytes, c.ValueBytes = c.Keys+1, c.KeyBytes+int64(len(k)), c.ValueBytes+int64(len(r.val))
		schemes[r.m.Scheme] = c
	}
	if !maps.Equal(schemes, st.ByScheme) {
		t.Fatalf("Stats.ByScheme %v, model %v", st.ByScheme, schemes)
	}
}

// gen produces random operations over a fixed key space.
type gen struct {
	rng    *rand.Rand
	keys   [][]byte
	valBuf []byte
}

// valueSizes cover empty values, small ones, both sides of the inline limit
// and a large value.
var valueSizes = []int{0, 1, 5, 16, 100, 300, 2000, MaxInlineRecord - 40, MaxInlineRecord - 10, MaxInlineRecord + 1, 150_000}

func newGen(seed uint64, prefix string, nkeys int) *gen {
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	g.valBuf = make([]byte, 150_000)
	for i := range g.valBuf {
		g.valBuf[i] = byte(g.rng.Uint32())
	}
	for i := range nkeys {
		g.keys = append(g.keys, keyFor(prefix, i))
	}
	return g
}

// keyFor makes key i of a set: the empty key (unprefixed sets only), one of
// MaxKeySize bytes, and short keys of varied length.
func keyFor(prefix string, i int) []byte {
	switch {
	case i == 0 && prefix == "":
		return []byte{}
	case i == 1:
		return bytes.Repeat([]byte(prefix+"L"), MaxKeySize/(len(prefix)+1))
	}
	return []byte(fmt.Sprintf("%s%d%s", prefix, i, bytes.Repeat([]byte{'.'}, i%9)))
}

func (g *gen) meta() Meta {
	r := g.rng
	m := Meta{Version: r.Uint64N(50)}
	if r.IntN(4) == 0 {
		m.Version = r.Uint64() >> r.IntN(64)
	}
	if r.IntN(3) == 0 {
		m.ExpireAt = r.Int64N(2000) - 500
	}
	if r.IntN(2) == 0 {
		m.Scheme = uint16(r.IntN(3))
	}
	if r.IntN(3) == 0 {
		m.Flags, m.Aux = uint8(r.Uint32()), r.Uint32()>>r.IntN(32)
	}
	return m
}

func (g *gen) op() op {
	r := g.rng
	o := op{kind: opKind(r.IntN(int(opKinds))), m: g.meta(), arg: r.Uint64N(1 << 20)}
	o.key = g.keys[r.IntN(len(g.keys))]
	size := valueSizes[r.IntN(len(valueSizes))]
	if size > 2000 && r.IntN(4) != 0 {
		size = r.IntN(50) // keep big values rare so memory and time stay small
	}
	start := r.IntN(len(g.valBuf) - size + 1)
	o.val = g.valBuf[start : start+size]
	if o.kind == opDeleteIf {
		o.arg = r.Uint64N(60)
	}
	return o
}

func testOptions() []Option {
	return []Option{WithShards(4), withMinSegment(256)}
}

func TestModel(t *testing.T) {
	for _, cfg := range []struct {
		name string
		opts []Option
		keys int
	}{
		{"tiny-segments", testOptions(), 40},
		{"defaults", nil, 300},
		{"one-shard", []Option{WithShards(1), withMinSegment(64)}, 2000},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			s, g, mdl := New(cfg.opts...), newGen(uint64(len(cfg.name)), "", cfg.keys), model{}
			for i := range 20_000 {
				g.op().run(t, s, mdl)
				if i%2500 == 0 {
					checkAll(t, s, mdl)
				}
			}
			checkAll(t, s, mdl)
			if cfg.name == "tiny-segments" && s.Stats().CleanedBytes == 0 {
				t.Fatal("the cleaner never ran")
			}
			s.Clear()
			checkAll(t, s, model{})
		})
	}
}

// TestModelConcurrent runs one model per goroutine on disjoint key sets that
// share shards, so locking, cleaning and table resizes interleave.
func TestModelConcurrent(t *testing.T) {
	s := New(testOptions()...)
	const workers = 8
	models := make([]model, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, mdl := newGen(uint64(w), fmt.Sprintf("w%d/", w), 200), model{}
			for range 5000 {
				g.op().run(workerTB{t}, s, mdl)
			}
			models[w] = mdl
		}()
	}
	wg.Wait()
	all := model{}
	for _, mdl := range models {
		for k, v := range mdl {
			all[k] = v
		}
	}
	checkAll(t, s, all)
}

// TestPutIfNewerConcurrent races writers on one key with random versions:
// the highest version must win, with its own value.
func TestPutIfNewerConcurrent(t *testing.T) {
	s := New(WithShards(1), withMinSegment(64))
	key := []byte("contended")
	const workers, perWorker = 8, 2000
	var wg sync.WaitGroup
	maxes := make([]uint64, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range perWorker {
				v := r.Uint64N(1 << 40)
				maxes[w] = max(maxes[w], v)
				val := []byte(fmt.Sprintf("v%d%s", v, bytes.Repeat([]byte{'x'}, int(v%64))))
				if _, err := s.PutIfNewer(key, val, Meta{Version: v}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	top := uint64(0)
	for _, m := range maxes {
		top = max(top, m)
	}
	val, m, ok := s.Get(key, nil)
	want := fmt.Sprintf("v%d%s", top, bytes.Repeat([]byte{'x'}, int(top%64)))
	if !ok || m.Version != top || string(val) != want {
		t.Fatalf("got %q version %d, want %q version %d", val, m.Version, want, top)
	}
	checkInvariants(t, s)
}

// workerTB reports a failure from a worker goroutine: FailNow may only be
// called from the test's own goroutine, so Fatalf marks the test failed and
// ends just the worker.
type workerTB struct{ testing.TB }

func (w workerTB) Fatalf(format string, args ...any) {
	w.Helper()
	w.Errorf(format, args...)
	runtime.Goexit()
}

func TestLimits(t *testing.T) {
	s := New(WithShards(1), WithMaxValueSize(100))
	if err := s.Put(make([]byte, MaxKeySize), make([]byte, 100), Meta{}); err != nil {
		t.Fatalf("largest key and value: %v", err)
	}
	for _, c := range []struct{ key, val int }{{MaxKeySize + 1, 0}, {1, 101}} {
		if err := s.Put(make([]byte, c.key), make([]byte, c.val), Meta{}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("key %d value %d: got %v, want ErrTooLarge", c.key, c.val, err)
		}
		if _, err := s.PutIfNewer(make([]byte, c.key), make([]byte, c.val), Meta{}); !errors.Is(err, ErrTooLarge) {
			t.Errorf("PutIfNewer key %d value %d: got %v, want ErrTooLarge", c.key, c.val, err)
		}
	}
	if s.Len() != 1 {
		t.Fatalf("Len %d after rejected puts, want 1", s.Len())
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Option{WithShards(0), WithShards(MaxShards + 1), WithMaxValueSize(-1), WithGarbageRatio(0), WithGarbageRatio(5), withMinSegment(100)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New accepted a bad option")
				}
			}()
			New(o)
		}()
	}
	if n := len(New(WithShards(3)).shards); n != 4 {
		t.Fatalf("WithShards(3) made %d shards, want 4", n)
	}
}
