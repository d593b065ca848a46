package server

import (
	"testing"
	"time"

	"github.com/memgest/memgest/server/core"
)

func TestRebuildReportRateAndETA(t *testing.T) {
	// Rate and ETA go by the time spent rebuilding, not the time since
	// the first rebuild began.
	r := core.ProgressReport{KeysDone: 25, KeysTotal: 100, BytesDone: 4 << 20, Seconds: 600, BusySeconds: 2}
	if got := r.Rate(); got != 2<<20 {
		t.Errorf("rate %v, want 2 MiB/s", got)
	}
	if got := r.ETA(); got != 6*time.Second {
		t.Errorf("ETA %v, want 6s (75 keys at 80 ms)", got)
	}
	if (core.ProgressReport{KeysDone: 100, KeysTotal: 100, BusySeconds: 5}).ETA() != 0 || (core.ProgressReport{KeysTotal: 10}).ETA() != 0 {
		t.Error("a finished or unstarted rebuild has an ETA")
	}
	sum := r.Add(core.ProgressReport{KeysDone: 5, KeysTotal: 10, BytesDone: 1, Seconds: 3, BusySeconds: 3})
	if sum.KeysDone != 30 || sum.KeysTotal != 110 || sum.BytesDone != 4<<20+1 || sum.Seconds != 600 || sum.BusySeconds != 3 {
		t.Errorf("sum %+v", sum)
	}
}
