package stripe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/wire"
)

// This file rebuilds batch stripes after a holder failed (decision 0009):
// the shard's coordinator lists which pieces of its stripes each live
// node of the list has, and puts every missing one on the node now at its
// position, from the data chunks (those it keeps, the others read, or
// decoded when their holder is gone) and parity encoded again.

// batchTasks plans the rebuild of the batch stripes this coordinator
// keeps for shard sh, every batching scheme: per scheme, a task for each
// redundancy level with the stripes missing pieces at that level.
func (eng *Engine) batchTasks(ctx context.Context, m *cluster.Map, sh cluster.Shard) ([]RebuildTask, error) {
	var tasks []RebuildTask
	var errs []error
	for _, s := range eng.all() {
		if s.batch != nil {
			t, err := eng.planShardStripes(ctx, m, s, uint16(sh.ID))
			tasks, errs = append(tasks, t...), append(errs, err)
		}
	}
	return tasks, errors.Join(errs...)
}

// pieceAt names a piece: its stripe's serial and its role.
type pieceAt struct {
	serial uint64
	role   int
}

// stripeRepair is a batch stripe missing pieces: the roles to put again.
type stripeRepair struct {
	ref     batchRef
	missing []int
}

// shardStripes lists s's batch stripes of shard, each with the lengths
// of its data chunks.
func (s *schemeState) shardStripes(shard uint16) ([]batchRef, [][]int) {
	var refs []batchRef
	var lens [][]int
	s.mu.Lock()
	defer s.mu.Unlock()
	for slot, st := range s.batch.data.stripes {
		if st != nil && st.shard == shard {
			refs = append(refs, batchRef{shard: shard, serial: st.serial, loc: BatchLoc{Slot: uint32(slot)}, c: st.c})
			lens = append(lens, slices.Clone(st.lens))
		}
	}
	return refs, lens
}

// planShardStripes lists which pieces of s's stripes of shard the live
// nodes of the list hold, and returns a task per redundancy level that
// puts the missing ones.
func (eng *Engine) planShardStripes(ctx context.Context, m *cluster.Map, s *schemeState, shard uint16) ([]RebuildTask, error) {
	refs, lens := s.shardStripes(shard)
	if len(refs) == 0 {
		return nil, nil
	}
	holders, err := listHolders(m, s.spec, shard)
	if err != nil {
		return nil, err
	}
	has, err := eng.heldPieces(ctx, s, shard, holders)
	if err != nil {
		return nil, err
	}
	self, sh := eng.host.Self(), &m.Shards[shard]
	byLevel := map[int]*RebuildTask{}
	repairs := map[int][]stripeRepair{}
	for i, ref := range refs {
		missing := missingRoles(s.spec, holders, ref, has, self)
		if len(missing) == 0 {
			continue
		}
		level := batchStripeLevel(s.spec, sh, holders, ref.c, self, s.batch.data.keeps)
		if byLevel[level] == nil {
			byLevel[level] = &RebuildTask{Level: level, What: fmt.Sprintf("batch stripes of shard %d of %s", shard, s.spec)}
		}
		byLevel[level].Bytes += missingBytes(s.spec, lens[i], missing)
		repairs[level] = append(repairs[level], stripeRepair{ref: ref, missing: missing})
	}
	var tasks []RebuildTask
	for level, t := range byLevel {
		jobs := repairs[level]
		t.run = func(ctx context.Context) error { return eng.reputStripes(ctx, s, holders, shard, jobs) }
		tasks = append(tasks, *t)
	}
	slices.SortFunc(tasks, func(a, b RebuildTask) int { return a.Level - b.Level })
	return tasks, nil
}

// missingRoles are the roles of stripe ref whose live holder lacks its
// piece (has: what each holds), save the coordinator's (self) own.
func missingRoles(spec scheme.Spec, holders []cluster.Node, ref batchRef, has map[cluster.NodeID]map[pieceAt]bool, self cluster.NodeID) []int {
	var missing []int
	for role := range spec.K + batchParities(spec) {
		node := holders[batchPosition(spec, role, ref.c)]
		if node.State == cluster.Up && !(role == 0 && node.ID == self) && !has[node.ID][pieceAt{ref.serial, role}] {
			missing = append(missing, role)
		}
	}
	return missing
}

