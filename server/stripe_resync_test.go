package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/transport"
)

// TestResyncHolderFollowsARefusal: a write's delta that overtakes a
// rebuild's Resync of the same chunk makes the holder refuse the Resync
// (it has applied an update the Resync lacks). The resync must then send
// what the holder lacks, so that its copy of the open chunk ends equal to
// the chunk; it once ignored the refusal and left the copy holding that
// one delta.
func TestResyncHolderFollowsARefusal(t *testing.T) {
	m := testMap(t, 3)
	sp, _ := scheme.Parse("stripe:2+1/256")
	m = mustApply(t, m, cluster.CreateScheme{Spec: sp})
	entry, _ := m.Scheme(sp.String())

	holder := leasedNode(t, m)
	srv := transport.NewServer(holder.servePeer)
	holderAt := cluster.Node{ID: "holder", PeerAddr: serveFrames(t, srv), State: cluster.Up}
	hs, err := holder.stripes.scheme(entry)
	must(t, err)

	coord := leasedNode(t, m)
	s, err := coord.stripes.scheme(entry)
	must(t, err)
	s.data.SetSlots([]stripe.Slot{{List: 0, Position: 0}})
	write := func(i int) []stripe.Update {
		o := stripe.Object{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("value"), Version: uint64(i + 1)}
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
	if err := coord.resyncHolder(context.Background(), s, holderAt, 0, []stripe.Update{stale}); err != nil {
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

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestMovedStandInTakesItsNewParityPosition: a node that kept a list's
// stripes as parity position 0 (a stand-in) and that the map now makes
// position 1 (another node came back) drops its old parity and applies the
// new position's updates; it once refused them for ever ("held as 0") and
// its resync with them, leaving its copies stale. A sender whose map does
// not make the node holder 1 is still refused.
func TestMovedStandInTakesItsNewParityPosition(t *testing.T) {
	m := testMap(t, 5)
	sp, _ := scheme.Parse("stripe:2+2/256")
	m = mustApply(t, m, cluster.CreateScheme{Spec: sp})
	entry, _ := m.Scheme(sp.String())
	holders, err := parityHolders(m, sp, 0)
	must(t, err)
	holder := leasedNode(t, m)
	holder.id = holders[1].ID
	hs, err := holder.stripes.scheme(entry)
	must(t, err)

	d, err := stripe.NewData(256)
	must(t, err)
	d.SetSlots([]stripe.Slot{{List: 0, Position: 0}})
	o := stripe.Object{Key: []byte("k"), Value: []byte("value"), Version: 1}
	_, ups, err := d.Append(&o)
	must(t, err)
	id := ups[0].Chunk
	for _, u := range ups { // kept as position 0, as a stand-in did
		if _, _, err := hs.parity.Apply(0, u); err != nil {
			t.Fatal(err)
		}
	}
	whole, _ := d.Resync(id)
	send := func(j int) stripeAck {
		t.Helper()
		reply, err := holder.onStripe(encodeStripeUpdates(entry.ID, []stripeUpdate{{J: j, U: whole}}))
		must(t, err)
		acks, err := decodeStripeAcks(reply, 1)
		must(t, err)
		return acks[0]
	}
	holder.id = holders[0].ID // the map does not make it holder 1: refused
	if a := send(1); a.Refusal == "" {
		t.Fatalf("a resync as position 1 was %s at a node the map makes holder 0", a.Outcome)
	}
	holder.id = holders[1].ID
	if a := send(1); a.Refusal != "" || a.Outcome != stripe.Applied {
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
