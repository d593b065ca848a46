package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

func TestNewNodeID(t *testing.T) {
	a, b := NewNodeID(), NewNodeID()
	if !a.Valid() || !b.Valid() || a == b {
		t.Fatalf("NewNodeID: %q %q", a, b)
	}
	for _, bad := range []NodeID{"", "abc", NodeID(strings.Repeat("A", 40)), NodeID(strings.Repeat("g", 40)), NodeID(strings.Repeat("a", 41))} {
		if bad.Valid() {
			t.Errorf("%q reported valid", bad)
		}
	}
}

func TestStatesByName(t *testing.T) {
	for s := Joining; s <= Left; s++ {
		b, err := s.MarshalText()
		var back NodeState
		if err != nil || back.UnmarshalText(b) != nil || back != s {
			t.Errorf("node state %v: %q %v", s, b, err)
		}
	}
	if _, err := NodeState(0).MarshalText(); err == nil {
		t.Error("zero node state encoded")
	}
	if NodeState(9).String() != "state(9)" || Up.String() != "up" || Spare.String() != "spare" {
		t.Error("node state names")
	}
	if OK.String() != "ok" || Forming.String() != "forming" || ClusterState(0).String() != "state(0)" {
		t.Error("cluster state names")
	}
	var cs ClusterState
	if cs.UnmarshalText([]byte("OK")) == nil {
		t.Error("state names are case-sensitive")
	}
}

func TestNewMap(t *testing.T) {
	m := NewMap(3, 3)
	if m.Epoch != 1 || m.State != Forming || m.Expect != 3 || m.Voters != 3 || len(m.Shards) != 0 {
		t.Fatalf("NewMap: %+v", m)
	}
	if e := m.DefaultScheme(); e.ID != NoneID || e.Spec.Kind != scheme.None || e.Name() != "none" {
		t.Fatalf("default scheme: %+v", e)
	}
	if m.ShardOf(0) != nil {
		t.Error("forming map has a shard")
	}
	if _, ok := m.Coordinator(0); ok {
		t.Error("forming map has a coordinator")
	}
	checkValid(t, m)
	defer func() {
		if recover() == nil {
			t.Error("NewMap(0, 3) did not panic")
		}
	}()
	NewMap(0, 3)
}

func TestShardOfAndCoordinator(t *testing.T) {
	m := formed(t, 3, 0)
	for _, tc := range []struct{ slot, shard int }{{0, 0}, {5460, 0}, {5461, 1}, {10922, 1}, {10923, 2}, {16383, 2}} {
		sh := m.ShardOf(tc.slot)
		if sh == nil || sh.ID != tc.shard {
			t.Errorf("ShardOf(%d) = %+v, want shard %d", tc.slot, sh, tc.shard)
			continue
		}
		c, ok := m.Coordinator(tc.slot)
		if !ok || c.ID != testNode(tc.shard).ID {
			t.Errorf("Coordinator(%d) = %v %v, want node %d", tc.slot, c.ID, ok, tc.shard)
		}
	}
	for _, bad := range []int{-1, keyslot.Count, 1 << 30} {
		if m.ShardOf(bad) != nil {
			t.Errorf("ShardOf(%d) not nil", bad)
		}
	}
	if s := m.ShardOf(keyslot.Of([]byte("foo"))); s.ID != 2 {
		t.Errorf("foo (slot 12182) in shard %d", s.ID)
	}
}

// The coordinator is the first Up node of the placement (DESIGN.md §1).
func TestCoordinatorSkipsNodesNotUp(t *testing.T) {
	m := formed(t, 3, 0).Clone()
	m.Nodes[0].State = Failed
	if c, _ := m.Coordinator(0); c.ID != testNode(1).ID {
		t.Errorf("node 0 failed: coordinator of slot 0 is %s, want node 1", c.ID)
	}
	m.Nodes[1].State = Failed
	m.Nodes[2].State = Left
	if _, ok := m.Coordinator(0); ok {
		t.Error("no node up, yet a coordinator")
	}
}