// missingBytes is what putting a stripe's missing roles sends: a data
// chunk's length, or a parity's (the longest data chunk's).
func missingBytes(spec scheme.Spec, lens []int, missing []int) int64 {
	longest := 0
	for _, l := range lens {
		longest = max(longest, l)
	}
	var out int64
	for _, role := range missing {
		if role < spec.K && role < len(lens) {
			out += int64(lens[role])
		} else {
			out += int64(longest)
		}
	}
	return out
}

// reputStripes puts the missing pieces of jobs, s's stripes of shard.
// A stripe beyond tolerance is counted lost: the keys of its lost chunks
// read -LOST (recovery named them), and the objects that survive — in
// the chunk this node keeps, or on a holder still up — are written again
// into new stripes (Host.Relocate), for the stripe itself can never be
// whole again: left in it they would keep no redundancy, and once this
// coordinator failed too its successor could not tell the stripe from a
// round nobody was told of, and would read them as absent. Any other
// failure ends the task with its error.
func (eng *Engine) reputStripes(ctx context.Context, s *schemeState, holders []cluster.Node, shard uint16, jobs []stripeRepair) error {
	rebuilt, abandoned := 0, 0
	var survivors []Object
	defer func() {
		if rebuilt > 0 || abandoned > 0 {
			eng.log.Info("batch stripe pieces rebuilt", "scheme", s.spec, "shard", shard, "pieces", rebuilt, "stripes_lost", abandoned, "objects_rewritten", len(survivors))
		}
		if abandoned > 0 {
			eng.stats.PositionsLost.Add(int64(abandoned))
		}
	}()
	for _, j := range jobs {
		err := eng.reputPieces(ctx, s, holders, j.ref, j.missing)
		switch {
		case errors.Is(err, errBatchLost):
			abandoned++
			objs := eng.liveObjects(ctx, s, []gcVictim{{slot: j.ref.loc.Slot, serial: j.ref.serial}})
			eng.host.Relocate(ctx, s.id, objs)
			survivors = append(survivors, objs...)
		case err != nil:
			return fmt.Errorf("stripe: rebuilding batch stripe %d of shard %d (%s): %w", j.ref.serial, shard, s.spec, err)
		default:
			rebuilt += len(j.missing)
		}
	}
	return nil
}

