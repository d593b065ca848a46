// Package lograte keeps a repeating log line from flooding a node's log:
// the first line of a kind is written at once, then at most one per
// interval, carrying the count of the lines of its kind suppressed since
// the last one written ("suppressed=N").
//
// A line's kind is its level, its message and the values of its
// attributes, except errors and durations: "failed to heartbeat to
// peer=X" repeats with a new error and backoff each time, and is one kind
// per peer. Raft's leader wrote that line about four times a second for
// as long as a dead member stayed in its configuration (issue 23, item 8).
//
// Limiter is the decision (an injectable clock, no I/O); Handler applies
// it to a log/slog handler and Hclog to a hashicorp/go-hclog logger, the
// one Raft writes to.
package lograte

import (
	"sync"
	"time"
)

// Every is the interval memgest's logs use: a line of a kind at most once
// per ten seconds after its first.
const Every = 10 * time.Second

// maxKinds bounds the kinds a Limiter remembers; past it, the kinds not
// seen for an interval are forgotten (their next line is written as a
// first one), and if that is not enough, all are.
const maxKinds = 4096

// Limiter decides which lines of each kind are written. Its zero value is
// not usable: see NewLimiter.
type Limiter struct {
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*kind
}

// kind is what a Limiter remembers of one kind of line.
type kind struct {
	written    time.Time // when its last line was written
	suppressed int       // lines dropped since
}

// NewLimiter returns a Limiter that writes a line of each kind at most
// once per every, after the first.
func NewLimiter(every time.Duration) *Limiter {
	return &Limiter{every: every, now: time.Now, kinds: map[string]*kind{}}
}

// Allow says whether a line of kind key is written now, and if so how
// many lines of its kind were suppressed since the last one written.
func (l *Limiter) Allow(key string) (write bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.kinds[key]
	if !ok {
		if len(l.kinds) >= maxKinds {
			l.forget(now)
		}
		l.kinds[key] = &kind{written: now}
		return true, 0
	}
	if now.Sub(k.written) < l.every {
		k.suppressed++
		return false, 0
	}
	suppressed, k.written, k.suppressed = k.suppressed, now, 0
	return true, suppressed
}

// forget drops the kinds not written for an interval, or all of them if
// every kind was; the caller holds l.mu.
func (l *Limiter) forget(now time.Time) {
	for key, k := range l.kinds {
		if now.Sub(k.written) >= l.every {
			delete(l.kinds, key)
		}
	}
	if len(l.kinds) >= maxKinds {
		clear(l.kinds)
	}
}
