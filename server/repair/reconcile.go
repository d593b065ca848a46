package repair

import (
	"context"
	"fmt"
	"slices"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/wire"
)

// A shard that is one end of a migration (decision 0016) shares slots, and
// often holders, with the other end. Pieces and directory entries are
// named by their shard (kind.Piece), so recovering one end lists only its
// own; but a key can have pieces at both ends for a while: the importer
// wrote it before the source deleted it, or the source's successor
// restores a key the importer holds from pieces its deletion had not
// released yet. The rule that settles them is the migration's own: a key
// the source holds is the source's, any other the importer's. So once it
// has listed the candidates, the recovering node asks the other end's
// coordinator which of the migrating slots' keys it holds, and leaves to
// it those that are its: the source's successor leaves the importer every
// key the importer holds, the importer's successor leaves the source every
// key the source holds. This end's pieces of those keys are stale, and are
// released like any stale version.

// holdsBatch bounds the keys of one Holds request.
const holdsBatch = 4096

// otherEnd returns, for a shard sh of m in a migration, the slots that
// migrate, the other end's coordinator, and whether sh is the source.
func otherEnd(m *cluster.Map, sh cluster.Shard) (first, last int, other cluster.Node, source, ok bool) {
	if sh.Importing {
		other, ok = m.CoordinatorOf(&m.Shards[sh.From])
		return sh.First, sh.Last, other, false, ok
	}
	if t := m.ImporterFrom(sh.ID); t != nil {
		other, ok = m.CoordinatorOf(t)
		return t.First, t.Last, other, true, ok
	}
	return 0, 0, cluster.Node{}, false, false
}

// leftKeys are the keys a recovery left to the other end of a migration:
// this end's candidates of each, and its directory entries.
type leftKeys struct {
	cands map[string][]*candidate
	dir   map[string]pieceEntry
}

// leaveToOtherEnd removes from found and dir the keys of sh's migrating
// slots that belong to the migration's other end (see above), and returns
// what it removed.
func (n *Repairer) leaveToOtherEnd(ctx context.Context, m *cluster.Map, sh cluster.Shard, found map[string][]*candidate, dir map[string]pieceEntry) (leftKeys, error) {
	left := leftKeys{cands: map[string][]*candidate{}, dir: map[string]pieceEntry{}}
	first, last, other, source, ok := otherEnd(m, sh)
	if !ok {
		return left, nil
	}
	var keys []string
	migrating := func(k string) bool { s := keyslot.Of([]byte(k)); return s >= first && s <= last }
	for k := range found {
		if migrating(k) {
			keys = append(keys, k)
		}
	}
	for k := range dir {
		if _, listed := found[k]; !listed && migrating(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for start := 0; start < len(keys); start += holdsBatch {
		batch := keys[start:min(start+holdsBatch, len(keys))]
		held, err := n.askHolds(ctx, other, batch)
		if err != nil {
			return left, fmt.Errorf("asking %s which keys of the migrating slots it holds: %w", other.PeerAddr, err)
		}
		for i, k := range batch {
			// The source's successor leaves the importer what it holds;
			// the importer's successor leaves the source what it holds.
			if !held[i] {
				continue
			}
			if cands, ok := found[k]; ok {
				left.cands[k] = cands
				delete(found, k)
			}
			if d, ok := dir[k]; ok {
				left.dir[k] = d
				delete(dir, k)
			}
		}
	}
	n.Log.Info("recovery left the other end of a migration its keys", "shard", sh.ID, "source", source,
		"asked", len(keys), "left", len(left.cands)+len(left.dir))
	return left, nil
}

// askHolds asks node which of keys it holds as coordinator (core.OnHolds).
func (n *Repairer) askHolds(ctx context.Context, node cluster.Node, keys []string) ([]bool, error) {
	req := wire.EncodeList(keys, func(e wire.Enc, k string) wire.Enc { return e.Bytes([]byte(k)) })
	out, err := n.Call(ctx, node, peer.MsgHolds, req)
	if err != nil {
		return nil, err
	}
	if len(out) != len(keys) {
		return nil, wire.ErrMalformed
	}
	held := make([]bool, len(keys))
	for i, b := range out {
		held[i] = b == 1
	}
	return held, nil
}