// heldPieces lists which pieces of shard's stripes of s each live node
// of the list holds.
func (eng *Engine) heldPieces(ctx context.Context, s *schemeState, shard uint16, holders []cluster.Node) (map[cluster.NodeID]map[pieceAt]bool, error) {
	out := map[cluster.NodeID]map[pieceAt]bool{}
	for _, h := range holders {
		if h.State != cluster.Up || out[h.ID] != nil {
			continue
		}
		has := map[pieceAt]bool{}
		out[h.ID] = has
		err := eng.listPieces(ctx, h, s, shard, false, func(l batchListed) { has[pieceAt{l.Serial, int(l.Role)}] = true })
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// listPieces calls fn with every piece of shard's stripes of s that node
// holds, with their bytes if withBytes, a page at a time.
func (eng *Engine) listPieces(ctx context.Context, node cluster.Node, s *schemeState, shard uint16, withBytes bool, fn func(batchListed)) error {
	for from := uint64(0); ; {
		b, err := eng.host.Call(ctx, node, MsgBatch, encodeBatchList(s.id, shard, from, withBytes))
		if err != nil {
			return fmt.Errorf("stripe: listing shard %d's batch stripes of %s on %s: %w", shard, s.spec, node.ID, err)
		}
		page, err := wire.DecodeList(b, readBatchListed)
		if err != nil || len(page) == 0 {
			return err
		}
		for _, l := range page {
			fn(l)
			from = l.Serial + 1
		}
	}
}

// reputPieces rebuilds the missing roles of the stripe in slot and puts
// them on their positions' nodes.
func (eng *Engine) reputPieces(ctx context.Context, s *schemeState, holders []cluster.Node, r batchRef, missing []int) error {
	shard, serial := r.shard, r.serial
	ps, err := eng.readStripe(ctx, s, holders, r)
	if err != nil {
		return err
	}
	if err := encodeBatch(s.batch.codec, ps); err != nil {
		return err
	}
	pieces := ps.pieces()
	var reqs []Request
	for _, role := range missing {
		req := batchPutReq{Key: batchPieceKey{scheme: s.id, shard: shard, serial: serial, role: uint8(role)}, Lens: ps.lens(), Bytes: pieces[role]}
		if role == s.spec.K {
			req.Manifest = ps.manifest()
		}
		reqs = append(reqs, Request{Node: holders[batchPosition(s.spec, role, r.c)], Msg: MsgBatch, Payload: encodeBatchPuts(s.id, shard, []batchPutReq{req}, nil)})
	}
	_, errs := eng.callEach(ctx, reqs)
	for i, err := range errs {
		if err == nil {
			eng.stats.RebuiltBytes.Add(int64(len(pieces[missing[i]])))
		}
	}
	return errors.Join(errs...)
}

// readStripe returns the data chunks of the stripe in slot: those kept
// here, the others read whole from their holders or, failing that,
// decoded.
func (eng *Engine) readStripe(ctx context.Context, s *schemeState, holders []cluster.Node, r batchRef) (*packedStripe, error) {
	k, shard, slot, serial := s.spec.K, r.shard, r.loc.Slot, r.serial
	s.mu.Lock()
	lens := append([]int(nil), s.batch.data.Lens(slot)...)
	data := make([][]byte, k)
	for q := range k {
		data[q] = s.batch.data.keptChunk(slot, serial, q)
	}
	s.mu.Unlock()
	if len(lens) != k {
		return nil, fmt.Errorf("stripe %d was freed", serial)
	}
	n := 0
	for _, l := range lens {
		n = max(n, l)
	}
	ref := batchRef{shard: shard, serial: serial, loc: BatchLoc{Slot: slot}, size: n, c: r.c}
	var lost []int
	for q := range k {
		if data[q] != nil {
			continue
		}
		whole := ref
		whole.loc.Chunk, whole.size = q, lens[q]
		b, err := eng.readPieceRange(ctx, holders[batchPosition(s.spec, q, r.c)], s, whole, q)
		if err == nil && CheckObjects(b) != nil {
			// A piece failing its objects' checks would spread its damage
			// into every piece encoded from it: decoded instead.
			eng.stats.CorruptBatch.Add(1)
			err = ErrChecksum
		}
		if err != nil {
			lost = append(lost, q)
			continue
		}
		data[q] = b
	}
	for _, q := range lost {
		whole := ref
		whole.loc.Chunk = q
		b, err := eng.decodeBatchChecked(ctx, holders, s, whole)
		if err != nil {
			return nil, err
		}
		data[q] = b[:lens[q]]
	}
	return &packedStripe{data: data}, nil
}

// verifyBatchKey is SCHEME.VERIFY for a batch key (decision 0009): every
// piece of its stripe is read from its holder, the data chunks must be
// as long as the stripe says, the coordinator's kept chunks must equal
// the holders' pieces, and every parity piece must equal a fresh encode
// of the data chunks. Pieces on failed nodes are unavailable.
func (eng *Engine) verifyBatchKey(ctx context.Context, m *cluster.Map, s *schemeState, r batchRef) kind.Check {
	var c kind.Check
	c.Details = []kind.Detail{{Name: "chunk", Value: fmt.Sprintf("batch %d/%d/%d", r.shard, r.serial, r.loc.Chunk)}}
	holders, err := listHolders(m, s.spec, r.shard)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c
	}
	ps, err := eng.readStripe(ctx, s, holders, r)
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c
	}
	if err := encodeBatch(s.batch.codec, ps); err != nil {
		c.Problems = append(c.Problems, err.Error())
		return c
	}
	want := ps.pieces()
	self := eng.host.Self()
	for role, piece := range want {
		node := holders[batchPosition(s.spec, role, r.c)]
		if role == 0 && node.ID == self {
			c.Checked++ // kept here: what the stripe was read from
			continue
		}
		whole := r
		whole.loc.Offset, whole.size = 0, len(piece)
		got, err := eng.readPieceRange(ctx, node, s, whole, role)
		switch {
		case node.State != cluster.Up:
			c.Unavailable++
		case err != nil:
			c.Problems = append(c.Problems, fmt.Sprintf("piece %d on %s: %v", role, node.ID, err))
		case !bytes.Equal(got, piece):
			c.Problems = append(c.Problems, fmt.Sprintf("piece %d on %s differs from the stripe's encode", role, node.ID))
		default:
			c.Checked++
		}
	}
	var nodes []string
	for _, h := range holders {
		nodes = append(nodes, h.ClientAddr)
	}
	c.Details = append(c.Details, kind.Detail{Name: "stripe_nodes", Value: nodes})
	return c
}
