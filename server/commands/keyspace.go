package commands

import (
	"context"
	"fmt"
	"sync"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
)

// The commands that answer about "the whole keyspace" — SCAN (scan.go),
// DBSIZE, FLUSHALL and FLUSHDB — answer for the node they are sent to: the
// keys of the slots it coordinates, every scheme included, as a Redis
// Cluster master answers for its slots, so that cluster-aware clients that
// send them to every master and combine the answers count each key once.
// A trailing CLUSTER option makes them cluster-wide for a plain client
// (docs/decisions/0004-per-node-keyspace-commands.md).

// cmdDBSize is DBSIZE [CLUSTER], cmdFlush FLUSHALL and FLUSHDB [ASYNC|SYNC]
// [CLUSTER].
var (
	cmdDBSize = keyspaceCommand(resp.ParseDBSize, (*Server).dbsizeNode, (*Server).dbsizeCluster)
	cmdFlush  = keyspaceCommand(resp.ParseFlush, (*Server).flushNode, (*Server).flushCluster)
)

// keyspaceCommand is the handler of a keyspace command whose options parse
// reads (saying whether CLUSTER was given): the cluster-wide form, or the
// node's own once refuseKeyspace lets it run.
func keyspaceCommand(parse func(args [][]byte) (bool, resp.Reply), node, whole func(n *Server, ctx context.Context) resp.Reply) handler {
	return func(n *Server, ctx context.Context, cs *connState, args [][]byte) resp.Reply {
		all, bad := parse(args)
		switch {
		case bad.IsError():
			return bad
		case all:
			return whole(n, ctx)
		}
		if r, refused := n.refuseKeyspace(ctx); refused {
			return r
		}
		return node(n, ctx)
	}
}

// dbsizeNode is DBSIZE: the node's records and stripe objects.
func (n *Server) dbsizeNode(context.Context) resp.Reply {
	return resp.Int(int64(n.Primary.Len() + n.stripes.Keys()))
}

// dbsizeCluster is DBSIZE CLUSTER: the keys of every live node.
func (n *Server) dbsizeCluster(ctx context.Context) resp.Reply {
	all, err := n.ClusterStats(ctx)
	if err != nil {
		return errReply(err)
	}
	var keys int64
	for _, st := range all {
		keys += st.Keys
	}
	return resp.Int(keys)
}

// flushNode is FLUSHALL: the keys of the node's slots (flushSlots).
func (n *Server) flushNode(ctx context.Context) resp.Reply {
	if deleted, err := n.flushSlots(ctx); err != nil {
		return resp.Errorf("ERR memgest: FLUSHALL stopped after deleting %d keys of this node's slots: %v", deleted, err)
	}
	return resp.OK()
}

// flushCluster is FLUSHALL CLUSTER: every live node drops every record and
// piece it holds at once (flushLocal), without the write path.
func (n *Server) flushCluster(ctx context.Context) resp.Reply {
	for _, node := range n.Ctl.Map().Nodes {
		switch {
		case node.Gone():
			continue // it holds nothing that counts, and wipes itself to rejoin
		case node.ID == n.NodeID:
			n.FlushLocal()
		default:
			if _, err := n.Call(ctx, node, peer.MsgFlush, nil); err != nil {
				return errReply(err)
			}
		}
	}
	return resp.OK()
}

// refuseKeyspace answers what a key command of this node's slots would
// get while they cannot be listed or changed: -CLUSTERDOWN while the node
// holds no lease, -TRYAGAIN while a shard it coordinates is recovering.
// Otherwise it first restores the stripe chunks recoveries deferred, whose
// keys count.
func (n *Server) refuseKeyspace(ctx context.Context) (resp.Reply, bool) {
	m := n.Ctl.Map()
	if !n.Serving() {
		return errFenced, true
	}
	for i := range m.Shards {
		sh := &m.Shards[i]
		if c, ok := m.CoordinatorOf(sh); ok && c.ID == n.NodeID && sh.Recovering {
			return resp.Errorf("TRYAGAIN memgest: shard %d is recovering after its coordinator failed", sh.ID), true
		}
	}
	if err := n.stripes.RestoreAll(ctx); err != nil {
		return resp.Errorf("TRYAGAIN memgest: restoring the node's stripe chunks: %v", err), true
	}
	return resp.Reply{}, false
}

// A per-node FLUSHALL lists flushPage keys at a time and deletes them
// flushWorkers at a time, in at most flushPasses walks over the node's
// keys: a pass that found keys is followed by one that checks none is left
// (compaction may move a stripe object behind the walk's cursor; a client
// may write meanwhile, and then its key may survive).
const (
	flushPage    = 256
	flushWorkers = 16
	flushPasses  = 3
)

