package store

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/memgest/memgest/internal/bigcopy"
)

// A Store maps keys to values with Meta. It is safe for concurrent use. The
// zero Store is not usable; call New.
type Store struct {
	shards   []shard
	mask     uint64
	seed     maphash.Seed
	maxValue int
	expiry   atomic.Uint64 // where SampleExpired resumes (a scan cursor)
}

// New returns an empty store. See the With options for the defaults.
func New(opts ...Option) *Store {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	if err := c.validate(); err != nil {
		panic(err)
	}
	n := 1
	for n < c.shards {
		n *= 2
	}
	s := &Store{shards: make([]shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed(), maxValue: c.maxValue}
	for i := range s.shards {
		s.shards[i].init(s.seed, c.minSegment, c.garbage)
	}
	return s
}

// locate returns the shard of key and its hash prefix. The shard comes from
// the low bits of the hash and the prefix from the top 28, so the two are
// independent.
func (s *Store) locate(key []byte) (*shard, uint64) {
	h := maphash.Bytes(s.seed, key)
	return &s.shards[h&s.mask], h >> (64 - prefixBits)
}

func (s *Store) check(key, val []byte) error {
	if len(key) > MaxKeySize {
		return tooLarge("key", len(key), MaxKeySize)
	}
	if len(val) > s.maxValue {
		return tooLarge("value", len(val), s.maxValue)
	}
	return nil
}

// Get returns append(dst[:0], value...) and the meta of key; ok is false if
// key is absent, and val is then dst[:0]. val never aliases the store. A
// present empty value gives a zero-length val, which is nil when dst is
// nil: test ok, not val. A small value is copied under the shard's read
// lock; a large one, which the store never changes (a write replaces it
// whole), after it, in bounded steps (copyLarge).
func (s *Store) Get(key, dst []byte) (val []byte, m Meta, ok bool) {
	val, m, ok, large := s.get(key, dst)
	if large {
		val = bigcopy.Append(dst[:0], val)
	}
	return val, m, ok
}

// View is Get without the copy of a large value (one over MaxInlineRecord
// with its header, kept outside the slabs): val is then the store's own
// bytes. The store never changes them (a new value replaces them whole),
// so they stay valid after the key changes, and the caller must not modify
// them. A small value is copied as Get does. Reads of huge values use it:
// a 512 MiB copy costs a tenth of a second and as much memory again.
func (s *Store) View(key []byte) (val []byte, m Meta, ok bool) {
	val, m, ok, _ = s.get(key, nil)
	return val, m, ok
}

// get returns a small value appended to dst[:0], or a large one itself
// (large true), with key's meta.
func (s *Store) get(key, dst []byte) (val []byte, m Meta, ok, large bool) {
	sh, p := s.locate(key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	i := sh.find(p, key)
	if i < 0 {
		return dst[:0], Meta{}, false, false
	}
	r := sh.rec(sh.tab.slots[i])
	if r.large() {
		return sh.value(r), r.meta(), true, true
	}
	return append(dst[:0], r.inline()...), r.meta(), true, false
}

// Meta returns the meta of key without copying its value.
func (s *Store) Meta(key []byte) (Meta, bool) {
	sh, p := s.locate(key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	i := sh.find(p, key)
	if i < 0 {
		return Meta{}, false
	}
	return sh.rec(sh.tab.slots[i]).meta(), true
}

// ValueLen returns the length of key's value without copying it: what a
// copy of the record would send.
func (s *Store) ValueLen(key []byte) (int, bool) {
	sh, p := s.locate(key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	i := sh.find(p, key)
	if i < 0 {
		return 0, false
	}
	return len(sh.value(sh.rec(sh.tab.slots[i]))), true
}

// Put stores val and m under key, replacing any record there. It fails with
// ErrTooLarge (nothing stored) for a key over MaxKeySize or a value over the
// store's limit, and with ErrFull if the shard's slabs are exhausted.
func (s *Store) Put(key, val []byte, m Meta) error {
	_, err := s.put(key, val, &m, false, false)
	return err
}

// PutIfNewer stores val and m under key iff key is absent or m.Version is
// greater than the stored version, and reports whether it did. Replicas use
// it so that messages arriving out of order cannot roll a record back.
func (s *Store) PutIfNewer(key, val []byte, m Meta) (applied bool, err error) {
	return s.put(key, val, &m, true, false)
}

// PutIfNewerOwned is PutIfNewer for a value the caller hands over: a large
// value is kept as it is (only its length: no spare capacity) rather than
// copied, so the caller must never modify val again. Peers' pieces arrive
// in buffers that become the store's this way.
func (s *Store) PutIfNewerOwned(key, val []byte, m Meta) (applied bool, err error) {
	return s.put(key, val, &m, true, true)
}

// Exchange is PutIfNewer that also returns the meta of the record it was
// compared with (and replaced, when applied), sparing the caller a lookup
// under its own lock: the coordinator's commit needs the replaced record's
// scheme and version to release its redundancy.
func (s *Store) Exchange(key, val []byte, m Meta) (applied bool, prev Meta, existed bool, err error) {
	return s.ExchangeIf(key, val, m, func(prev Meta, existed bool) bool { return !existed || m.Version > prev.Version })
}

// ExchangeIf stores val and m under key iff accept, called under the
// shard's lock with the record there (existed false: none), returns true.
// It returns what accept was given, so a caller can tell why a record was
// not stored. accept must be quick and must not call the Store.
func (s *Store) ExchangeIf(key, val []byte, m Meta, accept func(prev Meta, existed bool) bool) (applied bool, prev Meta, existed bool, err error) {
	return s.exchangeIf(key, val, m, accept, false)
}

// ExchangeIfOwned is ExchangeIf for a value the caller hands over, as
// PutIfNewerOwned: a large value is kept, not copied, and the caller must
// never modify it again.
func (s *Store) ExchangeIfOwned(key, val []byte, m Meta, accept func(prev Meta, existed bool) bool) (applied bool, prev Meta, existed bool, err error) {
	return s.exchangeIf(key, val, m, accept, true)
}

func (s *Store) exchangeIf(key, val []byte, m Meta, accept func(prev Meta, existed bool) bool, owned bool) (applied bool, prev Meta, existed bool, err error) {
	if err := s.check(key, val); err != nil {
		return false, Meta{}, false, err
	}
	val = own(key, val, &m, owned)
	sh, p := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := sh.find(p, key)
	if i >= 0 {
		prev, existed = sh.rec(sh.tab.slots[i]).meta(), true
	}
	if !accept(prev, existed) {
		return false, prev, existed, nil
	}
	if existed {
		err = sh.replace(i, key, val, &m)
	} else {
		err = sh.insert(p, key, val, &m)
	}
	sh.maybeClean()
	return err == nil, prev, existed, err
}

func (s *Store) put(key, val []byte, m *Meta, ifNewer, owned bool) (bool, error) {
	if err := s.check(key, val); err != nil {
		return false, err
	}
	val = own(key, val, m, owned)
	sh, p := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	applied, err := sh.put(p, key, val, m, ifNewer)
	sh.maybeClean()
	return applied, err
}

// UpdateMeta calls fn with the meta of key for fn to edit; if fn returns
// true the edit is stored. It reports whether key existed and fn returned
// true. fn runs under the shard's write lock: it must be quick and must not
// call the Store. In the practically unreachable case that the shard's slabs
// are exhausted and the new meta needs more room, the edit is dropped and
// UpdateMeta returns false.
func (s *Store) UpdateMeta(key []byte, fn func(m *Meta) bool) bool {
	sh, p := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := sh.find(p, key)
	if i < 0 {
		return false
	}
	old := sh.rec(sh.tab.slots[i]).meta()
	m := old
	if !fn(&m) {
		return false
	}
	if m == old {
		return true
	}
	if sh.setMeta(i, &m) != nil {
		return false
	}
	sh.maybeClean()
	return true
}

// Delete removes key and reports whether it was present.
func (s *Store) Delete(key []byte) bool {
	return s.DeleteIf(key, func(Meta) bool { return true })
}

// DeleteIf removes key iff it is present and fn(meta) returns true, and
// reports whether it removed it; e.g. fn = func(m Meta) bool { return
// m.Version <= v }. fn runs under the shard's write lock: it must not call
// the Store.
func (s *Store) DeleteIf(key []byte, fn func(m Meta) bool) bool {
	sh, p := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	i := sh.find(p, key)
	if i < 0 || !fn(sh.rec(sh.tab.slots[i]).meta()) {
		return false
	}
	sh.remove(i)
	sh.maybeClean()
	return true
}

// Len returns the number of keys. Shards are counted one after another, so
// under concurrent writes the total is not a snapshot of any one instant.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.tab.count
		sh.mu.RUnlock()
	}
	return n
}

// Clear removes every key and releases the memory. Shards are cleared one
// after another: a concurrent writer may put a key into a shard already
// cleared, and it stays.
func (s *Store) Clear() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.init(s.seed, sh.mem.minSeg, sh.mem.ratio)
		sh.mu.Unlock()
	}
}

// own returns a large value as the store will keep it, before the shard's
// lock is taken: val itself when owned (handed over), else a copy made in
// bounded steps. A small value goes into the slabs and is returned as is.
func own(key, val []byte, m *Meta, owned bool) []byte {
	switch {
	case !isLarge(key, val, m):
		return val
	case owned:
		return val[:len(val):len(val)]
	}
	return bigcopy.Append(nil, val)
}
