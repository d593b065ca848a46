package server

import (
	"context"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/faults"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/scheme/stripe"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
)

// This file is the node as its stripe engine sees it (stripe.Host): the
// peers, lost keys, and the node's half of a recovery of stripe keys,
// which judges the recovered objects and stores them through the packed
// write path (rehomePacked).

// stripeHost is the node as its stripe engine sees it.
type stripeHost struct{ n *Node }

func (h stripeHost) Self() cluster.NodeID { return h.n.NodeID }
func (h stripeHost) Map() *cluster.Map    { return h.n.Ctl.Map() }
func (h stripeHost) Fences() uint64       { return h.n.Lease.Fences.Load() }

func (h stripeHost) Call(ctx context.Context, node cluster.Node, msg stripe.Msg, payload []byte) ([]byte, error) {
	return h.n.Call(ctx, node, stripeFrame(msg), payload)
}

func (h stripeHost) CallEach(ctx context.Context, reqs []stripe.Request, fences uint64) ([][]byte, []error) {
	out := make([]core.PeerReq, len(reqs))
	for i, r := range reqs {
		out[i] = core.PeerReq{Node: r.Node, Typ: stripeFrame(r.Msg), Payload: r.Payload}
	}
	return h.n.CallEachSince(ctx, out, fences)
}

func (h stripeHost) SentParity(e cluster.SchemeEntry, b int) { h.n.Metrics.SentRedundancy(e, b) }
func (h stripeHost) RestoredOnDemand()                       { h.n.Metrics.DegradedRequest(core.DegradedRestored) }
func (h stripeHost) LoseTags(tags []uint32, k kind.LostKey)  { h.n.Lost.AddTags(tags, k) }
func (h stripeHost) LoseRange(first, last int, k kind.LostKey) {
	h.n.Lost.AddRange(first, last, k)
}

func (h stripeHost) Rehome(ctx context.Context, m *cluster.Map, objects map[uint16][]stripe.Object) error {
	keys, picks := newestLive(h.n.Schemes(m), packedCandidates(objects))
	return h.n.RehomePacked(ctx, m, packedObjects(keys, picks))
}

// stripeFrame is the peer frame type of a stripe engine message.
func stripeFrame(m stripe.Msg) uint8 {
	switch m {
	case stripe.MsgUpdates:
		return peer.MsgStripe
	case stripe.MsgRead:
		return peer.MsgStripeRead
	case stripe.MsgResync:
		return peer.MsgStripeResync
	}
	return 0 // no such frame: the peer refuses it
}

// startStripeRestores runs the background pass of every shard this node
// coordinates that is served with stripe keys pending, and proposes
// StripesRestored when none is left.
func (n *Node) startStripeRestores(ctx context.Context) {
	n.startShardJobs(ctx, "stripe restore", &n.restoring,
		func(_ *cluster.Map, sh cluster.Shard) bool { return sh.StripesPending && !sh.Recovering },
		func(ctx context.Context, _ *cluster.Map, sh cluster.Shard) error {
			faults.Hit(faults.BeforeStripeRestore)
			return n.stripes.RestoreShard(ctx, sh.ID)
		},
		func(sh cluster.Shard) cluster.Command { return cluster.StripesRestored{Shard: sh.ID, By: n.NodeID} })
}

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
