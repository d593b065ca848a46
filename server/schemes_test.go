package server

import (
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/core"
)

// tableOf binds m's catalogue without a node: for the kinds' properties,
// placement and encoding, which need no environment.
func tableOf(t *testing.T, m *cluster.Map) *core.SchemeTable {
	t.Helper()
	return core.BindTable(kindsFor(nil), m, nil, nil, func(e cluster.SchemeEntry, err error) { t.Fatalf("%s: %v", e.Name(), err) })
}

// kindFor binds one entry without a node (see tableOf).
func kindFor(t *testing.T, e cluster.SchemeEntry) kind.Scheme {
	t.Helper()
	s, err := kindsFor(nil).Bind(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The table binds each catalogue entry to its kind, says what the whole
// catalogue allows routing to assume, and keeps a binding across maps
// while its entry is unchanged.
func TestSchemeTableBindsTheCatalogue(t *testing.T) {
	m := testMap(t, 4)
	tab := tableOf(t, m)
	for _, e := range m.Schemes {
		s, ok := tab.Lookup(e.ID)
		if !ok || s.Entry() != e {
			t.Fatalf("scheme %s: bound %v, %v", e.Name(), s, ok)
		}
	}
	if _, ok := tab.Lookup(999); ok {
		t.Fatal("an id the catalogue lacks was found")
	}
	if tab.AllImmediate || tab.AllLocalReads {
		t.Fatalf("a catalogue with rep and split: allImmediate %v, allLocalReads %v", tab.AllImmediate, tab.AllLocalReads)
	}
	next := core.BindTable(kindsFor(nil), m, tab, nil, nil)
	for _, e := range m.Schemes {
		if a, b := tab.Of(e.ID), next.Of(e.ID); a != b {
			t.Fatalf("scheme %s bound anew though its entry did not change", e.Name())
		}
	}
}
