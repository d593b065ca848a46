package server

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// This file reports keys lost beyond their scheme's tolerance (DESIGN.md §4,
// issue 4): a read of such a key answers -LOST naming the scheme and how
// many pieces are gone, never nil and never wrong bytes, and INFO and
// memgest status list them. A key is lost when too few of its pieces
// survive on live nodes: found so by a read (lostError from gatherSplit), or
// by a shard recovery that saw the key's pieces but not enough of them
// (lostKeys). Writing the key again (SET) or deleting it ends the report.

// lostError is the error of a read of a lost key.
type lostError struct {
	key         []byte
	scheme      string
	lost, total int
}

func (e *lostError) Error() string {
	return fmt.Sprintf("LOST key %q unrecoverable: scheme %s lost %d of %d pieces", e.key, e.scheme, e.lost, e.total)
}

// LostKey is one key lost beyond its scheme's tolerance, as INFO and memgest
// status report it: how many of its pieces are gone.
type LostKey struct {
	Key    string `json:"key"`
	Scheme string `json:"scheme"`
	Lost   int    `json:"lost"`
	Total  int    `json:"total"`
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
	size atomic.Int64 // len(m)
}

func (l *lostKeys) add(k LostKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]LostKey{}
	}
	l.m[k.Key] = k
	l.size.Store(int64(len(l.m)))
}

// clear forgets every lost key.
func (l *lostKeys) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.m)
	l.size.Store(0)
}

func (l *lostKeys) get(key []byte) (LostKey, bool) {
	if l.size.Load() == 0 {
		return LostKey{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.m[string(key)]
	return k, ok
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
	l.size.Store(int64(len(l.m)))
	return was
}

func (l *lostKeys) count() int { return int(l.size.Load()) }

// list returns up to limit lost keys, sorted, and how many there are.
func (l *lostKeys) list(limit int) ([]LostKey, int) {
	l.mu.Lock()
	out := make([]LostKey, 0, len(l.m))
	for _, k := range l.m {
		out = append(out, k)
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out[:min(limit, len(out))], len(out)
}

// err is the read error of a key in the lost set.
func (k LostKey) err() error {
	return &lostError{key: []byte(k.Key), scheme: k.Scheme, lost: k.Lost, total: k.Total}
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
