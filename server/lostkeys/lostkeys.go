// Package lostkeys is the set of keys a node reports lost beyond their
// scheme's tolerance (DESIGN.md §4, issue 4): a read of such a key answers
// -LOST naming the scheme and how many pieces are gone, never nil and
// never wrong bytes, and INFO and memgest status list them. A key is lost
// when too few of its pieces survive on live nodes: found so by a read
// (kind.LostError from split's gather), or by a shard recovery that saw
// the key's pieces but not enough of them. Writing the key again (SET) or
// deleting it ends the report. The node's repair path fills the set; its
// reads and commits look keys up in it.
//
// Stripe keys have no directory entries (they would cost more memory than
// the objects), so a stripe chunk lost beyond tolerance is known only by
// its manifest's key tags (keyslot.Tag; scheme/stripe/manifest.go), where a surviving
// parity holder kept one: every key with such a tag that the node does not
// hold may have been in the chunk and answers -LOST "may have been lost"
// until it is written or deleted. A tag names a key of the slot with
// 1/1024 odds of a false alarm for a key that never existed.
//
// Where nothing that survived names the lost keys at all (a lost chunk
// whose every manifest died with it, a shard whose coordinator died with
// both nodes of its key directory), the whole slot range is reported
// (Set.AddRange): every key of it that the node does not hold answers
// -LOST "may have been lost" until it is written or deleted. That is
// coarse, but it never answers nil for a key that was lost (decision
// 0005), as Redis Cluster answers CLUSTERDOWN for slots whose master and
// replicas all failed.
package lostkeys

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/kind"
)

// Set is the set of keys a node coordinates that are beyond their
// scheme's tolerance: found by a recovery (then gone from the primary
// store) or by a read or rebuild that could not decode a split key (still
// in it). Every commit forgets its key and every read of a missing key looks it up,
// so size lets both skip the lock while the set is empty, as it nearly
// always is.
type Set struct {
	mu   sync.Mutex
	m    map[string]kind.LostKey
	tags map[uint32]kind.LostKey // key tags of stripe chunks lost beyond tolerance
	// ranges are slot ranges whose lost keys nothing names (AddRange).
	ranges []lostRange
	// cleared holds the keys with a lost tag or in a lost range deleted
	// since (a key written since exists, and is not looked up here).
	cleared map[string]bool
	size    atomic.Int64 // len(m) + len(tags) + len(ranges)
}

// lostRange is a slot range, first to last inclusive, any key of which
// may have been lost, as k says.
type lostRange struct {
	first, last int
	k           kind.LostKey
}

// AddRange reports every key of slots first..last as maybe lost, for the
// cause k.Cause says: keys were lost there and no surviving record names
// them. A range already reported for the same scheme is not added again.
func (l *Set) AddRange(first, last int, k kind.LostKey) {
	k.Cause = fmt.Sprintf("%s (slots %d-%d)", k.Cause, first, last)
	l.addRange(first, last, k)
}

// byRange is key's report if its slot is in a lost range and it was not
// deleted since. The caller holds l.mu.
func (l *Set) byRange(key []byte) (kind.LostKey, bool) {
	if len(l.ranges) == 0 || l.cleared[string(key)] {
		return kind.LostKey{}, false
	}
	slot := keyslot.Of(key)
	for _, r := range l.ranges {
		if slot >= r.first && slot <= r.last {
			k := r.k
			k.Key = string(key)
			return k, true
		}
	}
	return kind.LostKey{}, false
}

// AddTags reports every key with one of tags as maybe lost, as k says.
func (l *Set) AddTags(tags []uint32, k kind.LostKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tags == nil {
		l.tags = map[uint32]kind.LostKey{}
	}
	k.Unsure = true
	for _, t := range tags {
		k.Key = tagName(t)
		l.tags[t] = k
	}
	l.resize()
}

// tagName describes a key tag where status lists lost keys.
func tagName(t uint32) string {
	return fmt.Sprintf("(keys of slot %d with tag %03x)", keyslot.TagSlot(t), t&0x3ff)
}

// byTag is key's report if its tag is lost and it was not written since.
// The caller holds l.mu.
func (l *Set) byTag(key []byte) (kind.LostKey, bool) {
	k, ok := l.tags[keyslot.Tag(key)]
	if !ok || l.cleared[string(key)] {
		return kind.LostKey{}, false
	}
	k.Key = string(key)
	return k, true
}

