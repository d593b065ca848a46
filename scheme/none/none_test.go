package none

import (
	"context"
	"testing"

	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/kind/kindtest"
	"github.com/memgest/memgest/store"
)

// none keeps the value in the record and nothing else: a write commits at
// once, and a corrupt record has no other copy to come from.
func TestTheRecordIsTheOnlyCopy(t *testing.T) {
	m := kindtest.Map(t, 3)
	key, value := []byte("k"), []byte("value")
	coord, _ := m.Coordinator(keyslot.Of(key))
	env := kindtest.NewEnv(m, coord.ID)
	s, err := New(m.DefaultScheme(), env)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Traits().Immediate || s.Traits().Pieces != kind.NoPieces || !s.Traits().ReadsLocally {
		t.Fatal("none must commit at once, keep no pieces and read its record")
	}
	if targets, err := s.Targets(m, key); err != nil || len(targets) != 0 {
		t.Fatalf("targets %v, %v", targets, err)
	}
	stored, aux := s.Record(kindtest.Value(value))
	meta := store.Meta{Version: 1, Aux: aux}
	if string(stored) != "value" || aux != bigcopy.Checksum(value) {
		t.Fatalf("record %q %x", stored, aux)
	}
	if got, err := s.Read(context.Background(), key, meta, stored); err != nil || string(got) != "value" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := s.Read(context.Background(), key, meta, []byte("valuX")); err == nil || env.Corrupts != 1 {
		t.Fatalf("corrupt record: %v, %d counted; want an error and the corruption counted", err, env.Corrupts)
	}
}
