package cluster

import (
	"bytes"
	"errors"
	"testing"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme"
)

func TestFormingThenSpares(t *testing.T) {
	m := NewMap(3, 3)
	for i := range 3 {
		prev := m
		m = mustApply(t, m, AddNode{Node: testNode(i)})
		if m.Epoch != prev.Epoch+1 {
			t.Fatalf("node %d: epoch %d after %d", i, m.Epoch, prev.Epoch)
		}
		if n, _ := m.Node(testNode(i).ID); n.State != Up {
			t.Fatalf("node %d joined as %v, want up", i, n.State)
		}
		if want := map[bool]ClusterState{true: OK, false: Forming}[i == 2]; m.State != want {
			t.Fatalf("after node %d: state %v, want %v", i, m.State, want)
		}
		checkValid(t, m)
	}
	if !equalShards(m.Shards, Place(testIDs(3), keyslot.Count)) {
		t.Fatalf("placement %+v", m.Shards)
	}
	m = mustApply(t, m, AddNode{Node: testNode(3)})
	if n, _ := m.Node(testNode(3).ID); n.State != Spare || m.Epoch != 5 {
		t.Fatalf("late joiner: %v at epoch %d, want spare at 5", n.State, m.Epoch)
	}
	if !equalShards(m.Shards, Place(testIDs(3), keyslot.Count)) {
		t.Fatal("a spare changed the placement")
	}
	checkValid(t, m)
}

func equalShards(a, b []Shard) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !shardEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestExpectOneFormsAtOnce(t *testing.T) {
	m := mustApply(t, NewMap(1, 1), AddNode{Node: testNode(0)})
	if m.State != OK || len(m.Shards) != 1 || m.Width() != 1 {
		t.Fatalf("%+v", m)
	}
	if c, ok := m.Coordinator(16383); !ok || c.ID != testNode(0).ID {
		t.Fatal("single node does not coordinate every slot")
	}
}

func TestAddNodeIdempotentAndUpdates(t *testing.T) {
	m := formed(t, 3, 0)
	if again := mustApply(t, m, AddNode{Node: testNode(1)}); again != m {
		t.Fatal("re-adding the same node changed the map")
	}
	moved := testNode(1)
	moved.PeerAddr, moved.HTTPAddr = "127.0.0.1:1", "127.0.0.1:2"
	m2 := mustApply(t, m, AddNode{Node: moved})
	n, _ := m2.Node(moved.ID)
	if m2.Epoch != m.Epoch+1 || n.PeerAddr != "127.0.0.1:1" || n.HTTPAddr != "127.0.0.1:2" || n.State != Up {
		t.Fatalf("address update: epoch %d, node %+v", m2.Epoch, n)
	}
	if !equalShards(m.Shards, m2.Shards) {
		t.Fatal("an address update moved shards")
	}
}

