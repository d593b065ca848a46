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
// often holders, with the other end, and pieces do not say which end
// placed them: recovering it from the holders finds the other end's keys
// of the migrating slots too. The rule that settles them is the
// migration's own: a key the source holds is the source's, any other the
// importer's. So once it has listed the candidates, the recovering node
// asks the other end's coordinator which of the migrating slots' keys it
// holds, and leaves to it those that are its: the source's successor
// leaves the importer every key the importer holds, the importer's
// successor leaves the source every key the source holds. Their pieces are
// the other end's, so they are neither restored nor released here.

// holdsBatch bounds the keys of one Holds request.
const holdsBatch = 4096

// otherEnd returns, for a shard sh of m in a migration, the slots that
// migrate, the other end's coordinator, and whether sh is the source.
func otherEnd(m *cluster.Map, sh cluster.Shard) (first, last int, other cluster.Node, source, ok bool) {
	if sh.Importing {
		other, ok = m.CoordinatorOf(&m.Shards[sh.From])
		return sh.First, sh.Last, other, false, ok
	}
	for i := range m.Shards {
		if t := &m.Shards[i]; t.Importing && t.From == sh.ID {
			other, ok = m.CoordinatorOf(t)
			return t.First, t.Last, other, true, ok
		}
	}
	return 0, 0, cluster.Node{}, false, false
}

// leaveToOtherEnd removes from found the keys of sh's migrating slots that
// belong to the migration's other end (see above).
func (n *Repairer) leaveToOtherEnd(ctx context.Context, m *cluster.Map, sh cluster.Shard, found map[string][]*candidate) error {
	first, last, other, source, ok := otherEnd(m, sh)
	if !ok {
		return nil
	}
	var keys []string
	for k := range found {
		if s := keyslot.Of([]byte(k)); s >= first && s <= last {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for start := 0; start < len(keys); start += holdsBatch {
		batch := keys[start:min(start+holdsBatch, len(keys))]
		held, err := n.askHolds(ctx, other, batch)
		if err != nil {
			return fmt.Errorf("asking %s which keys of the migrating slots it holds: %w", other.PeerAddr, err)
		}
		for i, k := range batch {
			// The source's successor leaves the importer what it holds;
			// the importer's successor leaves the source what it holds.
			if held[i] {
				delete(found, k)
			}
		}
	}
	n.Log.Info("recovery left the other end of a migration its keys", "shard", sh.ID, "source", source, "asked", len(keys))
	return nil
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
