package core

import (
	"context"
	"errors"
	"testing"
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
