package stripe

import (
	"testing"
	"time"
)

// TestAutoSwitchFollowsTheRate: @auto writes in place at a trickle,
// batches once the rate fills K objects per bound (BCStore §III-A's
// E(t) < bound, decision 0009), and goes back in place when the rate
// falls under K/2 per bound, without flapping in between.
func TestAutoSwitchFollowsTheRate(t *testing.T) {
	a := newAutoSwitch(4, time.Millisecond) // batch from 4 writes per ms, back below 2
	now := time.Unix(0, 0)
	run := func(perMs float64, d time.Duration) bool {
		var batching bool
		step := time.Duration(float64(time.Millisecond) / perMs)
		for end := now.Add(d); now.Before(end); now = now.Add(step) {
			batching = a.write(now)
		}
		return batching
	}
	if run(0.1, time.Second) { // 100 writes/s
		t.Fatal("batching at 100 writes/s")
	}
	if !run(20, time.Second) { // 20,000 writes/s: 20 per bound
		t.Fatal("not batching at 20,000 writes/s")
	}
	if !run(3, time.Second) { // between the thresholds: stays
		t.Fatal("stopped batching at 3,000 writes/s, above the lower threshold")
	}
	if run(1, time.Second) {
		t.Fatal("still batching at 1,000 writes/s")
	}
	if run(3, time.Second) { // between the thresholds: stays in place
		t.Fatal("batching at 3,000 writes/s, under the upper threshold")
	}
	if _, rate, switches := a.state(now); switches != 2 || rate < 2500 || rate > 3500 {
		t.Errorf("rate %.0f/s after 3,000 writes/s, %d switches", rate, switches)
	}
}