func TestSchemeLookup(t *testing.T) {
	m := mustApply(t, formed(t, 5, 0),
		CreateScheme{Alias: "Hot", Spec: spec(t, "rep:3")},
		CreateScheme{Alias: "safe", Spec: spec(t, "split:3+2")},
		CreateScheme{Spec: spec(t, "split:3+2")},
	)
	for _, tc := range []struct {
		name string
		id   uint16
	}{
		{"none", 1}, {"NONE", 1}, {"hot", 2}, {"HOT", 2}, {"Hot", 2},
		{"rep:3", 2},     // no bare rep:3: the alias that has the spec
		{"safe", 3},      //
		{"split:3+2", 4}, // bare entry preferred over the alias
		{"SPLIT:3+2", 4},
	} {
		e, ok := m.Scheme(tc.name)
		if !ok || e.ID != tc.id {
			t.Errorf("Scheme(%q) = %+v %v, want id %d", tc.name, e, ok, tc.id)
		}
	}
	for _, missing := range []string{"", "cold", "rep:2", "rep:", "split:3+3"} {
		if e, ok := m.Scheme(missing); ok {
			t.Errorf("Scheme(%q) = %+v", missing, e)
		}
	}
	if e, ok := m.SchemeByID(3); !ok || e.Alias != "safe" {
		t.Errorf("SchemeByID(3) = %+v %v", e, ok)
	}
	if _, ok := m.SchemeByID(9); ok {
		t.Error("SchemeByID(9) found")
	}
	if e, _ := m.Scheme("hot"); e.Name() != "Hot" {
		t.Errorf("alias spelling not kept: %q", e.Name())
	}
}

func TestCloneIsDeep(t *testing.T) {
	m := mustApply(t, formed(t, 3, 1), CreateScheme{Alias: "hot", Spec: spec(t, "rep:2")})
	before, _ := m.Marshal()
	c := m.Clone()
	c.Nodes[0].PeerAddr = "x"
	c.Shards[0].Placement[0] = "y"
	c.Schemes[1].Alias = "z"
	c.Epoch = 99
	if after, _ := m.Marshal(); !bytes.Equal(before, after) {
		t.Fatal("editing a Clone changed the original")
	}
	if sh := c.ShardOf(0); sh.Placement[0] != "y" {
		t.Error("a Clone's lookups do not see its edits")
	}
}