// flushSlots deletes every key of the slots this node coordinates through
// the write path, as DEL does, so each key's redundancy on other nodes
// (replicas, split shards, stripe objects in their parity) and its
// directory entries go with it, and nothing of other coordinators' keys is
// touched. Expired records and keys reported lost are deleted too. It
// returns how many keys it deleted.
func (n *Server) flushSlots(ctx context.Context) (int64, error) {
	var deleted int64
	for pass := 0; pass < flushPasses; pass++ {
		found, err := n.flushPass(ctx, &deleted)
		if err != nil || found == 0 {
			return deleted, err
		}
	}
	return deleted, nil
}

// flushPass is one walk of flushSlots over the node's keys, then its lost
// keys; it returns how many keys it found.
func (n *Server) flushPass(ctx context.Context, deleted *int64) (int, error) {
	found := 0
	for cursor := uint64(0); ; {
		if !n.Serving() {
			return found, fmt.Errorf("server: %s", errFenced.Text())
		}
		m := n.Ctl.Map()
		var keys [][]byte
		cursor = n.walkKeys(cursor, flushPage, func(key []byte, _ int64) {
			if n.coordinates(m, key) {
				keys = append(keys, append([]byte(nil), key...))
			}
		})
		found += len(keys)
		if err := n.dropKeys(ctx, keys, deleted); err != nil {
			return found, err
		}
		if cursor == 0 {
			break
		}
	}
	m := n.Ctl.Map()
	lost := n.Lost.KeysWhere(func(key []byte) bool { return n.coordinates(m, key) })
	n.Lost.ForgetTagsWhere(func(slot int) bool { c, ok := m.Coordinator(slot); return ok && c.ID == n.NodeID })
	n.forgetMapLosses(ctx, m)
	found += len(lost)
	return found, n.dropKeys(ctx, lost, deleted)
}

// forgetMapLosses ends the map's tag reports of the shards this node
// coordinates, as ForgetTagsWhere ends its own (cluster.ForgetLosses).
func (n *Server) forgetMapLosses(ctx context.Context, m *cluster.Map) {
	for _, sh := range m.Shards {
		if c, ok := m.CoordinatorOf(&sh); !ok || c.ID != n.NodeID || len(m.LossesOf(sh.First, sh.Last)) == 0 {
			continue
		}
		if _, err := n.Propose(ctx, cluster.ForgetLosses{First: sh.First, Last: sh.Last}); err != nil {
			n.Log.Warn("forgetting the map's loss reports of a flushed shard failed", "shard", sh.ID, "err", err)
		}
	}
}

// dropKeys deletes keys, flushWorkers at a time, adding to deleted those
// that existed; it returns the first error once every deletion ended.
func (n *Server) dropKeys(ctx context.Context, keys [][]byte, deleted *int64) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	next := make(chan []byte)
	for range min(flushWorkers, len(keys)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range next {
				existed, err := n.dropKey(ctx, key)
				mu.Lock()
				if existed && err == nil {
					*deleted++
				}
				if first == nil && err != nil {
					first = fmt.Errorf("deleting %q: %w", key, err)
				}
				mu.Unlock()
			}
		}()
	}
	for _, key := range keys {
		next <- key
	}
	close(next)
	wg.Wait()
	return first
}

// dropKey deletes key as DEL does, an expired record not yet deleted or a
// key reported lost included, and says whether there was one.
func (n *Server) dropKey(ctx context.Context, key []byte) (bool, error) {
	var existed bool
	err := n.RMWMeta(ctx, key, func(cur core.Current) (*core.WriteOp, error) {
		entry := cur.Entry
		if !cur.Exists {
			meta, ok := n.KeyMeta(key) // expired, not yet deleted
			if !ok {
				return nil, nil
			}
			if entry, ok = n.Ctl.Map().SchemeByID(meta.Scheme); !ok {
				return nil, fmt.Errorf("server: key %q uses unknown scheme id %d", key, meta.Scheme)
			}
		}
		existed = true
		return &core.WriteOp{Key: key, Del: true, Entry: entry}, nil
	})
	return existed, err
}

// coordinators lists the nodes that coordinate at least one shard, in shard
// order: the nodes SCAN ... CLUSTER visits.
func coordinators(m *cluster.Map) []cluster.Node {
	seen := map[cluster.NodeID]bool{}
	var out []cluster.Node
	for i := range m.Shards {
		node, ok := m.CoordinatorOf(&m.Shards[i])
		if ok && !seen[node.ID] {
			seen[node.ID] = true
			out = append(out, node)
		}
	}
	return out
}

// FlushLocal drops every key this node coordinates and every piece it
// holds, and forgets the stripe chunks its recoveries deferred (their keys
// are flushed too). It holds every inflight shard lock meanwhile, so no
// commit on this node interleaves with it; writes in flight across nodes
// can still leave a piece or a record behind (docs/decisions/0002, "Known
// gaps"). FLUSHALL CLUSTER and a fenced node's wipe use it.
func (n *Server) FlushLocal() {
	n.stripes.ClearPending(func() { n.FlushStores(n.stripes.DropSchemes) })
}
