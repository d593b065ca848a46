package server

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/scheme/stripe"
)

// This file reports keys lost beyond their scheme's tolerance (DESIGN.md §4,
// issue 4): a read of such a key answers -LOST naming the scheme and how
// many pieces are gone, never nil and never wrong bytes, and INFO and
// memgest status list them. A key is lost when too few of its pieces
// survive on live nodes: found so by a read (lostError from gatherSplit), or
// by a shard recovery that saw the key's pieces but not enough of them
// (lostKeys). Writing the key again (SET) or deleting it ends the report.
//
// Stripe keys have no directory entries (they would cost more memory than
// the objects), so a stripe chunk lost beyond tolerance is known only by
// its manifest's key tags (scheme/stripe/manifest.go), where a surviving
// parity holder kept one: every key with such a tag that the node does not
// hold may have been in the chunk and answers -LOST "may have been lost"
// until it is written or deleted. A tag names a key of the slot with
// 1/1024 odds of a false alarm for a key that never existed; with no
// manifest left, the loss is logged and counted
// (stripe_positions_lost) but no key can be named.

// lostError is the error of a read of a lost key.
type lostError struct {
	key         []byte
	scheme      string
	lost, total int
	unsure      bool // known by a lost stripe chunk's key tag only
}

func (e *lostError) Error() string {
	if e.unsure {
		return fmt.Sprintf("LOST key %q may have been lost: a chunk of scheme %s that held keys with its tag lost %d of %d pieces; SET or DEL clears", e.key, e.scheme, e.lost, e.total)
	}
	return fmt.Sprintf("LOST key %q unrecoverable: scheme %s lost %d of %d pieces", e.key, e.scheme, e.lost, e.total)
}

// LostKey is one key lost beyond its scheme's tolerance, as INFO and memgest
// status report it: how many of its pieces are gone. Unsure marks a key
// known only by a lost stripe chunk's key tag: it may have been in the
// chunk (status lists the tag itself as the key).
type LostKey struct {
	Key    string `json:"key"`
	Scheme string `json:"scheme"`
	Lost   int    `json:"lost"`
	Total  int    `json:"total"`
	Unsure bool   `json:"unsure,omitempty"`
}

// lostKeys is the set of keys this node coordinates that are beyond their
// scheme's tolerance: found by a recovery (then gone from the primary
// store) or by a read or rebuild that could not decode a split key (still
// in it). Every commit forgets its key and every read of a missing key looks it up,
// so size lets both skip the lock while the set is empty, as it nearly
// always is.
type lostKeys struct {
	mu   sync.Mutex
	m    map[string]LostKey
	tags map[uint32]LostKey // key tags of stripe chunks lost beyond tolerance
	// cleared holds the keys with a lost tag written or deleted since.
	cleared map[string]bool
	size    atomic.Int64 // len(m) + len(tags)
}

// addTags reports every key with one of tags as maybe lost, as k says.
func (l *lostKeys) addTags(tags []uint32, k LostKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tags == nil {
		l.tags = map[uint32]LostKey{}
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
	return fmt.Sprintf("(keys of slot %d with tag %03x)", stripe.TagSlot(t), t&0x3ff)
}

// byTag is key's report if its tag is lost and it was not written since.
// The caller holds l.mu.
func (l *lostKeys) byTag(key []byte) (LostKey, bool) {
	k, ok := l.tags[stripe.KeyTag(key)]
	if !ok || l.cleared[string(key)] {
		return LostKey{}, false
	}
	k.Key = string(key)
	return k, true
}

func (l *lostKeys) add(k LostKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]LostKey{}
	}
	l.m[k.Key] = k
	l.resize()
}

// resize records the set's size. The caller holds l.mu.
func (l *lostKeys) resize() { l.size.Store(int64(len(l.m) + len(l.tags))) }

// clear forgets every lost key.
func (l *lostKeys) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.m)
	clear(l.tags)
	clear(l.cleared)
	l.size.Store(0)
}

func (l *lostKeys) get(key []byte) (LostKey, bool) {
	if l.size.Load() == 0 {
		return LostKey{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if k, ok := l.m[string(key)]; ok {
		return k, ok
	}
	return l.byTag(key)
}

// forget ends key's report and says whether there was one.
func (l *lostKeys) forget(key []byte) bool {
	if l.size.Load() == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, was := l.m[string(key)]
	delete(l.m, string(key))
	if _, maybe := l.byTag(key); maybe {
		if l.cleared == nil {
			l.cleared = map[string]bool{}
		}
		l.cleared[string(key)] = true
		was = true
	}
	l.resize()
	return was
}

func (l *lostKeys) count() int { return int(l.size.Load()) }

// list returns up to limit lost keys, sorted, and how many there are.
func (l *lostKeys) list(limit int) ([]LostKey, int) {
	l.mu.Lock()
	out := make([]LostKey, 0, len(l.m)+len(l.tags))
	for _, k := range l.m {
		out = append(out, k)
	}
	for _, k := range l.tags {
		out = append(out, k)
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out[:min(limit, len(out))], len(out)
}

// err is the read error of a key in the lost set.
func (k LostKey) err() error {
	return &lostError{key: []byte(k.Key), scheme: k.Scheme, lost: k.Lost, total: k.Total, unsure: k.Unsure}
}

// errOtherVersion is a fetched rep replica of another version than the one
// wanted (a replica slot holds one version per key and scheme).
var errOtherVersion = errors.New("server: the replica held is of another version")

// isLoss says whether a piece fetch failed because the piece is gone: its
// node is marked failed, or a live node does not have it (or holds another
// version of a replica). Other failures
// (a timeout, say) may pass and do not make a key lost.
func isLoss(err error) bool {
	return errors.Is(err, errNodeFailed) || errors.Is(err, errPieceGone) || errors.Is(err, errPieceCorrupt) ||
		errors.Is(err, errOtherVersion)
}