// Every refused command names the problem for the user, matches its
// sentinel, and leaves the map as it was (DESIGN.md §8.6).
func TestApplyRefusals(t *testing.T) {
	five := mustApply(t, formed(t, 5, 0), CreateScheme{Alias: "hot", Spec: spec(t, "rep:2")})
	forming := mustApply(t, NewMap(5, 3), AddNode{Node: testNode(0)})
	clash := testNode(9)
	clash.ClientAddr = testNode(0).ClientAddr
	for _, tc := range []struct {
		name string
		m    *Map
		cmd  Command
		kind error
		msg  string
	}{
		{"nil command", five, nil, ErrBadCommand, "cluster: no command"},
		{"not initialised", EmptyMap(), AddNode{Node: testNode(0)}, ErrNotInitialised, "cluster: the map is not initialised yet (no Init command applied)"},
		{"init again", five, Init{Expect: 3, Voters: 3}, ErrBadCommand, "cluster: the cluster is already initialised (expect 5, voters 3)"},
		{"init expect", EmptyMap(), Init{Expect: 0, Voters: 3}, ErrBadCommand, "cluster: expect must be 1..16384 nodes, got 0"},
		{"init voters", EmptyMap(), Init{Expect: 3, Voters: 4}, ErrBadCommand, "cluster: voters must be 1, 3, 5 or 7, got 4"},
		{"bad node id", five, AddNode{Node: Node{ID: "n1", ClientAddr: "a", PeerAddr: "b"}}, ErrBadNode, `cluster: node id "n1" is not 40 lowercase hex characters`},
		{"no peer addr", five, AddNode{Node: Node{ID: testNode(9).ID, ClientAddr: "a"}}, ErrBadNode, "cluster: node " + string(testNode(9).ID) + " needs a client and a peer address"},
		{"address clash", five, AddNode{Node: clash}, ErrBadNode, "cluster: node " + string(clash.ID) + ": address already used by node " + string(testNode(0).ID)},
		{"too wide", five, CreateScheme{Spec: spec(t, "split:4+2")}, ErrTooFewNodes, "cluster: scheme split:4+2 needs 6 nodes, the cluster has 5"},
		{"too wide rep", five, CreateScheme{Alias: "wide", Spec: spec(t, "rep:6")}, ErrTooFewNodes, "cluster: scheme rep:6 needs 6 nodes, the cluster has 5"},
		{"too wide forming", forming, CreateScheme{Spec: spec(t, "split:4+2")}, ErrTooFewNodes, "cluster: scheme split:4+2 needs 6 nodes, the cluster will have 5"},
		{"stripe too wide", five, CreateScheme{Spec: spec(t, "stripe:4+2/256")}, ErrTooFewNodes, "cluster: scheme stripe:4+2/256 needs 6 nodes, the cluster has 5"},
		{"hybrid too wide", five, CreateScheme{Alias: "h", Spec: spec(t, "hybrid:4+2")}, ErrTooFewNodes, "cluster: scheme hybrid:4+2 needs 6 nodes, the cluster has 5"},
		{"bad spec", five, CreateScheme{Spec: scheme.Spec{Kind: scheme.Rep}}, scheme.ErrSpec, `cluster: bad spec "rep:0": replica count must be 1..16`},
		{"zero spec", five, CreateScheme{Alias: "x"}, ErrBadCommand, `cluster: bad spec "invalid": unknown kind (want none, rep:R, split:K+M, stripe:K+M or hybrid:K+M)`},
		{"bad alias", five, CreateScheme{Alias: "1hot", Spec: spec(t, "rep:2")}, scheme.ErrAlias, `cluster: bad alias: "1hot" must start with a letter`},
		{"spec alias", five, CreateScheme{Alias: "rep:3", Spec: spec(t, "rep:2")}, ErrBadCommand, `cluster: bad alias: "rep:3" may hold only letters, digits, '_', '-' and '.'`},
		{"alias taken", five, CreateScheme{Alias: "HOT", Spec: spec(t, "rep:3")}, ErrSchemeConflict, `cluster: scheme "hot" already names rep:2`},
		{"drop none", five, DropScheme{Name: "none"}, ErrProtected, "cluster: scheme none is built in and cannot be dropped"},
		{"drop default", mustApply(t, five, SetDefault{Name: "hot"}), DropScheme{Name: "HOT"}, ErrProtected, "cluster: scheme hot is the default; set another default first"},
		{"drop unknown", five, DropScheme{Name: "cold"}, ErrNoScheme, `cluster: no scheme named "cold"`},
		{"drop spec of alias", five, DropScheme{Name: "rep:2"}, ErrNoScheme, `cluster: no scheme named "rep:2" (keys with that spec use scheme "hot")`},
		{"default unknown", five, SetDefault{Name: "cold"}, ErrNoScheme, `cluster: no scheme named "cold"`},
		{"default bad spec", five, SetDefault{Name: "rep:0"}, scheme.ErrSpec, `cluster: bad spec "rep:0": replica count must be 1..16`},
		{"default too wide", five, SetDefault{Name: "rep:7"}, ErrTooFewNodes, "cluster: scheme rep:7 needs 7 nodes, the cluster has 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := tc.m.Marshal()
			got, err := Apply(tc.m, tc.cmd)
			if !errors.Is(err, tc.kind) || err.Error() != tc.msg {
				t.Fatalf("err = %v\nwant %q (%v)", err, tc.msg, tc.kind)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not *Error", err)
			}
			after, _ := tc.m.Marshal()
			if got != tc.m || !bytes.Equal(before, after) {
				t.Fatal("a refused command changed the map")
			}
		})
	}
}

