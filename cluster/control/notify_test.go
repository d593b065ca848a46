package control

import (
	"context"
	"testing"

	"github.com/memgest/memgest/cluster"
)

// A slow subscriber skips intermediate maps but always gets the latest.
func TestSubscribeCoalesces(t *testing.T) {
	h := newHub(cluster.EmptyMap())
	ch, cancel := h.subscribe()
	defer cancel()
	if m := <-ch; m.Epoch != 0 {
		t.Fatalf("first delivery epoch %d, want the current map", m.Epoch)
	}
	m := cluster.NewMap(3, 3)
	for range 3 {
		m = mustApply(t, m, cluster.AddNode{Node: testNode(int(m.Epoch))})
		h.publish(m)
	}
	if got := <-ch; got != m {
		t.Fatalf("got epoch %d, want the latest %d", got.Epoch, m.Epoch)
	}
	select {
	case extra := <-ch:
		t.Fatalf("stale map %d delivered after the latest", extra.Epoch)
	default:
	}
	got, err := h.wait(context.Background(), func(x *cluster.Map) bool { return x.Epoch >= m.Epoch })
	if err != nil || got != m {
		t.Fatalf("wait: %v", err)
	}
	h.close()
	if _, open := <-ch; open {
		t.Fatal("close left a subscription open")
	}
	if ch2, _ := h.subscribe(); ch2 == nil {
		t.Fatal("subscribe after close returned nil")
	} else if _, open := <-ch2; open {
		t.Fatal("subscribe after close returned an open channel")
	}
}
