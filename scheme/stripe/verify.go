package stripe

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
)

// verifyKey is SCHEME.VERIFY for a stripe key: the key's chunk, if
// open, must equal every parity holder's copy of it; if sealed, every
// parity chunk of its stripe must equal a fresh encode of the stripe's
// sealed data chunks (open or missing positions are zeros). The key's own
// writes are held off, but other keys of the stripe may be written
// meanwhile, so a disagreement is looked at again a few times before it is
// reported.
func (eng *Engine) verifyKey(ctx context.Context, m *cluster.Map, key []byte, entry cluster.SchemeEntry) kind.Check {
	var r kind.Check
	s, err := eng.scheme(entry)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r
	}
	s.mu.Lock()
	id, _, found := s.data.Locate(key)
	_, sealed, _, _ := s.data.Read(id)
	br, inBatch := s.newerInBatch(key)
	s.mu.Unlock()
	if inBatch {
		return eng.verifyBatchKey(ctx, m, s, br)
	}
	if !found {
		r.Problems = append(r.Problems, "the key's object is in no chunk")
		return r
	}
	var nodes []string
	if int(id.List) < len(m.Shards) {
		for _, h := range m.Holders(&m.Shards[id.List], s.spec.K+s.spec.M) {
			nodes = append(nodes, h.ClientAddr)
		}
	}
	eng.verifyChunk(ctx, m, s, id, &r)
	r.Details = []kind.Detail{
		{Name: "chunk", Value: fmt.Sprintf("%d/%d/%d", id.List, id.Position, id.Stripe)},
		{Name: "sealed", Value: sealed},
		{Name: "stripe_nodes", Value: nodes},
	}
	return r
}

