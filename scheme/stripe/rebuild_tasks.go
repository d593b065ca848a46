package stripe

import (
	"context"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme"
)

// This file plans a shard's stripe rebuild as tasks the node can order
// with the rest of its rebuild (issue 43): each task says how much
// redundancy the keys it re-protects have left (its level: the failures
// they still survive, as SCHEME.OF counts them, keyTolerance and
// batchTolerance) and about how many bytes it sends, so that the keys
// with none left are re-protected first, whatever their kind.

// RebuildTask is one piece of a shard's stripe rebuild: a list's lost
// positions of one packed scheme (its data positions' chunks dropped from
// parity, then its parity positions resynced), or the missing pieces of
// a shard's batch stripes of one scheme that share a level.
type RebuildTask struct {
	// Level is how many more failures the least protected key the task
	// re-protects survives until the task is done.
	Level int
	// Bytes estimates what the task sends, from the chunks its plan
	// counted (0 when no parity holder answered the count).
	Bytes int64
	// What names the task in logs and the rebuild's event log.
	What string
	run  func(ctx context.Context) error
}

// Run does the task; the zero task does nothing.
func (t RebuildTask) Run(ctx context.Context) error {
	if t.run == nil {
		return nil
	}
	return t.run(ctx)
}

// RebuildTasks plans the stripe rebuild of shard sh's placement: a task
// for list sh.ID of every packed scheme with a lost position, and the
// tasks of the batch stripes this coordinator keeps for sh. It returns
// the tasks it could plan, and an error if a batch listing failed (the
// shard's rebuild must then run again).
func (eng *Engine) RebuildTasks(ctx context.Context, m *cluster.Map, sh cluster.Shard) ([]RebuildTask, error) {
	g := slices.IndexFunc(m.Shards, func(s cluster.Shard) bool { return s.ID == sh.ID })
	if g < 0 {
		return nil, nil
	}
	var tasks []RebuildTask
	for _, e := range m.Schemes {
		if t, ok := eng.listTask(ctx, m, e, uint16(g), sh); ok {
			tasks = append(tasks, t)
		}
	}
	batch, err := eng.batchTasks(ctx, m, sh)
	return append(tasks, batch...), err
}

// listTask is the task of list g of scheme e, if e is packed and some of
// its positions await a rebuild in sh.
func (eng *Engine) listTask(ctx context.Context, m *cluster.Map, e cluster.SchemeEntry, g uint16, sh cluster.Shard) (RebuildTask, bool) {
	width := e.Spec.K + e.Spec.M
	if !packedKind(e.Spec.Kind) || width > len(sh.Placement) {
		return RebuildTask{}, false
	}
	var lost []int
	for p := range width {
		if slices.Contains(sh.Rebuild, p) {
			lost = append(lost, p)
		}
	}
	if len(lost) == 0 {
		return RebuildTask{}, false
	}
	return RebuildTask{Level: listLevel(m, e.Spec, g), Bytes: eng.listBytes(ctx, m, e, g, lost),
		What: fmt.Sprintf("list %d of %s", g, e.Name()),
		run:  func(ctx context.Context) error { return eng.rebuildList(ctx, m, e, g, lost) }}, true
}

// listLevel is how many more failures the keys of list g of spec survive
// now: the least keyTolerance of its live data positions' chunks (a lost
// data position's objects were recovered into other chunks). With no
// data position live, it is the list's own tolerance left.
func listLevel(m *cluster.Map, spec scheme.Spec, g uint16) int {
	sh := &m.Shards[g]
	all := m.Holders(sh, spec.K+spec.M)
	lost := make([]bool, len(all))
	for p, node := range all {
		lost[p] = positionLost(sh, node, p)
	}
	level := -1
	for q := 0; q < spec.K && q < len(lost); q++ {
		if t := keyTolerance(spec, lost, q); !lost[q] && (level < 0 || t < level) {
			level = t
		}
	}
	if level < 0 {
		level = keyTolerance(spec, lost, 0)
	}
	return level
}

