package core

import (
	"context"

	"github.com/memgest/memgest/wire"
)

// OnHolds answers which of a list of keys this node holds as coordinator
// (a committed, unexpired record or packed object, or a key it reports
// lost): one byte per key, 1 or 0. A node recovering a shard that is one
// end of a migration asks the other end (repair/reconcile.go).
func (n *Coordinator) OnHolds(b []byte) ([]byte, error) {
	keys, err := wire.DecodeList(b, func(d *wire.Dec) []byte { return d.Bytes() })
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(keys))
	for i, k := range keys {
		if cur, err := n.MetaCommitted(context.Background(), k); err == nil && cur.Exists {
			out[i] = 1
		}
	}
	return out, nil
}
