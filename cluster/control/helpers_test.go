package control

import (
	"fmt"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
)

// testNode returns a node with a deterministic id and addresses.
func testNode(i int) cluster.Node {
	return cluster.Node{
		ID:         cluster.NodeID(fmt.Sprintf("%040x", i)),
		ClientAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i),
		PeerAddr:   fmt.Sprintf("127.0.0.1:%d", 17000+i),
	}
}

// mustApply applies commands in order, failing the test on any error.
func mustApply(t testing.TB, m *cluster.Map, cmds ...cluster.Command) *cluster.Map {
	t.Helper()
	for _, c := range cmds {
		var err error
		if m, err = cluster.Apply(m, c); err != nil {
			t.Fatalf("Apply(%T %+v): %v", c, c, err)
		}
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