// verifyChunk checks one of this node's chunks against its stripe, a few
// times if it disagrees (see verifyKey).
func (eng *Engine) verifyChunk(ctx context.Context, m *cluster.Map, s *schemeState, id ChunkID, r *kind.Check) {
	for attempt := 0; ; attempt++ {
		try := kind.Check{}
		eng.verifyChunkOnce(ctx, m, s, id, &try)
		if len(try.Problems) == 0 || attempt == 4 {
			r.Checked, r.Unavailable, r.Problems = try.Checked, try.Unavailable, try.Problems
			return
		}
		select {
		case <-ctx.Done():
			r.Problems = append(try.Problems, ctx.Err().Error())
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (eng *Engine) verifyChunkOnce(ctx context.Context, m *cluster.Map, s *schemeState, id ChunkID, r *kind.Check) {
	s.mu.Lock()
	local, sealed, _, found := s.data.Read(id)
	s.mu.Unlock()
	if !found {
		return // freed meanwhile
	}
	holders, err := parityHolders(m, s.spec, id.List)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return
	}
	if !sealed {
		eng.verifyCopies(ctx, m, s, id, local, holders, r)
		return
	}
	eng.verifyParity(ctx, m, s, id, local, holders, r)
}

// verifyCopies compares an open chunk with its parity holders' copies.
func (eng *Engine) verifyCopies(ctx context.Context, m *cluster.Map, s *schemeState, id ChunkID, local []byte, holders []cluster.Node, r *kind.Check) {
	for j, h := range holders {
		if h.State == cluster.Failed {
			r.Unavailable++
			continue
		}
		c, err := eng.readChunk(ctx, h, readReq{Scheme: s.id, What: readImage, Chunk: id})
		switch {
		case err == nil && !c.Found && m.StoodIn(&m.Shards[id.List], s.spec.K+j):
			r.Unavailable++ // a stand-in gets the chunk with its next update
		case err != nil:
			r.Problems = append(r.Problems, fmt.Sprintf("parity holder %d of %s: %v", j, id, err))
		case !c.Found && !isZeroChunk(local), c.Found && !bytes.Equal(c.Bytes, local):
			r.Problems = append(r.Problems, fmt.Sprintf("parity holder %d's copy of open %s differs", j, id))
		default:
			r.Checked++
		}
	}
}

// verifyParity re-encodes a sealed chunk's stripe and compares each
// parity chunk, and a hybrid list's replica's copy with the chunk.
func (eng *Engine) verifyParity(ctx context.Context, m *cluster.Map, s *schemeState, id ChunkID, local []byte, holders []cluster.Node, r *kind.Check) {
	k, np, size := s.spec.K, parities(s.spec), len(local)
	shards := make([][]byte, k+np)
	sh := &m.Shards[id.List]
	for q := 0; q < k; q++ {
		if q == int(id.Position) {
			shards[q] = local
			continue
		}
		shards[q] = make([]byte, size)
		node, ok := m.Node(sh.Placement[q])
		if slices.Contains(sh.Rebuild, q) {
			r.Unavailable++ // its lost chunks are in parity until the rebuild drops them
			continue
		}
		if !ok || m.StoodIn(sh, q) {
			continue // rebuilt: its chunks were dropped from parity
		}
		c, err := eng.readChunk(ctx, node, readReq{Scheme: s.id, What: readDataChunk, Chunk: ChunkID{List: id.List, Position: uint8(q), Stripe: id.Stripe}})
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("data position %d of stripe %d/%d: %v", q, id.List, id.Stripe, err))
			return
		}
		if c.Found && c.Sealed {
			shards[q] = c.Bytes
		}
	}
	if r.Unavailable > 0 {
		return // a lost position's chunk is in parity until it is rebuilt
	}
	if err := encodeParity(shards, k, np, size); err != nil {
		r.Problems = append(r.Problems, err.Error())
		return
	}
	for j, h := range holders {
		if h.State == cluster.Failed || slices.Contains(sh.Rebuild, k+j) {
			r.Unavailable++ // a new holder has the list's chunks once rebuilt
			continue
		}
		if j == replicaHolder(s.spec) {
			eng.verifyReplica(ctx, s, id, local, h, r)
			continue
		}
		c, err := eng.readChunk(ctx, h, readReq{Scheme: s.id, What: readParityChunk, Chunk: id})
		switch {
		case err != nil:
			r.Problems = append(r.Problems, fmt.Sprintf("parity %d of stripe %d/%d: %v", j, id.List, id.Stripe, err))
		case !c.Found || int(c.J) != j:
			r.Problems = append(r.Problems, fmt.Sprintf("parity %d of stripe %d/%d is missing", j, id.List, id.Stripe))
		case !bytes.Equal(c.Bytes, shards[k+j]):
			r.Problems = append(r.Problems, fmt.Sprintf("parity %d of stripe %d/%d differs from an encode of its data chunks", j, id.List, id.Stripe))
		default:
			r.Checked++
		}
	}
}

// verifyReplica compares a sealed chunk with the replica holder's copy.
func (eng *Engine) verifyReplica(ctx context.Context, s *schemeState, id ChunkID, local []byte, h cluster.Node, r *kind.Check) {
	c, err := eng.readChunk(ctx, h, readReq{Scheme: s.id, What: readImage, Chunk: id})
	switch {
	case err != nil:
		r.Problems = append(r.Problems, fmt.Sprintf("replica of %s: %v", id, err))
	case !c.Found:
		r.Problems = append(r.Problems, fmt.Sprintf("replica of %s is missing", id))
	case !bytes.Equal(c.Bytes, local):
		r.Problems = append(r.Problems, fmt.Sprintf("replica of %s differs from the chunk", id))
	default:
		r.Checked++
	}
}

// VerifyAll checks every chunk this node coordinates, in every
// stripe scheme, against its stripe (DEBUG STRIPES).
func (eng *Engine) VerifyAll(ctx context.Context) kind.Check {
	var r kind.Check
	m := eng.host.Map()
	for _, s := range eng.all() {
		var ids []ChunkID
		s.mu.Lock()
		s.data.Chunks(func(id ChunkID, _ []byte, _ bool) { ids = append(ids, id) })
		s.mu.Unlock()
		for _, id := range ids {
			var one kind.Check
			eng.verifyChunk(ctx, m, s, id, &one)
			r.Checked += one.Checked
			r.Unavailable += one.Unavailable
			for _, p := range one.Problems {
				r.Problems = append(r.Problems, s.spec.String()+": "+p)
			}
		}
	}
	return r
}

func isZeroChunk(b []byte) bool { return !slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) }