func TestCreateScheme(t *testing.T) {
	m := formed(t, 3, 0)
	m1 := mustApply(t, m, CreateScheme{Alias: "hot", Spec: spec(t, "rep:3")})
	if e, ok := m1.Scheme("hot"); !ok || e.ID != 2 || m1.NextSchemeID != 3 || m1.Epoch != m.Epoch+1 {
		t.Fatalf("create: %+v %v next %d", e, ok, m1.NextSchemeID)
	}
	for _, same := range []Command{
		CreateScheme{Alias: "hot", Spec: spec(t, "rep:3")},
		CreateScheme{Alias: "HOT", Spec: spec(t, "rep:3")},
		CreateScheme{Spec: spec(t, "none")},
	} {
		if mustApply(t, m1, same) != m1 {
			t.Errorf("%+v is not idempotent", same)
		}
	}
	m2 := mustApply(t, m1, CreateScheme{Spec: spec(t, "rep:3")}) // bare entry beside the alias
	if e, _ := m2.Scheme("rep:3"); e.ID != 3 || e.Alias != "" {
		t.Fatalf("bare rep:3: %+v", e)
	}
	if mustApply(t, m2, CreateScheme{Spec: spec(t, "rep:3")}) != m2 {
		t.Error("bare re-create is not idempotent")
	}
	odd := scheme.Spec{Kind: scheme.Rep, R: 2, K: 7, M: 1} // stray fields
	m3 := mustApply(t, m2, CreateScheme{Alias: "two", Spec: odd})
	if e, _ := m3.Scheme("two"); e.Spec != (scheme.Spec{Kind: scheme.Rep, R: 2}) {
		t.Errorf("spec not canonical: %+v", e.Spec)
	}
	checkValid(t, m3)
	// Write modes (decision 0009) are schemes of their own; @inplace is
	// the plain spec.
	m4 := mustApply(t, m3, CreateScheme{Spec: spec(t, "stripe:2+1@batch")}, CreateScheme{Spec: spec(t, "hybrid:1+2@auto:2ms")})
	if _, ok := m4.Scheme("stripe:2+1@batch"); !ok {
		t.Error("stripe:2+1@batch not in the catalogue")
	}
	if e, ok := m4.Scheme("hybrid:1+2@auto:2ms"); !ok || e.Spec.Mode != scheme.Auto {
		t.Errorf("hybrid:1+2@auto:2ms: %+v %v", e, ok)
	}
	if m5 := mustApply(t, m4, CreateScheme{Spec: spec(t, "stripe:2+1@inplace")}); m5.Schemes[len(m5.Schemes)-1].Spec.String() != "stripe:2+1" {
		t.Errorf("stripe:2+1@inplace created as %s", m5.Schemes[len(m5.Schemes)-1].Spec)
	}
}

func TestDropSchemeNeverReusesIDs(t *testing.T) {
	m := mustApply(t, formed(t, 3, 0),
		CreateScheme{Alias: "hot", Spec: spec(t, "rep:2")},
		CreateScheme{Spec: spec(t, "split:2+1")},
		DropScheme{Name: "Hot"},
		DropScheme{Name: "split:2+1"},
		CreateScheme{Alias: "hot", Spec: spec(t, "rep:3")},
	)
	if e, _ := m.Scheme("hot"); e.ID != 4 || len(m.Schemes) != 2 {
		t.Fatalf("recreated hot got id %d (catalogue %+v), want 4", e.ID, m.Schemes)
	}
	checkValid(t, m)
}

func TestSetDefault(t *testing.T) {
	m := mustApply(t, formed(t, 3, 0), CreateScheme{Alias: "hot", Spec: spec(t, "rep:2")})
	m1 := mustApply(t, m, SetDefault{Name: "hot"})
	if m1.DefaultScheme().Alias != "hot" || m1.Epoch != m.Epoch+1 {
		t.Fatal("default by alias")
	}
	if mustApply(t, m1, SetDefault{Name: "rep:2"}) != m1 { // resolves to hot
		t.Error("setting the current default changed the map")
	}
	m2 := mustApply(t, m1, SetDefault{Name: "split:2+1"}) // not registered yet
	if d := m2.DefaultScheme(); d.Spec != spec(t, "split:2+1") || d.Alias != "" || d.ID != 3 || m2.Epoch != m1.Epoch+1 {
		t.Fatalf("default by new spec: %+v at epoch %d", d, m2.Epoch)
	}
	m3 := mustApply(t, m2, SetDefault{Name: "none"}, DropScheme{Name: "hot"})
	if m3.Default != NoneID {
		t.Fatal("default back to none")
	}
	checkValid(t, m3)
}

func TestCommandEncoding(t *testing.T) {
	for _, c := range []Command{
		Init{Expect: 3, Voters: 5},
		AddNode{Node: Node{ID: testNode(1).ID, ClientAddr: "c", PeerAddr: "p", HTTPAddr: "h", Voter: true}},
		CreateScheme{Alias: "hot", Spec: spec(t, "split:4+2")},
		CreateScheme{Spec: spec(t, "rep:3")},
		DropScheme{Name: "hot"},
		SetDefault{Name: "rep:3"},
		SetPolicy{Kind: PolicySize, Threshold: 4096, Below: "rep:3", Above: "cold"},
		SetPolicy{Kind: PolicyTemperature, Hot: "hot", Cold: "stripe:4+2", IdleSeconds: 60},
		SetPolicy{Kind: PolicyOff},
	} {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeCommand(b)
		if err != nil || back != c {
			t.Errorf("%s: decoded %+v (%v), want %+v", b, back, err, c)
		}
	}
	for _, bad := range []string{``, `{}`, `{"op":"nope"}`, `{"op":"init","args":[]}`, `{"op":"create_scheme","args":{"spec":"rep:0"}}`} {
		if c, err := DecodeCommand([]byte(bad)); !errors.Is(err, ErrBadCommand) {
			t.Errorf("DecodeCommand(%s) = %+v, %v", bad, c, err)
		}
	}
	if _, err := EncodeCommand(nil); !errors.Is(err, ErrBadCommand) {
		t.Error("EncodeCommand(nil)")
	}
}
