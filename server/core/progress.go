package core

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/cluster"
)

// workProgress counts a node's work of one sort — the rebuild, or the
// migrations it runs as their source — for INFO, /metrics and memgest
// status.
type workProgress struct {
	KeysTotal, KeysDone, BytesDone atomic.Int64
	Started                        atomic.Int64 // unix ns of the first shard's work

	mu     sync.Mutex
	active int           // shard rebuilds running
	since  time.Time     // when active last rose from 0
	busy   time.Duration // time with active > 0, before since
	// pending is the bytes still to send by redundancy left: pending[i]
	// for pieces of keys that survive i more failures (the rebuild's
	// plan, SetPending; none for a migration).
	pending []int64
}

// SetPending sets the bytes still to send by redundancy left, as a plan
// counts them (byLevel[i]: keys that survive i more failures); nil when
// no plan runs.
func (p *workProgress) SetPending(byLevel []int64) {
	p.mu.Lock()
	p.pending = slices.Clone(byLevel)
	p.mu.Unlock()
}

// DonePending counts bytes of the plan done at level.
func (p *workProgress) DonePending(level int, bytes int64) {
	p.mu.Lock()
	if level >= 0 && level < len(p.pending) {
		p.pending[level] = max(p.pending[level]-bytes, 0)
	}
	p.mu.Unlock()
}

// Pending is the bytes still to send by redundancy left (SetPending).
func (p *workProgress) Pending() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pending)
}

// Begin marks a shard's work running until the returned func is called:
// the node's busy time, over which ProgressReport.Rate measures, counts
// the time with at least one running, however many run at once.
func (p *workProgress) Begin() (end func()) {
	p.mu.Lock()
	if p.active == 0 {
		p.since = time.Now()
	}
	p.active++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		if p.active--; p.active == 0 {
			p.busy += time.Since(p.since)
		}
		p.mu.Unlock()
	}
}

// busySeconds is the time spent with a shard rebuild running.
func (p *workProgress) busySeconds() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	busy := p.busy
	if p.active > 0 {
		busy += time.Since(p.since)
	}
	return busy.Seconds()
}

// ProgressReport is a node's progress at a sort of work (workProgress)
// as memgest status shows it.
type ProgressReport struct {
	KeysDone  int64   `json:"keys_done"`
	KeysTotal int64   `json:"keys_total"`
	BytesDone int64   `json:"bytes_done"`
	Seconds   float64 `json:"seconds"` // since the node's first rebuild began
	// BusySeconds is the time the node spent with a shard rebuild
	// running: the time Rate measures over.
	BusySeconds float64 `json:"busy_seconds"`
	// PendingBytes is the bytes still to rebuild by redundancy left:
	// PendingBytes[i] for pieces of keys that survive i more failures
	// until they are rebuilt (empty while nothing is planned).
	PendingBytes []int64 `json:"pending_bytes,omitempty"`
}

// Report is the progress so far.
func (p *workProgress) Report() ProgressReport {
	r := ProgressReport{KeysDone: p.KeysDone.Load(), KeysTotal: p.KeysTotal.Load(), BytesDone: p.BytesDone.Load(),
		BusySeconds: p.busySeconds(), PendingBytes: p.Pending()}
	if t := p.Started.Load(); t != 0 {
		r.Seconds = time.Since(time.Unix(0, t)).Seconds()
	}
	return r
}

// Add sums reports of several nodes; the durations are the longest, as
// the nodes rebuild side by side.
func (r ProgressReport) Add(o ProgressReport) ProgressReport {
	return ProgressReport{KeysDone: r.KeysDone + o.KeysDone, KeysTotal: r.KeysTotal + o.KeysTotal,
		BytesDone: r.BytesDone + o.BytesDone, Seconds: max(r.Seconds, o.Seconds),
		BusySeconds: max(r.BusySeconds, o.BusySeconds), PendingBytes: addLevels(r.PendingBytes, o.PendingBytes)}
}

// PendingLevels is byLevel (bytes still to rebuild by redundancy left)
// with a level for every one a rebuild of m's catalogue can have: 0 up to
// its highest tolerance less one, and at least level 0, so that each is
// shown, at 0 when nothing is pending there.
func PendingLevels(m *cluster.Map, byLevel []int64) []int64 {
	levels := 1
	for _, e := range m.Schemes {
		levels = max(levels, e.Spec.Tolerance())
	}
	out := make([]int64, max(levels, len(byLevel)))
	copy(out, byLevel)
	return out
}

// addLevels sums two counts by level.
func addLevels(a, b []int64) []int64 {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make([]int64, max(len(a), len(b)))
	for i, v := range a {
		out[i] += v
	}
	for i, v := range b {
		out[i] += v
	}
	return out
}

// Rate is the bytes rebuilt per second of rebuilding: the rebuild rate
// the cluster measured, which memgest plan --addr feeds its model.
func (r ProgressReport) Rate() float64 {
	if r.BusySeconds <= 0 {
		return 0
	}
	return float64(r.BytesDone) / r.BusySeconds
}

// ETA estimates the time left from the keys done so far and the time
// spent rebuilding them, or 0.
func (r ProgressReport) ETA() time.Duration {
	if r.KeysDone == 0 || r.KeysDone >= r.KeysTotal {
		return 0
	}
	perKey := r.BusySeconds / float64(r.KeysDone)
	return time.Duration(perKey * float64(r.KeysTotal-r.KeysDone) * float64(time.Second))
}
