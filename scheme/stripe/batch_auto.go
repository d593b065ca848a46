package stripe

import (
	"math"
	"sync"
	"time"
)

// autoSwitch is @auto's choice between batch and in-place writes on one
// coordinator (decision 0009, BCStore §III-A). BCStore batches while E(t),
// the expected time for every one of the k data nodes to get an object,
// stays under the application's bound. A memgest batch spreads its
// objects over K data chunks, so a round of n ≥ K objects costs parity of
// about M/K of its bytes and one of n < K up to M/n: the test is whether
// a round of the bound gathers K objects, T × bound ≥ K for a write rate
// T (any object may go to any data chunk, so K objects fill a stripe
// where BCStore's hashing needs one for each of k nodes). The rate is an
// exponentially decayed count of the scheme's writes here (time constant
// rateTau); the switch batches from T × bound ≥ K and writes in place
// again below K/2, so a rate near the threshold does not flap.
type autoSwitch struct {
	mu       sync.Mutex
	k        int
	bound    time.Duration
	count    float64 // decayed writes, to rateTau
	last     time.Time
	batching bool
	switches int64 // times the choice changed
}

// rateTau is the time constant of @auto's write rate.
const rateTau = 100 * time.Millisecond

func newAutoSwitch(k int, bound time.Duration) *autoSwitch {
	return &autoSwitch{k: k, bound: bound}
}

// write counts a write at now and says whether it goes through the batch
// path.
func (a *autoSwitch) write(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decay(now)
	a.count++
	perBound := a.count / rateTau.Seconds() * a.bound.Seconds() // T × bound
	switch {
	case !a.batching && perBound >= float64(a.k):
		a.batching = true
		a.switches++
	case a.batching && perBound < float64(a.k)/2:
		a.batching = false
		a.switches++
	}
	return a.batching
}

// decay ages the count to now. The caller holds a.mu.
func (a *autoSwitch) decay(now time.Time) {
	if !a.last.IsZero() {
		if dt := now.Sub(a.last); dt > 0 {
			a.count *= math.Exp(-dt.Seconds() / rateTau.Seconds())
		}
	}
	a.last = now
}

// state reports whether the switch batches now, the write rate per
// second it sees at now, and how many times it switched.
func (a *autoSwitch) state(now time.Time) (batching bool, rate float64, switches int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decay(now)
	return a.batching, a.count / rateTau.Seconds(), a.switches
}

// batchingNow says whether the switch batches at this moment, the rate
// decayed to now: a coordinator whose writes stopped writes in place.
func (a *autoSwitch) batchingNow() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.decay(time.Now())
	if a.batching && a.count/rateTau.Seconds()*a.bound.Seconds() < float64(a.k)/2 {
		a.batching = false
		a.switches++
	}
	return a.batching
}
