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

// A kind's details render as Redis would answer them: text as bulk
// strings, numbers and flags as integers, lists as arrays.
func TestDetailReplies(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"3/1/7", "$5\r\n3/1/7\r\n"},
		{int64(42), ":42\r\n"},
		{true, ":1\r\n"},
		{false, ":0\r\n"},
		{[]string{"a", "bc"}, "*2\r\n$1\r\na\r\n$2\r\nbc\r\n"},
	} {
		if got := string(detailReply(c.v).AppendTo(nil, 2)); got != c.want {
			t.Errorf("%#v answers %q, want %q", c.v, got, c.want)
		}
	}
}
