package server

import (
	"context"
)

// This file is what a deletion by expiry does on the coordinator: the
// key's delete through the write path (expireKey), and the queue of keys
// a read found expired (expireLater). The active cycle that samples the
// stores is expiry.go's.

// expireQueueSize bounds the keys queued for deletion by reads.
const expireQueueSize = 4096

// expireKey deletes key if it is still expired when its turn comes.
func (n *Coordinator) expireKey(ctx context.Context, key []byte) {
	expired := false
	err := n.rmwMeta(ctx, key, func(cur current) (*writeOp, error) {
		meta, ok := n.keyMeta(key) // the primary store's or a stripe scheme's
		if !ok || meta.ExpireAt == 0 || meta.ExpireAt > nowMs() {
			return nil, nil
		}
		expired = true
		entry, _ := n.ctl.Map().SchemeByID(meta.Scheme)
		return &writeOp{key: key, del: true, entry: entry}, nil
	})
	if err == nil && expired {
		n.stats.expired.Add(1)
	}
}

// expireLater queues key for deletion after a read found it expired; a full
// queue drops it, and the active cycle finds it later.
func (n *Coordinator) expireLater(key []byte) {
	select {
	case n.expireQ <- append([]byte(nil), key...):
	default:
	}
}
