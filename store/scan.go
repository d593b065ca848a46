package store

import "math/rand/v2"

// A cursor names a shard and a hash prefix: shard<<32 | cursorMark | prefix.
// Every key is visited in (shard, prefix) order, and a key's shard and prefix
// never change, so a key present for a whole iteration is visited however
// the tables grow or shrink in between: the cursor has passed it, or it has
// not. cursorMark makes every cursor Scan returns nonzero, since 0 means
// done; an incoming 0 starts at shard 0, prefix 0.
const cursorMark = 1 << 31

func cursorOf(shard int, p uint64) uint64 { return uint64(shard)<<32 | cursorMark | p }

func (s *Store) splitCursor(c uint64) (shard int, p uint64, ok bool) {
	shard, p = int(c>>32), c&(prefixEnd-1)
	return shard, p, shard < len(s.shards)
}

// Scan visits the keys from cursor on, like Redis SCAN: start with cursor 0
// and pass each returned cursor to the next call, until it returns 0. Every
// key present for the whole iteration is visited at least once, whatever is
// inserted or deleted meanwhile; a key may be visited twice only when a
// call stops early (see below). count is a hint of how many keys to visit
// per call (10 if ≤ 0); a call finishes the keys sharing a 28-bit hash
// prefix, so it may visit a few more.
//
// If fn returns false, Scan stops and returns a cursor from which to resume.
//
// fn runs under the shard's read lock: it must not call the Store (a write
// to the same shard would deadlock), and key is valid only during the call.
// Collect keys and act on them after Scan returns.
func (s *Store) Scan(cursor uint64, count int, fn func(key []byte, m Meta) bool) (next uint64) {
	si, p, ok := s.splitCursor(cursor)
	if !ok {
		return 0
	}
	if count <= 0 {
		count = 10
	}
	for {
		q, n, stopped := s.shards[si].lockedScan(p, count, fn)
		if q < prefixEnd {
			return cursorOf(si, q)
		}
		if si++; si == len(s.shards) {
			return 0
		}
		if count -= n; stopped || count <= 0 {
			return cursorOf(si, 0)
		}
		p = 0
	}
}

// lockedScan runs scan under the read lock, released even if fn panics.
func (sh *shard) lockedScan(p uint64, budget int, fn func(key []byte, m Meta) bool) (next uint64, n int, stopped bool) {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.scan(p, budget, fn)
}

// scan visits the entries with prefix ≥ p in order until it has visited
// budget of them and finished the last prefix. It returns the prefix to
// resume from (prefixEnd when the shard is done), how many it visited, and
// whether fn stopped it.
func (sh *shard) scan(p uint64, budget int, fn func(key []byte, m Meta) bool) (next uint64, n int, stopped bool) {
	t := &sh.tab
	last := uint64(prefixEnd)
	for i := t.seek(p); i < len(t.slots); i++ {
		e := t.slots[i]
		if e == 0 {
			continue
		}
		ep := entryPrefix(e)
		if n >= budget && ep != last {
			return ep, n, false
		}
		r := sh.rec(e)
		n++
		if !fn(r.key(), r.meta()) {
			return sh.resumeAfter(i), n, true
		}
		last = ep
	}
	return prefixEnd, n, false
}

// resumeAfter is the prefix to resume from once slot i has been visited: the
// next prefix, unless slot i+1 shares slot i's, which must then be visited
// again (a duplicate) so that its other keys are not skipped.
func (sh *shard) resumeAfter(i int) uint64 {
	t := &sh.tab
	ep := entryPrefix(t.slots[i])
	if i+1 < len(t.slots) && t.slots[i+1] != 0 && entryPrefix(t.slots[i+1]) == ep {
		return ep
	}
	return ep + 1
}

// sampleEffort is how many records SampleExpired may examine per record it
// is asked for, so that one call's time is bounded like a Redis active
// expiry step (20 keys sampled per loop).
const sampleEffort = 20

// SampleExpired visits up to max records with 0 < ExpireAt ≤ now, resuming
// where the previous call stopped and wrapping around at the end; it
// returns how many it visited. It examines at most 20·max records (shards
// holding no record with an expiry are skipped for free), so a call that
// returns fewer than max has either found fewer or run out of budget; an
// active expiry cycle calls it repeatedly within its time budget.
//
// fn is called after the shard lock is released, with a copy of the key and
// its meta as they were when examined; fn may call the Store, e.g.
// DeleteIf(key, func(m Meta) bool { return m == seen }) to delete the record
// only if it has not changed since. key is valid only during the call.
// Concurrent calls may visit the same records.
func (s *Store) SampleExpired(now int64, max int, fn func(key []byte, m Meta)) int {
	if max <= 0 {
		return 0
	}
	si, p, ok := s.splitCursor(s.expiry.Load())
	if !ok {
		si, p = 0, 0
	}
	var found sampled
	budget := max * sampleEffort
	for wraps := 0; wraps <= len(s.shards) && found.len() < max && budget > 0; {
		sh := &s.shards[si]
		sh.mu.RLock()
		if sh.expiring == 0 {
			p = prefixEnd
		} else {
			p = sh.sampleExpired(p, now, max, &budget, &found)
		}
		sh.mu.RUnlock()
		if p == prefixEnd {
			si, p, wraps = (si+1)%len(s.shards), 0, wraps+1
		}
	}
	s.expiry.Store(cursorOf(si, p))
	found.each(fn)
	return found.len()
}

// sampleExpired adds to found the expired records from prefix p on until
// found holds max or the budget is spent, and returns where to resume.
func (sh *shard) sampleExpired(p uint64, now int64, max int, budget *int, found *sampled) uint64 {
	t := &sh.tab
	for i := t.seek(p); i < len(t.slots); i++ {
		e := t.slots[i]
		if e == 0 {
			continue
		}
		*budget--
		r := sh.rec(e)
		if at := expireAt(r.b); at > 0 && at <= now {
			found.add(r.key(), r.meta())
		}
		if found.len() >= max || *budget <= 0 {
			return sh.resumeAfter(i)
		}
	}
	return prefixEnd
}

// sampled collects keys and metas under a lock for use after it.
type sampled struct {
	keys  []byte
	ends  []int
	metas []Meta
}

func (f *sampled) add(key []byte, m Meta) {
	f.keys = append(f.keys, key...)
	f.ends = append(f.ends, len(f.keys))
	f.metas = append(f.metas, m)
}

func (f *sampled) len() int { return len(f.metas) }

func (f *sampled) each(fn func(key []byte, m Meta)) {
	start := 0
	for i, end := range f.ends {
		fn(f.keys[start:end:end], f.metas[i])
		start = end
	}
}

// RandomCursor is a Scan cursor at a shard and hash prefix drawn at
// random: a Scan from it visits first the keys at or after that place,
// which is how RANDOMKEY draws a key without a structure per key. Keys
// after long empty runs of prefixes are drawn more often, as Redis's
// bucket sampling favours keys in short chains.
func (s *Store) RandomCursor() uint64 {
	return cursorOf(rand.IntN(len(s.shards)), rand.Uint64N(prefixEnd))
}
