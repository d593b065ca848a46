package commands

import (
	"context"
	"math/rand/v2"
	"strconv"

	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/resp"
)

// More keyspace commands (issue 28). KEYS and RANDOMKEY answer for the
// node they are sent to, as SCAN and DBSIZE do (decision 0004): the keys
// of the slots it coordinates, every scheme; KEYS pattern CLUSTER lists
// the whole cluster's. TOUCH, EXPIRETIME and PEXPIRETIME are per key.

func init() {
	data := func(h handler) *command { return &command{run: h, needsFormed: true} }
	register("keys", data(cmdKeys))
	register("randomkey", data(cmdRandomKey))
	register("touch", &command{run: cmdTouch, fanout: fanCount, needsFormed: true})
	register("expiretime", data(ttlCmd(1000, true)))
	register("pexpiretime", data(ttlCmd(1, true)))
}

// keysPage is how many records a KEYS walk visits per step.
const keysPage = 1024

// cmdKeys is KEYS pattern [CLUSTER]: the matching keys of this node's
// slots, or with CLUSTER of every coordinator's.
func cmdKeys(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	all, bad := resp.ParseKeys(args)
	switch {
	case bad.IsError():
		return bad
	case all:
		return n.keysCluster(ctx, args[1])
	}
	if r, refused := n.refuseKeyspace(ctx); refused {
		return r
	}
	req := scanReq{Count: keysPage, Match: args[1]}
	var list keyList
	for {
		res := n.scanLocal(ctx, req)
		list.add(res.Keys)
		if req.Cursor = res.Next; req.Cursor == 0 {
			return list.reply()
		}
	}
}

// keysCluster is KEYS pattern CLUSTER: SCAN ... CLUSTER's walk over every
// coordinator, in large steps.
func (n *Server) keysCluster(ctx context.Context, pattern []byte) resp.Reply {
	var list keyList
	for cursor := uint64(0); ; {
		r := n.scanCluster(ctx, cursor, scanReq{Count: maxScanCount, Match: pattern})
		if r.IsError() {
			return r
		}
		items := r.Items()
		for _, k := range items[1].Items() {
			list.add([][]byte{[]byte(k.Text())})
		}
		next, err := strconv.ParseUint(items[0].Text(), 10, 64)
		if err != nil || next == 0 {
			return list.reply()
		}
		cursor = next
	}
}

// keyList gathers keys once each: a key rewritten during a walk may be
// met twice (a stripe object moved to a later chunk).
type keyList struct {
	seen map[string]bool
	keys []resp.Reply
}

func (l *keyList) add(keys [][]byte) {
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	for _, k := range keys {
		if !l.seen[string(k)] {
			l.seen[string(k)] = true
			l.keys = append(l.keys, resp.Bulk(k))
		}
	}
}

func (l *keyList) reply() resp.Reply { return resp.Array(l.keys...) }

// randomKeyTries is how many random places RANDOMKEY starts from before
// it walks the node's keys in order; randomKeyWalk how many records one
// try visits.
const (
	randomKeyTries = 8
	randomKeyWalk  = 64
)

// cmdRandomKey is a key of this node's slots drawn at random, or nil.
func cmdRandomKey(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	if r, refused := n.refuseKeyspace(ctx); refused {
		return r
	}
	if k := n.randomKey(); k != nil {
		return resp.Bulk(k)
	}
	return resp.Nil()
}

// randomKey starts a walk of the node's keys at a random place (the
// primary store's or a stripe scheme's, in proportion to their keys) and
// takes the first live key it coordinates. After randomKeyTries walks
// that met none (expired keys, keys of slots taken over), it walks from
// the start.
func (n *Server) randomKey() []byte {
	primary, packed := n.Primary.Len(), n.stripes.Keys()
	if primary+packed == 0 {
		return nil
	}
	for range randomKeyTries {
		cursor := stripeScanFlag | n.stripes.RandomCursor()
		if rand.IntN(primary+packed) < primary {
			cursor = n.Primary.RandomCursor()
		}
		if k := n.firstLiveKey(cursor, randomKeyWalk); k != nil {
			return k
		}
	}
	return n.firstLiveKey(0, -1)
}

// firstLiveKey walks from cursor, wrapping once to the start, visiting at
// most budget records (-1: all), and returns an unexpired key this node
// coordinates: one drawn at random among those of the first step that has
// any (a step covers a whole stripe chunk, whose keys would otherwise be
// drawn only by their first).
func (n *Server) firstLiveKey(cursor uint64, budget int) []byte {
	m, now := n.Ctl.Map(), core.NowMs()
	var found []byte
	visited, live := 0, 0
	visit := func(key []byte, expireAt int64) {
		visited++
		if (expireAt == 0 || expireAt > now) && n.coordinates(m, key) {
			if live++; rand.IntN(live) == 0 { // reservoir sampling
				found = append(found[:0], key...)
			}
		}
	}
	wrapped := cursor == 0
	for found == nil && (budget < 0 || visited < budget) {
		if cursor = n.walkKeys(cursor, 1, visit); cursor == 0 {
			if wrapped {
				break
			}
			wrapped = true
		}
	}
	return found
}

// cmdTouch counts the keys that exist and records each as used (a temperature
// policy's access sketch), as Redis updates their access time.
func cmdTouch(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
	var count int64
	for _, key := range args[1:] {
		cur, err := n.MetaCommitted(ctx, key)
		if err != nil {
			return errReply(err)
		}
		if cur.Exists {
			count++
			n.Accessed(key, cur)
		}
	}
	return resp.Int(count)
}
