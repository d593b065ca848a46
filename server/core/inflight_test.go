package core

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestVersionClockIsStrictlyIncreasing(t *testing.T) {
	var c versionClock
	c.Observe(uint64(time.Now().Add(time.Hour).UnixNano()))
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := uint64(0)
			for i := 0; i < 2000; i++ {
				v := c.next()
				if v <= last {
					t.Errorf("version went back: %d after %d", v, last)
				}
				last = v
				mu.Lock()
				if seen[v] {
					t.Errorf("version %d issued twice", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestWaitQuietWaitsForEveryWriteInFlight: a read-modify-write may start
// only when no write of its key is in flight, and writes of other keys do
// not hold it up.
func TestWaitQuietWaitsForEveryWriteInFlight(t *testing.T) {
	tab := NewInflight()
	key := []byte("k")
	s := tab.Shard(key)
	s.Mu.Lock()
	p1, p2 := s.Begin(key, 1), s.Begin(key, 2)
	s.Mu.Unlock()
	other := tab.Shard([]byte("other"))
	other.Mu.Lock()
	other.Begin([]byte("other"), 3) // never finishes
	other.Mu.Unlock()
	done := make(chan struct{})
	go func() {
		s, err := tab.waitQuiet(context.Background(), key)
		if err == nil {
			s.Mu.Unlock()
		}
		close(done)
	}()
	for _, p := range []*pending{p2, p1} {
		select {
		case <-done:
			t.Fatal("waitQuiet returned with a write in flight")
		case <-time.After(20 * time.Millisecond):
		}
		s.Mu.Lock()
		s.End(key, p)
		s.Mu.Unlock()
		close(p.done)
	}
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("waitQuiet did not return once the key was quiet")
	}
	if _, ok := s.m["k"]; ok {
		t.Fatal("finished key left an entry")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tab.waitQuiet(ctx, []byte("other")); err == nil {
		t.Fatal("waitQuiet ignored a cancelled context")
	}
}
