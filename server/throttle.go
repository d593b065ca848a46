package server

import (
	"log/slog"
	"sync"
	"time"
)

// throttleInterval is the least time between two lines of one throttledLog.
const throttleInterval = 10 * time.Second

// throttledLog logs the first of a recurring event at once and then at most
// one line per throttleInterval, counting the occurrences it held back, so
// that a stranger knocking on a port or a peer that stays down cannot fill
// the log.
type throttledLog struct {
	mu   sync.Mutex
	last time.Time
	held int
}

// warn logs msg at warn level unless a line went out within the interval.
func (t *throttledLog) warn(log *slog.Logger, msg string, args ...any) {
	t.mu.Lock()
	now := time.Now()
	if !t.last.IsZero() && now.Sub(t.last) < throttleInterval {
		t.held++
		t.mu.Unlock()
		return
	}
	held := t.held
	t.last, t.held = now, 0
	t.mu.Unlock()
	if held > 0 {
		args = append(args, "suppressed_since_last", held)
	}
	log.Warn(msg, args...)
}
