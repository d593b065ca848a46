package stripe

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind/kindtest"
)

// TestResyncHolderFollowsARefusal: a write's delta that overtakes a
// rebuild's Resync of the same chunk makes the holder refuse the Resync
// (it has applied an update the Resync lacks). The resync must then send
// what the holder lacks, so that its copy of the open chunk ends equal to
// the chunk; it once ignored the refusal and left the copy holding that
// one delta.
func TestResyncHolderFollowsARefusal(t *testing.T) {
	m := kindtest.Map(t, 3, "stripe:2+1/256")
	entry := kindtest.Entry(t, m, "stripe:2+1/256")
	net := newTestNet(m)
	holder := net.engine("holder")
	holderAt := cluster.Node{ID: "holder", State: cluster.Up}
	hs, err := holder.scheme(entry)
	must(t, err)

	coord := net.engine("coordinator")
	s, err := coord.scheme(entry)
	must(t, err)
	s.data.SetSlots([]Slot{{List: 0, Position: 0}})
	write := func(i int) []Update {
		o := Object{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("value"), Version: uint64(i + 1)}
		loc, ups, err := s.data.Append(&o)
		must(t, err)
		_, _, more, err := s.data.Commit(o.Key, loc)
		must(t, err)
		return append(ups, more...)
	}
	first := write(0)
	write(1)
	id := first[0].Chunk
	stale, ok := s.data.Resync(id)
	if !ok {
		t.Fatal("no resync for a held chunk")
	}
	for _, u := range write(2) { // the holder, new to the chunk, gets the write first
		if _, _, err := hs.parity.Apply(0, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := coord.resyncHolder(context.Background(), s, holderAt, 0, []Update{stale}); err != nil {
		t.Fatal(err)
	}
	local, _, seq, _ := s.data.Read(id)
	if got := hs.parity.Image(id); !bytes.Equal(got, local) {
		t.Fatal("the holder's copy of the open chunk differs from the chunk after the resync")
	}
	if got := hs.parity.Applied(id); got != seq {
		t.Fatalf("the holder has applied %s through seq %d, the chunk is at %d", id, got, seq)
	}
}

// TestMovedStandInTakesItsNewParityPosition: a node that kept a list's
// stripes as parity position 0 (a stand-in) and that the map now makes
// position 1 (another node came back) drops its old parity and applies the
// new position's updates; it once refused them for ever ("held as 0") and
// its resync with them, leaving its copies stale. A sender whose map does
// not make the node holder 1 is still refused.
func TestMovedStandInTakesItsNewParityPosition(t *testing.T) {
	m := kindtest.Map(t, 5, "stripe:2+2/256")
	entry := kindtest.Entry(t, m, "stripe:2+2/256")
	holders, err := parityHolders(m, entry.Spec, 0)
	must(t, err)
	holder := newTestNet(m).engine(holders[1].ID)
	host := holder.host.(*testHost)
	hs, err := holder.scheme(entry)
	must(t, err)

	d, err := NewData(256)
	must(t, err)
	d.SetSlots([]Slot{{List: 0, Position: 0}})
	o := Object{Key: []byte("k"), Value: []byte("value"), Version: 1}
	_, ups, err := d.Append(&o)
	must(t, err)
	id := ups[0].Chunk
	for _, u := range ups { // kept as position 0, as a stand-in did
		if _, _, err := hs.parity.Apply(0, u); err != nil {
			t.Fatal(err)
		}
	}
	whole, _ := d.Resync(id)
	send := func(j int) holderAck {
		t.Helper()
		reply, err := holder.OnUpdates(encodeUpdates(entry.ID, []holderUpdate{{J: j, U: whole}}))
		must(t, err)
		acks, err := decodeAcks(reply, 1)
		must(t, err)
		return acks[0]
	}
	host.self = holders[0].ID // the map does not make it holder 1: refused
	if a := send(1); a.Refusal == "" {
		t.Fatalf("a resync as position 1 was %s at a node the map makes holder 0", a.Outcome)
	}
	host.self = holders[1].ID
	if a := send(1); a.Refusal != "" || a.Outcome != Applied {
		t.Fatalf("a resync as position 1 at the map's holder 1: %s %s", a.Outcome, a.Refusal)
	}
	if j, _ := hs.parity.HeldAs(0, id.Stripe); j != 1 {
		t.Fatalf("the stripe is held as position %d", j)
	}
	local, _, _, _ := d.Read(id)
	if !bytes.Equal(hs.parity.Image(id), local) {
		t.Fatal("the holder's copy differs from the chunk")
	}
}
