package core

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// versionClock issues per-node versions: strictly increasing and never below
// the wall clock at process start plus the monotonic time since, in
// nanoseconds, so a version is never reused even after a key is deleted and
// written again (a restarted process reads the wall clock anew, so it
// starts above its predecessor's versions unless the clock went back), and a node taking over coordination (issue 4) can continue
// above every version it recovers with Observe. Reading the wall clock only
// at start costs one clock read per version instead of time.Now's two; a
// step of the wall clock after start moves no version.
type versionClock struct{ last atomic.Uint64 }

// wallAtStart is the wall clock when the process started (clockStart).
var wallAtStart = clockStart.UnixNano()

func (c *versionClock) next() uint64 {
	for {
		last := c.last.Load()
		v := uint64(wallAtStart + Monotime())
		if v <= last {
			v = last + 1
		}
		if c.last.CompareAndSwap(last, v) {
			return v
		}
	}
}

// Observe makes every later version exceed v.
func (c *versionClock) Observe(v uint64) {
	for {
		last := c.last.Load()
		if v <= last || c.last.CompareAndSwap(last, v) {
			return
		}
	}
}

// pending is one write that has a version but is not committed yet. Its done
// channel closes when it commits or aborts (Ring §5.2: reads of an
// uncommitted version wait for it).
type pending struct {
	version uint64
	done    chan struct{}
	began   int64 // monotime, for memgest_scheme_write_duration_seconds
	// overlaps is 1 + the scheme id of a blind write to a scheme whose
	// blind writes of a key may overlap (kind.Traits.Overlaps), else 0.
	overlaps uint32
}

// inflight tracks the uncommitted writes of every key this node coordinates.
// Keys without writes in flight have no entry, so it stays small; its shard
// locks also serialise each key's commits, which lets a commit read the
// record it replaces.
type inflight struct {
	seed   maphash.Seed
	shards [256]inflightShard
}

type inflightShard struct {
	Mu sync.Mutex
	m  map[string][]*pending
}

func NewInflight() *inflight {
	t := &inflight{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].m = make(map[string][]*pending)
	}
	return t
}

func (t *inflight) Shard(key []byte) *inflightShard {
	return &t.shards[maphash.Bytes(t.seed, key)&255]
}

// Begin registers a write at version v. Blind writes (SET without options,
// MSET) Begin at once: they need not see earlier writes.
func (s *inflightShard) Begin(key []byte, v uint64) *pending {
	p := &pending{version: v, done: make(chan struct{}), began: Monotime()}
	s.m[string(key)] = append(s.m[string(key)], p)
	return p
}

// Newest returns the highest-versioned write in flight for key, or nil.
func (s *inflightShard) Newest(key []byte) *pending {
	var top *pending
	for _, p := range s.m[string(key)] {
		if top == nil || p.version > top.version {
			top = p
		}
	}
	return top
}

// End removes p; the caller holds s.mu and closes p.done after unlocking.
func (s *inflightShard) End(key []byte, p *pending) {
	list := s.m[string(key)]
	for i, q := range list {
		if q == p {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.m, string(key))
	} else {
		s.m[string(key)] = list
	}
}

// waitQuiet blocks until key has no write in flight, then returns with the
// shard locked, so the caller can read committed state and begin a
// read-modify-write that no earlier write can overtake.
func (t *inflight) waitQuiet(ctx context.Context, key []byte) (*inflightShard, error) {
	s := t.Shard(key)
	for {
		s.Mu.Lock()
		p := s.Newest(key)
		if p == nil {
			return s, nil
		}
		s.Mu.Unlock()
		if err := waitDone(ctx, p); err != nil {
			return nil, err
		}
	}
}

func waitDone(ctx context.Context, p *pending) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
