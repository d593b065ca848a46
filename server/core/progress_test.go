package core

import (
	"slices"
	"testing"
	"time"
)

// Busy time counts the time with at least one shard rebuild running, once
// however many overlap, and not the idle time between rebuilds.
func TestRebuildBusyTimeCountsOverlapOnce(t *testing.T) {
	var p workProgress
	began := time.Now()
	endA := p.Begin()
	endB := p.Begin()
	time.Sleep(20 * time.Millisecond)
	endA()
	time.Sleep(20 * time.Millisecond)
	endB()
	wall := time.Since(began).Seconds()
	first := p.Report().BusySeconds
	if first > wall {
		t.Errorf("two overlapping rebuilds counted %.3f s busy in %.3f s of wall time", first, wall)
	}
	time.Sleep(50 * time.Millisecond) // idle: must not count
	if idle := p.Report().BusySeconds; idle != first {
		t.Fatalf("busy time grew from %.3f to %.3f s while no rebuild ran", first, idle)
	}
	end := p.Begin()
	time.Sleep(10 * time.Millisecond)
	running := p.Report().BusySeconds
	end()
	done := p.Report().BusySeconds
	if first < 0.04 || running < first+0.01 || done < running {
		t.Errorf("busy %.3f s after two overlapping rebuilds of 40 ms, %.3f while a third ran, %.3f after it", first, running, done)
	}
}

// The rebuild's pending bytes by redundancy left go down as the plan's
// work is done, never below 0, sum level by level over nodes, and are
// gone once no plan runs.
func TestRebuildPendingBytesByLevel(t *testing.T) {
	var p workProgress
	p.SetPending([]int64{100, 40, 7})
	p.DonePending(0, 60)
	p.DonePending(2, 10)
	p.DonePending(5, 1) // no such level: ignored
	if got := p.Report().PendingBytes; !slices.Equal(got, []int64{40, 40, 0}) {
		t.Fatalf("pending %v, want [40 40 0]", got)
	}
	sum := p.Report().Add(ProgressReport{PendingBytes: []int64{1, 2, 3, 4}})
	if !slices.Equal(sum.PendingBytes, []int64{41, 42, 3, 4}) {
		t.Fatalf("summed %v", sum.PendingBytes)
	}
	p.SetPending(nil)
	if got := p.Report().PendingBytes; got != nil {
		t.Fatalf("pending %v once no plan runs", got)
	}
}
