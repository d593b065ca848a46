package server

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/ec"
	"github.com/memgest/memgest/scheme/stripe"
)

// verifyStripe is SCHEME.VERIFY for a stripe key: the key's chunk, if
// open, must equal every parity holder's copy of it; if sealed, every
// parity chunk of its stripe must equal a fresh encode of the stripe's
// sealed data chunks (open or missing positions are zeros). The key's own
// writes are held off, but other keys of the stripe may be written
// meanwhile, so a disagreement is looked at again a few times before it is
// reported.
func (n *Node) verifyStripe(ctx context.Context, m *cluster.Map, key []byte, entry cluster.SchemeEntry, r *verifyReport) {
	s, err := n.stripes.scheme(entry)
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return
	}
	s.mu.Lock()
	id, _, found := s.data.Locate(key)
	_, sealed, _, _ := s.data.Read(id)
	s.mu.Unlock()
	if !found {
		r.problems = append(r.problems, "the key's object is in no chunk")
		return
	}
	r.chunk = &chunkReport{id: id, sealed: sealed}
	if int(id.List) < len(m.Shards) {
		for _, h := range m.Holders(&m.Shards[id.List], s.spec.K+s.spec.M) {
			r.chunk.nodes = append(r.chunk.nodes, h.ClientAddr)
		}
	}
	n.verifyChunk(ctx, m, s, id, r)
}

// verifyChunk checks one of this node's chunks against its stripe, a few
// times if it disagrees (see verifyStripe).
func (n *Node) verifyChunk(ctx context.Context, m *cluster.Map, s *stripeScheme, id stripe.ChunkID, r *verifyReport) {
	for attempt := 0; ; attempt++ {
		try := verifyReport{}
		n.verifyChunkOnce(ctx, m, s, id, &try)
		if len(try.problems) == 0 || attempt == 4 {
			r.checked, r.unavailable, r.problems = try.checked, try.unavailable, try.problems
			return
		}
		select {
		case <-ctx.Done():
			r.problems = append(try.problems, ctx.Err().Error())
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (n *Node) verifyChunkOnce(ctx context.Context, m *cluster.Map, s *stripeScheme, id stripe.ChunkID, r *verifyReport) {
	s.mu.Lock()
	local, sealed, _, found := s.data.Read(id)
	s.mu.Unlock()
	if !found {
		return // freed meanwhile
	}
	holders, err := parityHolders(m, s.spec, id.List)
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return
	}
	if !sealed {
		n.verifyCopies(ctx, m, s, id, local, holders, r)
		return
	}
	n.verifyParity(ctx, m, s, id, local, holders, r)
}

// verifyCopies compares an open chunk with its parity holders' copies.
func (n *Node) verifyCopies(ctx context.Context, m *cluster.Map, s *stripeScheme, id stripe.ChunkID, local []byte, holders []cluster.Node, r *verifyReport) {
	for j, h := range holders {
		if h.State == cluster.Failed {
			r.unavailable++
			continue
		}
		c, err := n.readStripeChunk(ctx, h, stripeRead{Scheme: s.id, What: readImage, Chunk: id})
		switch {
		case err == nil && !c.Found && m.StoodIn(&m.Shards[id.List], s.spec.K+j):
			r.unavailable++ // a stand-in gets the chunk with its next update
		case err != nil:
			r.problems = append(r.problems, fmt.Sprintf("parity holder %d of %s: %v", j, id, err))
		case !c.Found && !isZeroChunk(local), c.Found && !bytes.Equal(c.Bytes, local):
			r.problems = append(r.problems, fmt.Sprintf("parity holder %d's copy of open %s differs", j, id))
		default:
			r.checked++
		}
	}
}

// verifyParity re-encodes a sealed chunk's stripe and compares each
// parity chunk.
func (n *Node) verifyParity(ctx context.Context, m *cluster.Map, s *stripeScheme, id stripe.ChunkID, local []byte, holders []cluster.Node, r *verifyReport) {
	k, size := s.spec.K, len(local)
	shards := make([][]byte, k+s.spec.M)
	sh := &m.Shards[id.List]
	for q := 0; q < k; q++ {
		if q == int(id.Position) {
			shards[q] = local
			continue
		}
		shards[q] = make([]byte, size)
		node, ok := m.Node(sh.Placement[q])
		if slices.Contains(sh.Rebuild, q) {
			r.unavailable++ // its lost chunks are in parity until the rebuild drops them
			continue
		}
		if !ok || m.StoodIn(sh, q) {
			continue // rebuilt: its chunks were dropped from parity
		}
		c, err := n.readStripeChunk(ctx, node, stripeRead{Scheme: s.id, What: readDataChunk, Chunk: stripe.ChunkID{List: id.List, Position: uint8(q), Stripe: id.Stripe}})
		if err != nil {
			r.problems = append(r.problems, fmt.Sprintf("data position %d of stripe %d/%d: %v", q, id.List, id.Stripe, err))
			return
		}
		if c.Found && c.Sealed {
			shards[q] = c.Bytes
		}
	}
	if r.unavailable > 0 {
		return // a lost position's chunk is in parity until it is rebuilt
	}
	for j := range s.spec.M {
		shards[k+j] = make([]byte, size)
	}
	codec, err := ec.New(k, s.spec.M)
	if err == nil {
		err = codec.Encode(shards)
	}
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return
	}
	for j, h := range holders {
		if h.State == cluster.Failed || slices.Contains(sh.Rebuild, k+j) {
			r.unavailable++ // a new holder has the list's chunks once rebuilt
			continue
		}
		c, err := n.readStripeChunk(ctx, h, stripeRead{Scheme: s.id, What: readParityChunk, Chunk: id})
		switch {
		case err != nil:
			r.problems = append(r.problems, fmt.Sprintf("parity %d of stripe %d/%d: %v", j, id.List, id.Stripe, err))
		case !c.Found || int(c.J) != j:
			r.problems = append(r.problems, fmt.Sprintf("parity %d of stripe %d/%d is missing", j, id.List, id.Stripe))
		case !bytes.Equal(c.Bytes, shards[k+j]):
			r.problems = append(r.problems, fmt.Sprintf("parity %d of stripe %d/%d differs from an encode of its data chunks", j, id.List, id.Stripe))
		default:
			r.checked++
		}
	}
}

// verifyAllStripes checks every chunk this node coordinates, in every
// stripe scheme, against its stripe (DEBUG STRIPES).
func (n *Node) verifyAllStripes(ctx context.Context) verifyReport {
	var r verifyReport
	m := n.ctl.Map()
	for _, s := range n.stripes.all() {
		var ids []stripe.ChunkID
		s.mu.Lock()
		s.data.Chunks(func(id stripe.ChunkID, _ []byte, _ bool) { ids = append(ids, id) })
		s.mu.Unlock()
		for _, id := range ids {
			var one verifyReport
			n.verifyChunk(ctx, m, s, id, &one)
			r.checked += one.checked
			r.unavailable += one.unavailable
			for _, p := range one.problems {
				r.problems = append(r.problems, s.spec.String()+": "+p)
			}
		}
	}
	return r
}

func isZeroChunk(b []byte) bool { return !slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) }
