package core

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPacerBoundsAndStops: no rate never waits; work far ahead of its
// rate waits until the context ends and says so; a new rate starts a new
// measure, so work done at the old one is not owed at the new one.
func TestPacerBoundsAndStops(t *testing.T) {
	p := NewPacer()
	if err := p.Wait(context.Background(), 1<<40, 0); err != nil {
		t.Fatalf("unbounded: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Wait(ctx, 1<<30, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("a gigabyte at 1 B/s with the context ended: %v, want context.Canceled", err)
	}
	if err := p.Wait(context.Background(), 1, 1<<40); err != nil || p.done != 1 {
		t.Fatalf("after a new rate: %v, %d counted; want nil and only the new work", err, p.done)
	}
}

// TestRestKeepsTheShare: a worker that worked d at share s rests
// d·(1/s − 1), so it works s of the time; a share of 1 (or out of range)
// never rests, and a rest ends with its context.
func TestRestKeepsTheShare(t *testing.T) {
	for _, tc := range []struct {
		d     time.Duration
		share float64
		want  time.Duration
	}{
		{100 * time.Millisecond, 0.25, 300 * time.Millisecond},
		{100 * time.Millisecond, 0.05, 1900 * time.Millisecond},
		{100 * time.Millisecond, 0.5, 100 * time.Millisecond},
		{100 * time.Millisecond, 1, 0},
		{100 * time.Millisecond, 0, 0},
		{100 * time.Millisecond, 1.5, 0},
	} {
		if got := RestFor(tc.d, tc.share); got != tc.want {
			t.Errorf("RestFor(%s, %g) = %s, want %s", tc.d, tc.share, got, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { Rest(ctx, time.Hour, 0.01); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a failure, not a bound on speed: the rest would be 99 hours
		t.Fatal("Rest did not end with its context")
	}
}
