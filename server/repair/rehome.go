package repair

import (
	"context"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
)

// packedCandidates makes recovered objects, by scheme id, recovery
// candidates with their values.
func packedCandidates(objects map[uint16][]stripe.Object) map[string][]*candidate {
	out := map[string][]*candidate{}
	for id, objs := range objects {
		for _, o := range objs {
			key := string(o.Key)
			out[key] = append(out[key], &candidate{scheme: id, version: o.Version, expireAt: o.ExpireAt,
				complete: true, value: slices.Clone(o.Value)})
		}
	}
	return out
}

// packedObjects are the objects of keys at the versions picks chose,
// for rehomePacked.
func packedObjects(keys []string, picks []*candidate) []core.PackedObject {
	out := make([]core.PackedObject, len(keys))
	for i, c := range picks {
		out[i] = core.PackedObject{Key: []byte(keys[i]), Value: c.value, Version: c.version, ExpireAt: c.expireAt, Scheme: c.scheme}
	}
	return out
}

// newestLive picks each key's newest candidate (newestReadable), leaving
// out expired ones.
func newestLive(t *core.SchemeTable, cands map[string][]*candidate) ([]string, []*candidate) {
	now := core.NowMs()
	var keys []string
	var picks []*candidate
	for key, cs := range cands {
		best := newestReadable(t, cs)
		if best != nil && (best.expireAt == 0 || best.expireAt > now) {
			keys, picks = append(keys, key), append(picks, best)
		}
	}
	return keys, picks
}

// Rehome is the node's half of a recovery of stripe keys (stripe.Host):
// it picks each recovered key's newest live object and stores the picks
// as this node's own through the core's packed write path.
func (n *Repairer) Rehome(ctx context.Context, m *cluster.Map, objects map[uint16][]stripe.Object) error {
	keys, picks := newestLive(n.Schemes(m), packedCandidates(objects))
	return n.RehomePacked(ctx, m, packedObjects(keys, picks))
}
