package server

import (
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/scheme/stripe"
)

// relocate rewrites objs, current objects of victim chunks of the stripe
// scheme with id schemeID, into open chunks together. An object whose key was written since, is being
// written, or has expired stays: a client write moves it anyway, and an
// expired one is queued for deletion.
func (n *Coordinator) relocate(ctx context.Context, schemeID uint16, objs []stripe.Object) {
	ws := make([]blindWrite, 0, len(objs))
	m := n.ctl.Map()
	for _, o := range objs {
		w := blindWrite{key: o.Key, value: o.Value}
		if n.beginRelocation(m, schemeID, &w, o) {
			ws = append(ws, w)
		}
	}
	n.settleBlind(ctx, ws)
	for _, w := range ws {
		if w.err != nil {
			n.log.Debug("compaction could not relocate an object", "key", string(w.key), "err", w.err)
		} else {
			n.stats.relocated.Add(1)
		}
	}
}

// beginRelocation begins w, the rewrite of o, if this node coordinates
// its key, no write of it is in flight, and o is still its current,
// unexpired object in scheme schemeID.
func (n *Coordinator) beginRelocation(m *cluster.Map, schemeID uint16, w *blindWrite, o stripe.Object) bool {
	if c, ok := m.Coordinator(keyslot.Of(o.Key)); !ok || c.ID != n.id {
		return false
	}
	if o.ExpireAt != 0 && o.ExpireAt <= nowMs() {
		n.expireLater(o.Key)
		return false
	}
	sh := n.inflight.shard(o.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.newest(o.Key) != nil {
		return false
	}
	cur, _ := n.peekLocked(o.Key)
	if !cur.exists || cur.entry.ID != schemeID || cur.meta.Version != o.Version {
		return false
	}
	w.op = &writeOp{key: o.Key, value: o.Value, expireAt: cur.meta.ExpireAt, entry: cur.entry, shrinks: true, relocate: true}
	w.p = sh.begin(o.Key, n.clock.next())
	return true
}
