package server

import (
	"context"

	"github.com/memgest/memgest/cluster"
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

func (h stripeHost) Relocate(ctx context.Context, id uint16, objects []stripe.Object) {
	for len(objects) > 0 {
		k := min(len(objects), compactBatch)
		h.n.Relocate(ctx, relocations(id, objects[:k]))
		objects = objects[k:]
	}
}

func (h stripeHost) Rehome(ctx context.Context, m *cluster.Map, objects map[uint16][]stripe.Object) error {
	return h.n.repair.Rehome(ctx, m, objects)
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
	case stripe.MsgBatch:
		return peer.MsgStripeBatch
	case stripe.MsgRepair:
		return peer.MsgStripeRepair
	}
	return 0 // no such frame: the peer refuses it
}
