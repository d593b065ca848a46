package core

import (
	"sync/atomic"
	"time"
)

// rebuildProgress counts a node's rebuild work for INFO, /metrics and
// memgest status.
type rebuildProgress struct {
	KeysTotal, KeysDone, BytesDone atomic.Int64
	Started                        atomic.Int64 // unix ns of the first rebuild
}

// RebuildReport is a node's rebuild progress as memgest status shows it.
type RebuildReport struct {
	KeysDone  int64   `json:"keys_done"`
	KeysTotal int64   `json:"keys_total"`
	BytesDone int64   `json:"bytes_done"`
	Seconds   float64 `json:"seconds"` // since the node's first rebuild began
}

func (p *rebuildProgress) Report() RebuildReport {
	r := RebuildReport{KeysDone: p.KeysDone.Load(), KeysTotal: p.KeysTotal.Load(), BytesDone: p.BytesDone.Load()}
	if t := p.Started.Load(); t != 0 {
		r.Seconds = time.Since(time.Unix(0, t)).Seconds()
	}
	return r
}

// Add sums reports of several nodes; the duration is the longest.
func (r RebuildReport) Add(o RebuildReport) RebuildReport {
	return RebuildReport{KeysDone: r.KeysDone + o.KeysDone, KeysTotal: r.KeysTotal + o.KeysTotal,
		BytesDone: r.BytesDone + o.BytesDone, Seconds: max(r.Seconds, o.Seconds)}
}

// Rate is the bytes rebuilt per second so far.
func (r RebuildReport) Rate() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.BytesDone) / r.Seconds
}

// ETA estimates the time left from the keys done so far, or 0.
func (r RebuildReport) ETA() time.Duration {
	if r.KeysDone == 0 || r.KeysDone >= r.KeysTotal {
		return 0
	}
	perKey := r.Seconds / float64(r.KeysDone)
	return time.Duration(perKey * float64(r.KeysTotal-r.KeysDone) * float64(time.Second))
}