func TestMarshalIsReadableAndStable(t *testing.T) {
	m := mustApply(t, formed(t, 3, 1), CreateScheme{Alias: "hot", Spec: spec(t, "rep:2")})
	a, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"state":"ok"`, `"state":"spare"`, `"spec":"rep:2"`, `"alias":"hot"`, `"spec":"none"`} {
		if !bytes.Contains(a, []byte(want)) {
			t.Errorf("encoding lacks %s:\n%s", want, a)
		}
	}
	checkValid(t, m)
}

// UnmarshalMap refuses every broken invariant (DESIGN.md §8.6: bad input
// gets a clear error).
func TestUnmarshalMapRejects(t *testing.T) {
	good := mustApply(t, formed(t, 3, 1), CreateScheme{Alias: "hot", Spec: spec(t, "rep:2")})
	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
	}{
		{"bad state", func(m map[string]any) { m["state"] = "fine" }},
		{"expect 0", func(m map[string]any) { m["expect"] = 0 }},
		{"voters 2", func(m map[string]any) { m["voters"] = 2 }},
		{"bad node id", func(m map[string]any) { node(m, 0)["id"] = "xyz" }},
		{"duplicate node", func(m map[string]any) { node(m, 1)["id"] = node(m, 0)["id"] }},
		{"duplicate peer", func(m map[string]any) { node(m, 1)["peer_addr"] = node(m, 0)["peer_addr"] }},
		{"no client addr", func(m map[string]any) { node(m, 1)["client_addr"] = "" }},
		{"bad node state", func(m map[string]any) { node(m, 1)["state"] = "dead" }},
		{"slot gap", func(m map[string]any) { shard(m, 1)["first"] = 5462 }},
		{"slot overlap", func(m map[string]any) { shard(m, 1)["first"] = 5460 }},
		{"last slot missing", func(m map[string]any) { shard(m, 2)["last"] = 16382 }},
		{"past last slot", func(m map[string]any) { shard(m, 2)["last"] = 16384 }},
		{"shard id", func(m map[string]any) { shard(m, 2)["id"] = 7 }},
		{"no shards", func(m map[string]any) { m["shards"] = nil }},
		{"forming with shards", func(m map[string]any) { m["state"] = "forming" }},
		{"unknown placement node", func(m map[string]any) { placement(m, 0)[1] = strings.Repeat("e", 40) }},
		{"repeated placement node", func(m map[string]any) { placement(m, 0)[1] = placement(m, 0)[0] }},
		{"empty placement", func(m map[string]any) { shard(m, 0)["placement"] = []any{} }},
		{"no none", func(m map[string]any) { m["schemes"] = m["schemes"].([]any)[1:] }},
		{"bad spec", func(m map[string]any) { entry(m, 1)["spec"] = "rep:0" }},
		{"bad alias", func(m map[string]any) { entry(m, 1)["alias"] = "rep:4" }},
		{"alias twice", func(m map[string]any) { entry(m, 0)["alias"] = "HOT" }},
		{"id at next", func(m map[string]any) { entry(m, 1)["id"] = m["next_scheme_id"] }},
		{"ids out of order", func(m map[string]any) { entry(m, 1)["id"] = 1 }},
		{"missing default", func(m map[string]any) { m["default"] = 9 }},
		{"not json", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte("{")
			if tc.edit != nil {
				data = editJSON(t, good, tc.edit)
			}
			_, err := UnmarshalMap(data)
			if !errors.Is(err, ErrBadMap) || !strings.HasPrefix(err.Error(), "cluster: ") {
				t.Fatalf("UnmarshalMap = %v, want ErrBadMap", err)
			}
		})
	}
}

func editJSON(t *testing.T, m *Map, edit func(map[string]any)) []byte {
	t.Helper()
	raw, _ := m.Marshal()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	out, _ := json.Marshal(doc)
	return out
}

func node(m map[string]any, i int) map[string]any  { return m["nodes"].([]any)[i].(map[string]any) }
func shard(m map[string]any, i int) map[string]any { return m["shards"].([]any)[i].(map[string]any) }
func entry(m map[string]any, i int) map[string]any { return m["schemes"].([]any)[i].(map[string]any) }
func placement(m map[string]any, i int) []any      { return shard(m, i)["placement"].([]any) }

func TestUnmarshalUninitialisedMap(t *testing.T) {
	checkValid(t, EmptyMap())
}

// checkCoordinators compares Coordinator, which reads the map's index,
// with the rule it caches: per slot, the first up node of the placement
// not on standby, else the first up one.
func checkCoordinators(t *testing.T, m *Map) {
	t.Helper()
	for slot := range keyslot.Count {
		var first, active Node // the first up node, the first not on standby
		if sh := m.ShardOf(slot); sh != nil {
			for _, id := range sh.Placement {
				n, ok := m.Node(id)
				if !ok || n.State != Up {
					continue
				}
				if first.ID == "" {
					first = n
				}
				if active.ID == "" && !slices.Contains(sh.Standby, id) {
					active = n
				}
			}
		}
		want := active
		if want.ID == "" {
			want = first
		}
		if got, ok := m.Coordinator(slot); got.ID != want.ID || ok != (want.ID != "") {
			t.Fatalf("slot %d: coordinator %q (%v), want %q", slot, got.ID, ok, want.ID)
		}
	}
}
