package core

import (
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
)

// Relocate rewrites objs, current objects of a packed scheme's victim
// chunks (compaction), into open chunks together. An object whose key was
// written since, is being written, or has expired stays: a client write
// moves it anyway, and an expired one is queued for deletion.
func (n *Coordinator) Relocate(ctx context.Context, objs []PackedObject) {
	ws := make([]BlindWrite, 0, len(objs))
	m := n.Ctl.Map()
	for _, o := range objs {
		w := BlindWrite{Key: o.Key, Value: o.Value}
		if n.beginRelocation(m, &w, o) {
			ws = append(ws, w)
		}
	}
	n.settleBlind(ctx, ws)
	for _, w := range ws {
		if w.Err != nil {
			n.Log.Debug("compaction could not relocate an object", "key", string(w.Key), "err", w.Err)
		} else {
			n.Stats.Relocated.Add(1)
		}
	}
}

// beginRelocation begins w, the rewrite of o, if this node coordinates
// its key, no write of it is in flight, and o is still its current,
// unexpired object in its scheme.
func (n *Coordinator) beginRelocation(m *cluster.Map, w *BlindWrite, o PackedObject) bool {
	if c, ok := m.Coordinator(keyslot.Of(o.Key)); !ok || c.ID != n.NodeID {
		return false
	}
	if o.ExpireAt != 0 && o.ExpireAt <= NowMs() {
		n.expireLater(o.Key)
		return false
	}
	sh := n.Inflight.Shard(o.Key)
	sh.Mu.Lock()
	defer sh.Mu.Unlock()
	if sh.Newest(o.Key) != nil {
		return false
	}
	cur, _ := n.peekLocked(o.Key)
	if !cur.Exists || cur.Entry.ID != o.Scheme || cur.Meta.Version != o.Version {
		return false
	}
	w.op = &WriteOp{Key: o.Key, Value: o.Value, ExpireAt: cur.Meta.ExpireAt, Entry: cur.Entry, Shrinks: true, relocate: true}
	w.p = sh.Begin(o.Key, n.Versions.next())
	return true
}
