package commands

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

// pubsubHub is a node's subscriptions: for each kind, the connections
// subscribed to each channel or pattern, which a publish reads to find
// its receivers; and the links that carry this node's PUBLISH messages
// to the other nodes (pubsub_bus.go). Each connection's own record of
// its subscriptions (subscriber.sets) is the truth; the index finds
// candidates. Every subscription is of this node's connections only:
// PUBSUB CHANNELS and NUMSUB answer for the node, as Redis Cluster's do.
type pubsubHub struct {
	// shardMu orders SSUBSCRIBE's check that this node coordinates the
	// channel's slot with dropMoved's check of a new map, so that a
	// subscription made under an old map is dropped by the next.
	shardMu sync.Mutex

	mu    sync.RWMutex
	index [kinds]map[string]map[*subscriber]struct{}

	// overflowed counts connections closed at the pubsub output limit.
	overflowed atomic.Int64

	bus bus
}

// subscribe subscribes s to each name and queues a confirmation of each,
// with s's count after it, as Redis does (a name already subscribed is
// confirmed again).
func (h *pubsubHub) subscribe(s *subscriber, k subKind, names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range names {
		if s.addLocked(k, name) {
			h.indexAdd(k, name, s)
		}
		s.confirmLocked(subscribeWord[k], &name, s.subscriptions(k))
	}
}

// unsubscribe unsubscribes s from each name, or from all of kind k when
// names is nil, and, with notify, queues a confirmation of each, or one
// with a null name when there was nothing to leave.
func (h *pubsubHub) unsubscribe(s *subscriber, k subKind, names []string, notify bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if names == nil {
		names = sortedKeys(s.sets[k])
		if len(names) == 0 && notify {
			s.confirmLocked(unsubscribeWord[k], nil, s.subscriptions(k))
		}
	}
	for _, name := range names {
		if s.removeLocked(k, name) {
			h.indexRemove(k, name, s)
		}
		if notify {
			s.confirmLocked(unsubscribeWord[k], &name, s.subscriptions(k))
		}
	}
}

// evict unsubscribes s from a shard channel on the node's behalf, with
// the confirmation Redis sends when a slot leaves the node, if s still
// subscribes to it.
func (h *pubsubHub) evict(s *subscriber, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removeLocked(kindShard, name) {
		h.indexRemove(kindShard, name, s)
		s.confirmLocked(unsubscribeWord[kindShard], &name, s.subscriptions(kindShard))
	}
}

// dropAll removes every subscription of s, confirming none (RESET, a
// connection leaving).
func (h *pubsubHub) dropAll(s *subscriber) {
	for k := range kinds {
		h.unsubscribe(s, k, nil, false)
	}
}

func (h *pubsubHub) indexAdd(k subKind, name string, s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.index[k] == nil {
		h.index[k] = map[string]map[*subscriber]struct{}{}
	}
	set := h.index[k][name]
	if set == nil {
		set = map[*subscriber]struct{}{}
		h.index[k][name] = set
	}
	set[s] = struct{}{}
}

// indexRemove drops s from name's subscribers, and name with its last
// one, so that channels once used cost nothing.
func (h *pubsubHub) indexRemove(k subKind, name string, s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.index[k][name]
	delete(set, s)
	if len(set) == 0 {
		delete(h.index[k], name)
	}
}

// publish delivers a message to this node's subscribers of channel, and,
// for a classic (not shard) channel, to those of every pattern matching
// it. It returns how many received it, counting a connection once per
// subscription that matched, as Redis's PUBLISH does.
func (h *pubsubHub) publish(shard bool, channel, message []byte) int {
	k, word := kindChannel, "message"
	if shard {
		k, word = kindShard, "smessage"
	}
	name := string(channel)
	h.mu.RLock()
	direct := members(h.index[k][name])
	var matched []receivers
	if !shard {
		for pat, set := range h.index[kindPattern] {
			if resp.GlobMatch([]byte(pat), channel, false) {
				matched = append(matched, receivers{pat, members(set)})
			}
		}
	}
	h.mu.RUnlock()
	received := 0
	f := frames{make: func(p int) []byte {
		return resp.Push(resp.BulkString(word), resp.Bulk(channel), resp.Bulk(message)).AppendTo(nil, p)
	}}
	for _, s := range direct {
		if s.deliver(k, name, f.get) {
			received++
		}
	}
	for _, pm := range matched {
		f := frames{make: func(p int) []byte {
			return resp.Push(resp.BulkString("pmessage"), resp.BulkString(pm.name), resp.Bulk(channel), resp.Bulk(message)).AppendTo(nil, p)
		}}
		for _, s := range pm.subs {
			if s.deliver(kindPattern, pm.name, f.get) {
				received++
			}
		}
	}
	return received
}

// receivers are a channel's or pattern's subscribers at one moment.
type receivers struct {
	name string
	subs []*subscriber
}

// frames makes a message's frame once per protocol, for all its
// receivers.
type frames struct {
	make func(proto int) []byte
	made [2][]byte // RESP2, RESP3
}

func (f *frames) get(proto int) []byte {
	i := 0
	if proto == 3 {
		i = 1
	}
	if f.made[i] == nil {
		f.made[i] = f.make(proto)
	}
	return f.made[i]
}

// members lists a subscriber set, to use once the index's lock is let go.
func members(set map[*subscriber]struct{}) []*subscriber {
	out := make([]*subscriber, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	return out
}

// channels lists the channels of kind k with subscribers here, matching
// pattern if it is not nil, sorted (PUBSUB CHANNELS, SHARDCHANNELS).
func (h *pubsubHub) channels(k subKind, pattern []byte) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []string
	for name := range h.index[k] {
		if pattern == nil || resp.GlobMatch(pattern, []byte(name), false) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// numsub is the number of connections here subscribed to name.
func (h *pubsubHub) numsub(k subKind, name []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.index[k][string(name)])
}

// count is the number of channels (or patterns) of kind k with
// subscribers here: PUBSUB NUMPAT for patterns.
func (h *pubsubHub) count(k subKind) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.index[k])
}

// dropMoved evicts the subscribers of every shard channel whose slot
// this node no longer coordinates in m, as Redis does when a slot leaves
// a node: each gets an sunsubscribe for the channel and may subscribe
// again at the slot's new node.
func (h *pubsubHub) dropMoved(m *cluster.Map, self cluster.NodeID) int {
	if m.State != cluster.OK {
		return 0
	}
	h.shardMu.Lock()
	defer h.shardMu.Unlock()
	h.mu.RLock()
	var gone []receivers
	for name, set := range h.index[kindShard] {
		if c, ok := m.Coordinator(keyslot.Of([]byte(name))); !ok || c.ID != self {
			gone = append(gone, receivers{name, members(set)})
		}
	}
	h.mu.RUnlock()
	slices.SortFunc(gone, func(a, b receivers) int { return strings.Compare(a.name, b.name) })
	for _, g := range gone {
		for _, s := range g.subs {
			h.evict(s, g.name)
		}
	}
	return len(gone)
}

// sortedKeys are a set's names in order.
func sortedKeys(set map[string]struct{}) []string {
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