// Add reports key k.Key lost, as k says.
func (l *Set) Add(k kind.LostKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]kind.LostKey{}
	}
	l.m[k.Key] = k
	l.resize()
}

// resize records the set's size. The caller holds l.mu.
func (l *Set) resize() { l.size.Store(int64(len(l.m) + len(l.tags) + len(l.ranges))) }

// clear forgets every lost key.
func (l *Set) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.m)
	clear(l.tags)
	l.ranges = nil
	clear(l.cleared)
	l.size.Store(0)
}

// Get is key's report: by its name, its tag or its slot range.
func (l *Set) Get(key []byte) (kind.LostKey, bool) {
	if l.size.Load() == 0 {
		return kind.LostKey{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if k, ok := l.m[string(key)]; ok {
		return k, ok
	}
	return l.maybe(key)
}

// named says whether key itself is reported lost (not by its tag or slot
// only: a key known that way holds no pieces recovery found).
func (l *Set) Named(key []byte) bool {
	if l.size.Load() == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.m[string(key)]
	return ok
}

// maybe is key's report if it is known by its tag or slot only. The
// caller holds l.mu.
func (l *Set) maybe(key []byte) (kind.LostKey, bool) {
	if k, ok := l.byTag(key); ok {
		return k, ok
	}
	return l.byRange(key)
}

// forget ends key's report, now that it was written (deleted false) or
// deleted, and says whether there was one. A key known by its tag or slot
// only is remembered as cleared once deleted; while it exists it is never
// looked up here, so a write need not remember it (every key written in a
// lost range would).
func (l *Set) Forget(key []byte, deleted bool) bool {
	if l.size.Load() == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, was := l.m[string(key)]
	delete(l.m, string(key))
	if _, maybe := l.maybe(key); maybe {
		if deleted {
			if l.cleared == nil {
				l.cleared = map[string]bool{}
			}
			l.cleared[string(key)] = true
		}
		was = true
	}
	l.resize()
	return was
}

// Count is how many reports the set holds: keys, tags and ranges (the
// tag of a key also reported by name included).
func (l *Set) Count() int { return int(l.size.Load()) }

// Reported is how many reports List lists: Count without the tags that
// stand for keys reported by name.
func (l *Set) Reported() int {
	if l.size.Load() == 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.ranges) + len(l.m)
	named := l.namedTagsLocked()
	for t := range l.tags {
		if !named[t] {
			n++
		}
	}
	return n
}

// list returns up to limit lost keys and how many there are: the lost
// slot ranges first (the widest reports, never cut off by the limit),
// then the keys and tags, sorted.
func (l *Set) List(limit int) ([]kind.LostKey, int) {
	l.mu.Lock()
	out := make([]kind.LostKey, 0, len(l.m)+len(l.tags)+len(l.ranges))
	for _, r := range l.ranges {
		out = append(out, r.k)
	}
	ranges := len(out)
	for _, k := range l.m {
		out = append(out, k)
	}
	named := l.namedTagsLocked()
	for t, k := range l.tags {
		if !named[t] { // a tag its named key stands for already (the map's report of it)
			out = append(out, k)
		}
	}
	l.mu.Unlock()
	rest := out[ranges:]
	sort.Slice(rest, func(i, j int) bool { return rest[i].Key < rest[j].Key })
	return out[:min(limit, len(out))], len(out)
}

// KeysWhere lists the keys reported lost (not the stripe key tags) for
// which in holds.
func (l *Set) KeysWhere(in func(key []byte) bool) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for k := range l.m {
		if in([]byte(k)) {
			out = append(out, []byte(k))
		}
	}
	return out
}

// ForgetTagsWhere ends the reports of lost stripe key tags of the slots for
// which in holds: their keys may have been in a lost chunk, and are
// flushed now.
func (l *Set) ForgetTagsWhere(in func(slot int) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for t := range l.tags {
		if in(keyslot.TagSlot(t)) {
			delete(l.tags, t)
		}
	}
	for k := range l.cleared {
		if in(keyslot.Of([]byte(k))) {
			delete(l.cleared, k)
		}
	}
	l.resize()
}
