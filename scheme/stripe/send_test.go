package stripe

import (
	"fmt"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// TestStripeRoundWithNoLiveHolder: an update of a list whose every parity
// holder failed goes to nobody and is acknowledged at once, so the
// chunk's log does not keep it (new holders are resynced whole); updates
// of lists with a live holder go to it and stay logged until it answers.
func TestStripeRoundWithNoLiveHolder(t *testing.T) {
	m := kindtest.Map(t, 3, "stripe:2+1/256")
	sp := kindtest.Entry(t, m, "stripe:2+1/256").Spec
	holder := m.Holders(&m.Shards[0], 3)[2] // list 0's parity holder
	m = kindtest.Apply(t, m, cluster.MarkFailed{ID: holder.ID})
	d, err := NewData(256)
	if err != nil {
		t.Fatal(err)
	}
	var ups []Update
	for _, list := range []uint16{0, 1} {
		d.SetSlots([]Slot{{List: list, Position: 0}})
		// The first object nearly fills its chunk: the second opens one in list 1.
		o := Object{Key: fmt.Appendf(nil, "k%d", list), Value: make([]byte, 220-200*int(list)), Version: uint64(list + 1)}
		_, more, err := d.Append(&o)
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, more...)
	}
	r := round{pending: map[updateKey]int{}}
	if err := r.plan(m, sp, ups); err != nil {
		t.Fatal(err)
	}
	for _, dst := range r.dests {
		for _, u := range dst.ups {
			if u.U.Chunk.List == 0 {
				t.Fatalf("an update of list 0 went to %s, whose only parity holder failed", dst.node.ID)
			}
		}
	}
	s := &schemeState{spec: sp, data: d}
	lacking, failures := r.settle(s, make([][]byte, len(r.dests)), make([]error, len(r.dests)))
	if len(lacking) != 0 || len(failures) != len(r.dests) {
		t.Fatalf("settle with no replies: lacking %v, failures %v", lacking, failures)
	}
	left := d.Unacked()
	if len(left) != 1 || left[0].Chunk.List != 1 {
		t.Fatalf("logged after the round: %v; want list 1's update only", left)
	}
}
