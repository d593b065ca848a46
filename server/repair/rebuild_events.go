package repair

import "sync"

// RebuildEvent is one step of a node's rebuild as its event log keeps it:
// the redundancy level of the pieces it re-protected (the failures their
// keys survived before it), what it was, and when it began and ended on
// the node's step counter. Begin and End count on one counter, so a step
// that began after another ended has the larger Begin: the log shows the
// order of the node's steps whatever the clock.
type RebuildEvent struct {
	Round uint64 // the rebuild round that ran it (one plan of the node's work)
	Level int
	Shard int
	What  string // "copies", "decodes", "keys", or a stripe task's name
	Keys  int
	Bytes int64 // the bytes the plan counted for it
	Begin uint64
	End   uint64
}

// eventLogSize bounds the events a node keeps: the latest.
const eventLogSize = 4096

// eventLog is a node's last eventLogSize rebuild steps.
type eventLog struct {
	mu     sync.Mutex
	seq    uint64
	events []RebuildEvent
}

// begin numbers the start of a step.
func (l *eventLog) begin() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

// end records e, a step that began at e.Begin and ends now.
func (l *eventLog) end(e RebuildEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.End = l.seq
	if len(l.events) == eventLogSize {
		l.events = append(l.events[:0], l.events[eventLogSize/2:]...) // the older half goes
	}
	l.events = append(l.events, e)
}

// list is a copy of the events kept, in the order they ended.
func (l *eventLog) list() []RebuildEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]RebuildEvent(nil), l.events...)
}

// RebuildEvents are the node's last rebuild steps, in the order they
// ended (tests read them to check the rebuild's order).
func (n *Repairer) RebuildEvents() []RebuildEvent { return n.events.list() }