// listBytes estimates what rebuilding list g's lost positions sends: a
// lost data position's chunks once per parity holder with the list's
// state (their removal from parity), and for a lost parity position every
// chunk of the live data positions (the resync).
func (eng *Engine) listBytes(ctx context.Context, m *cluster.Map, e cluster.SchemeEntry, g uint16, lost []int) int64 {
	counts := eng.positionCounts(ctx, m, e, g)
	if counts == nil {
		return 0
	}
	spec, sh := e.Spec, &m.Shards[g]
	all := m.Holders(sh, spec.K+spec.M)
	withState := 0
	for j := range spec.M {
		if !positionLost(sh, all[spec.K+j], spec.K+j) {
			withState++
		}
	}
	chunks := 0
	for _, p := range lost {
		if p < spec.K {
			chunks += counts[p] * withState
			continue
		}
		for q := range spec.K {
			if !slices.Contains(lost, q) && all[q].State == cluster.Up {
				chunks += counts[q]
			}
		}
	}
	return int64(chunks) * int64(spec.ChunkSize())
}

// positionCounts is how many stripes of list g each data position of e
// has a chunk in (sealed or open), as a parity holder with the list's
// state lists them; nil when none answers. The holders are asked last
// first: the first keeps the manifests, which its answer would carry.
func (eng *Engine) positionCounts(ctx context.Context, m *cluster.Map, e cluster.SchemeEntry, g uint16) []int {
	holders, err := parityHolders(m, e.Spec, g)
	if err != nil {
		return nil
	}
	sh := &m.Shards[g]
	for j := len(holders) - 1; j >= 0; j-- {
		if positionLost(sh, holders[j], e.Spec.K+j) {
			continue
		}
		if counts, err := eng.countPositions(ctx, holders[j], e, g); err == nil {
			return counts
		}
	}
	return nil
}

// countPositions asks holder how many stripes of list g each data
// position of e has a chunk in.
func (eng *Engine) countPositions(ctx context.Context, holder cluster.Node, e cluster.SchemeEntry, g uint16) ([]int, error) {
	out := make([]int, e.Spec.K)
	for q := range out {
		b, err := eng.readRaw(ctx, holder, readReq{Scheme: e.ID, What: readPositions, Chunk: ChunkID{List: g, Position: uint8(q)}})
		if err != nil {
			return nil, err
		}
		ps, err := decodePositions(b)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.Sealed || p.Open {
				out[q]++
			}
		}
	}
	return out, nil
}

// batchStripeLevel is how many more failures the least protected object
// of a batch stripe survives (batchTolerance of each of its data
// chunks), the stripe laid out for coordinator position c of sh's list,
// whose nodes are holders; keeps says which data chunks the coordinator
// (self) keeps.
func batchStripeLevel(spec scheme.Spec, sh *cluster.Shard, holders []cluster.Node, c int, self cluster.NodeID, keeps func(int) bool) int {
	level := -1
	for q := range spec.K {
		copies, pieceNodes := batchCover(spec, sh, holders, c, self, keeps, q)
		if t := batchTolerance(len(pieceNodes), spec.K, copies, pieceNodes); level < 0 || t < level {
			level = t
		}
	}
	return max(level, 0)
}

// batchCover is what keeps data chunk q of a batch stripe readable: the
// live nodes that hold it whole (copies) and those that hold a piece of
// the stripe (pieceNodes), the coordinator's kept chunk 0 counting as a
// piece where it stands in for role 0.
func batchCover(spec scheme.Spec, sh *cluster.Shard, holders []cluster.Node, c int, self cluster.NodeID, keeps func(int) bool, q int) (copies, pieceNodes map[cluster.NodeID]bool) {
	copies, pieceNodes = map[cluster.NodeID]bool{}, map[cluster.NodeID]bool{}
	if keeps(q) {
		copies[self] = true
	}
	for role := range spec.K + batchParities(spec) {
		p := batchPosition(spec, role, c)
		node := holders[p]
		switch {
		case role == 0 && node.ID == self:
			pieceNodes[self] = true // kept here, with no piece of its own
		case !positionLost(sh, node, p):
			pieceNodes[node.ID] = true
			if role == q {
				copies[node.ID] = true
			}
		}
	}
	return copies, pieceNodes
}
