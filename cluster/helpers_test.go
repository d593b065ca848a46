package cluster

import (
	"fmt"
	"testing"

	"github.com/memgest/memgest/scheme"
)

// testNode returns a node with a deterministic id and addresses.
func testNode(i int) Node {
	return Node{
		ID:         NodeID(fmt.Sprintf("%040x", i)),
		ClientAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i),
		PeerAddr:   fmt.Sprintf("127.0.0.1:%d", 17000+i),
	}
}

func testIDs(n int) []NodeID {
	ids := make([]NodeID, n)
	for i := range ids {
		ids[i] = testNode(i).ID
	}
	return ids
}

// mustApply applies commands in order, failing the test on any error.
func mustApply(t testing.TB, m *Map, cmds ...Command) *Map {
	t.Helper()
	for _, c := range cmds {
		var err error
		if m, err = Apply(m, c); err != nil {
			t.Fatalf("Apply(%T %+v): %v", c, c, err)
		}
	}
	return m
}

// formed returns a map that formed over n nodes (Expect n) with the given
// extra spares.
func formed(t testing.TB, n, spares int) *Map {
	t.Helper()
	m := NewMap(n, 3)
	for i := range n + spares {
		m = mustApply(t, m, AddNode{Node: testNode(i)})
	}
	return m
}

func spec(t testing.TB, s string) scheme.Spec {
	t.Helper()
	sp, err := scheme.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// checkValid asserts that m satisfies every invariant UnmarshalMap checks
// and survives an encoding round trip unchanged.
func checkValid(t testing.TB, m *Map) {
	t.Helper()
	if err := m.validate(); err != nil {
		t.Fatalf("invalid map at epoch %d: %v", m.Epoch, err)
	}
	a, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	m2, err := UnmarshalMap(a)
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, a)
	}
	if b, _ := m2.Marshal(); string(a) != string(b) {
		t.Fatalf("round trip changed the map:\n%s\n%s", a, b)
	}
}
