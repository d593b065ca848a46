package cluster

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

// TestLossReportsLiveInTheMap (issue 43 §2): a recovery's losses enter
// the map with its ShardRecovered; reports of the same loss merge their
// tags; a deleted key is cleared on every report covering it; FLUSHALL's
// ForgetLosses ends the tag reports of its slots and keeps range ones;
// every command survives its encoding; bad reports change nothing.
func TestLossReportsLiveInTheMap(t *testing.T) {
	m := formed(t, 6, 0)
	victim := m.Shards[0].Placement[0]
	m = mustApply(t, m, MarkFailed{ID: victim})
	heir, _ := m.CoordinatorOf(&m.Shards[0])
	sh := m.Shards[0]
	tagged := Loss{First: sh.First, Last: sh.First + 1, Scheme: "split:2+1", Lost: 2, Total: 3, Tags: []uint32{uint32(sh.First)<<10 | 7, uint32(sh.First)<<10 | 3}}
	ranged := Loss{First: sh.First, Last: sh.Last, Scheme: "none", Cause: "its coordinator failed with its directory"}
	rec := ShardRecovered{Shard: sh.ID, By: heir.ID, Losses: []Loss{tagged, ranged}}
	m = mustApply(t, m, rec)
	if m.Shards[0].Recovering || len(m.LossesOf(sh.First, sh.First)) != 2 {
		t.Fatalf("after ShardRecovered: recovering %v, losses %+v", m.Shards[0].Recovering, m.Losses)
	}
	if got := m.Losses[0].Tags; !slices.IsSorted(got) || len(got) != 2 {
		t.Fatalf("tags kept as %v; want sorted", got)
	}
	more := tagged
	more.Tags = []uint32{uint32(sh.First)<<10 | 9, uint32(sh.First)<<10 | 7}
	m2 := mustApply(t, m, ReportLoss{Losses: []Loss{more}})
	if len(m2.Losses) != 2 || len(m2.Losses[0].Tags) != 3 || len(m.Losses[0].Tags) != 2 {
		t.Fatalf("merging a report: %+v (before: %+v)", m2.Losses, m.Losses)
	}
	if same := mustApply(t, m2, ReportLoss{Losses: []Loss{more}}); same.Epoch != m2.Epoch {
		t.Fatal("a report already in the map changed it")
	}
	m3 := mustApply(t, m2, ClearLost{Key: "gone", Slot: sh.First})
	for _, l := range m3.Losses {
		if !slices.Contains(l.Cleared, "gone") {
			t.Fatalf("report %+v does not clear the deleted key", l)
		}
	}
	if outside := mustApply(t, m3, ClearLost{Key: "far", Slot: sh.Last + 1}); outside.Epoch != m3.Epoch {
		t.Fatal("clearing a key no report covers changed the map")
	}
	m4 := mustApply(t, m3, ForgetLosses{First: sh.First, Last: sh.Last})
	if len(m4.Losses) != 1 || len(m4.Losses[0].Tags) != 0 {
		t.Fatalf("after ForgetLosses: %+v; want the range report alone", m4.Losses)
	}
	for _, c := range []Command{rec, ReportLoss{Losses: []Loss{more}}, ClearLost{Key: "k", Slot: 3}, ForgetLosses{First: 1, Last: 2}} {
		b, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DecodeCommand(b); err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip of %+v: %+v, %v", c, got, err)
		}
	}
	for _, bad := range []Command{
		ReportLoss{Losses: []Loss{{First: 5, Last: 4}}},
		ReportLoss{Losses: []Loss{{First: 0, Last: 16384}}},
		ReportLoss{Losses: []Loss{{First: 0, Last: 1, Tags: make([]uint32, MaxLossTags+1)}}},
		ClearLost{Key: "k", Slot: -1},
		ForgetLosses{First: 3, Last: 2},
	} {
		if _, err := Apply(m, bad); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%T %+v: %v; want ErrBadCommand", bad, bad, err)
		}
	}
}
