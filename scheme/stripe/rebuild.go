package stripe

import (
	"context"
	"errors"
	"fmt"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/wire"
)

// This file restores a stripe list after failures (decision 0003): the
// chunks of a failed data node are dropped from their stripes' parity once
// every shard it coordinated is recovered (their objects were appended
// again elsewhere), a parity holder that took over a failed one gets every
// chunk of the list from its data nodes, and a node that takes over a data
// position adopts the stripe numbers the holders know before appending
// there.

// adoptSlots adopts, before a first append, each data position this node
// may append at but has not numbered chunks in: it asks the list's parity
// holders which stripe numbers the position has state in, so that new
// chunks continue their seqs (a holder would take a repeated seq for a
// duplicate) and avoid the stripe numbers whose old chunks are still in
// parity until a rebuild drops them.
func (eng *Engine) adoptSlots(ctx context.Context, s *schemeState) error {
	m := eng.host.Map()
	s.mu.Lock()
	if s.adoptedAt == m.Epoch {
		s.mu.Unlock()
		return nil // every position of this map is adopted
	}
	var todo []Slot
	for _, slot := range ownSlots(m, s.spec, eng.host.Self()) {
		if !s.data.Adopted(slot) {
			todo = append(todo, slot)
		}
	}
	if len(todo) == 0 {
		s.adoptedAt = m.Epoch
	}
	s.mu.Unlock()
	for _, slot := range todo {
		lp := lostPosition{entry: cluster.SchemeEntry{ID: s.id, Spec: s.spec}, list: slot.List, pos: int(slot.Position)}
		holders, err := parityHolders(m, s.spec, slot.List)
		if err != nil {
			return err
		}
		states, err := eng.positionStates(ctx, m, lp, holders)
		if err != nil && !errors.Is(err, errNoParityState) {
			return err
		}
		// With no holder left that has the list's state (beyond its
		// tolerance), no old chunk is in any parity a new one could clash
		// with: the position starts afresh, and new holders get its chunks
		// by resync.
		var known []PositionState
		for _, st := range states {
			for _, p := range st {
				known = append(known, p)
			}
		}
		s.mu.Lock()
		if !s.data.Adopted(slot) {
			s.data.Adopt(slot, known)
			s.epoch = 0 // recompute the slots
		}
		s.mu.Unlock()
	}
	return nil
}

// Rebuild restores the stripe lists of shard sh's placement: every task
// RebuildTasks plans, in turn. The node's rebuild runs the tasks itself,
// ordered with its other work by level.
func (eng *Engine) Rebuild(ctx context.Context, m *cluster.Map, sh cluster.Shard) error {
	tasks, err := eng.RebuildTasks(ctx, m, sh)
	errs := []error{err}
	for _, t := range tasks {
		errs = append(errs, t.Run(ctx))
	}
	return errors.Join(errs...)
}

// rebuildList restores list g of scheme e at its lost positions: a data
// position whose own node is gone has its chunks dropped from parity; a
// parity position held by a node that may lack the list's state is
// resynced by every live data node.
func (eng *Engine) rebuildList(ctx context.Context, m *cluster.Map, e cluster.SchemeEntry, g uint16, lost []int) error {
	var errs []error
	for _, p := range lost {
		var err error
		if lp := (lostPosition{entry: e, list: g, pos: p}); p < e.Spec.K {
			if err = eng.dropLostChunks(ctx, m, lp); err != nil && beyondTolerance(m, lp) {
				eng.abandonPosition(lp, "rebuild", err) // its chunks stay in parity
				err = nil
			}
		} else {
			err = eng.resyncParity(ctx, m, e, g, p-e.Spec.K)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// dropLostChunks removes a lost data position's chunks from their
// stripes' parity: each chunk is decoded and XORed out of every holder's
// parity (or copy), then freed there, as numbered updates that continue
// the holders' seqs, so a repeat is a no-op. Beyond the scheme's
// tolerance the chunks that cannot be decoded stay in parity (an error
// counts them) and the others are still dropped: their keys were
// recovered.
func (eng *Engine) dropLostChunks(ctx context.Context, m *cluster.Map, lp lostPosition) error {
	dropped, kept := 0, 0
	var lose func(ChunkID, []map[uint32]PositionState, error) bool
	if beyondTolerance(m, lp) {
		lose = func(ChunkID, []map[uint32]PositionState, error) bool {
			kept++
			return ctx.Err() == nil
		}
	}
	err := eng.lostChunks(ctx, m, lp, nil, lose, func(id ChunkID, b []byte, states []map[uint32]PositionState, holders []cluster.Node) error {
		dropped++
		return eng.dropChunk(ctx, lp, holders, states, id, b)
	})
	if dropped > 0 {
		eng.log.Info("lost stripe chunks dropped from parity", "scheme", lp.entry.Name(), "list", lp.list, "position", lp.pos, "chunks", dropped, "err", err)
	}
	if err == nil && kept > 0 {
		err = fmt.Errorf("stripe: %d chunks of list %d position %d of %s cannot be decoded", kept, lp.list, lp.pos, lp.entry.Name())
	}
	return err
}

// stillInParity says whether some holder still has stripe r's chunk,
// sealed or as a copy.
func stillInParity(states []map[uint32]PositionState, r uint32) bool {
	for _, st := range states {
		if p, ok := st[r]; ok && (p.Sealed || p.Open) {
			return true
		}
	}
	return false
}

// dropChunk sends each holder that has chunk id at the same seq the delta
// that removes it (b, the chunk's bytes) and a Free.
func (eng *Engine) dropChunk(ctx context.Context, lp lostPosition, holders []cluster.Node, states []map[uint32]PositionState, id ChunkID, b []byte) error {
	var reqs []Request
	for j, st := range states {
		p, ok := st[id.Stripe]
		if !ok || !p.Sealed && !p.Open {
			continue
		}
		t := p.Through
		ups := []holderUpdate{
			{J: j, U: Update{Chunk: id, Seq: t + 1, Base: t, Kind: Delta, Bytes: b}},
			{J: j, U: Update{Chunk: id, Seq: t + 2, Base: t, Kind: Free}},
		}
		if isZeroChunk(b) {
			ups = ups[1:] // nothing to take out of parity
			ups[0].U.Seq = t + 1
		}
		reqs = append(reqs, Request{Node: holders[j], Msg: MsgUpdates, Payload: encodeUpdates(lp.entry.ID, ups)})
	}
	replies, errs := eng.callEach(ctx, reqs)
	for i, err := range errs {
		if err == nil {
			var acks []holderAck
			if acks, err = wire.DecodeList(replies[i], readAck); err == nil {
				for _, a := range acks {
					if a.Refusal != "" || a.Outcome == Missing {
						err = fmt.Errorf("dropping %s: %s %s", id, a.Outcome, a.Refusal)
					}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("stripe: dropping lost %s of %s: %w", id, lp.entry.Name(), err)
		}
		eng.stats.RebuiltBytes.Add(int64(len(b)))
	}
	return nil
}

// resyncParity has every live data node of list g send the holder of
// parity position j each of its chunks there (Resync), which a new holder
// folds into parity and a holder in sync ignores.
func (eng *Engine) resyncParity(ctx context.Context, m *cluster.Map, e cluster.SchemeEntry, g uint16, j int) error {
	sh := &m.Shards[g]
	if holders, err := parityHolders(m, e.Spec, g); err != nil || holders[j].State != cluster.Up {
		// No node can take the position yet (a failed node with no spare
		// or stand-in left): the list runs with reduced tolerance, as rep
		// and split do, until a node takes the place and is rebuilt.
		return err
	}
	req := resyncReq{Scheme: e.ID, List: g, J: uint8(j)}
	var reqs []Request
	for q := 0; q < e.Spec.K; q++ {
		node, ok := m.Node(sh.Placement[q])
		if ok && node.State == cluster.Up && !m.StoodIn(sh, q) {
			reqs = append(reqs, Request{Node: node, Msg: MsgResync, Payload: req.encode(nil)})
		}
	}
	_, errs := eng.callEach(ctx, reqs)
	return errors.Join(errs...)
}

// resyncReq asks a data node to resync its chunks of a list with
// one parity holder.
type resyncReq struct {
	Scheme uint16
	List   uint16
	J      uint8
}

func (r resyncReq) encode(e wire.Enc) wire.Enc { return e.U16(r.Scheme).U16(r.List).U8(r.J) }

func decodeResyncReq(b []byte) (resyncReq, error) {
	d := wire.NewDec(b)
	r := resyncReq{Scheme: d.U16(), List: d.U16(), J: d.U8()}
	return r, d.Done()
}

// OnResync sends this node's chunks of a list to one parity holder,
// whole (Resync), and then whatever the holder still lacks.
func (eng *Engine) OnResync(b []byte) ([]byte, error) {
	r, err := decodeResyncReq(b)
	if err != nil {
		return nil, err
	}
	m := eng.host.Map()
	entry, ok := m.SchemeByID(r.Scheme)
	if !ok || !packedKind(entry.Spec.Kind) || int(r.J) >= entry.Spec.M {
		return nil, fmt.Errorf("stripe: no parity position %d of a stripe scheme with id %d", r.J, r.Scheme)
	}
	s, err := eng.scheme(entry)
	if err != nil {
		return nil, err
	}
	holders, err := parityHolders(m, entry.Spec, r.List)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), eng.cfg.PeerTimeout)
	defer cancel()
	eng.repairList(ctx, s, r.List) // a new parity is encoded from sound chunks only
	var ups []Update
	s.mu.Lock()
	s.data.Chunks(func(id ChunkID, _ []byte, _ bool) {
		if id.List == r.List {
			if u, ok := s.data.Resync(id); ok {
				ups = append(ups, u)
			}
		}
	})
	s.mu.Unlock()
	return nil, eng.resyncHolder(ctx, s, holders[r.J], int(r.J), ups)
}

// resyncHolder sends ups to holder, parity position j, until it has
// applied them, a few rounds at most. A holder refuses a Resync when it
// has applied an update the Resync does not carry yet (a write's, sent
// meanwhile, that overtook it); ignoring the refusal left its copy of the
// chunk at that one update. Each update refused or reported Missing is
// followed by what the holder then lacks (Data.CatchUp): a later
// Resync, or the logged updates after its seq.
func (eng *Engine) resyncHolder(ctx context.Context, s *schemeState, holder cluster.Node, j int, ups []Update) error {
	var refused error // the last refusal, for the error
	for round := 0; len(ups) > 0; round++ {
		if round == 4 {
			return fmt.Errorf("stripe: parity holder %s still lacks %s after %d rounds of resync (%v)", holder.PeerAddr, ups[0].Chunk, round, refused)
		}
		frame := make([]holderUpdate, len(ups))
		for i, u := range ups {
			frame[i] = holderUpdate{J: j, U: u}
		}
		replies, errs := eng.callEach(ctx, []Request{{Node: holder, Msg: MsgUpdates, Payload: encodeUpdates(s.id, frame)}})
		if errs[0] != nil {
			return errs[0]
		}
		acks, err := decodeAcks(replies[0], len(ups))
		if err != nil {
			return err
		}
		for _, u := range ups {
			eng.stats.RebuiltBytes.Add(int64(len(u.Bytes)))
		}
		var lacking []Update
		s.mu.Lock()
		for i, a := range acks {
			if a.Refusal != "" {
				refused = fmt.Errorf("%s: %s", ups[i], a.Refusal)
			}
			if a.Refusal != "" || a.Outcome == Missing {
				lacking = append(lacking, s.data.CatchUp(ups[i].Chunk, a.Through)...)
			}
		}
		s.mu.Unlock()
		ups = dedupUpdates(lacking)
	}
	return nil
}
