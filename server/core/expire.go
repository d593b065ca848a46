package core

import (
	"context"
)

// This file is what a deletion by expiry does on the coordinator: the
// key's delete through the write path (expireKey), and the queue of keys
// a read found expired (expireLater). The active cycle that samples the
// stores is expiry.go's.

// expireQueueSize bounds the keys queued for deletion by reads.
const expireQueueSize = 4096

// ExpireKey deletes key if it is still expired when its turn comes.
func (n *Coordinator) ExpireKey(ctx context.Context, key []byte) {
	expired := false
	err := n.RMWMeta(ctx, key, func(cur Current) (*WriteOp, error) {
		meta, ok := n.KeyMeta(key) // the primary store's or a stripe scheme's
		if !ok || meta.ExpireAt == 0 || meta.ExpireAt > NowMs() {
			return nil, nil
		}
		expired = true
		entry, _ := n.Ctl.Map().SchemeByID(meta.Scheme)
		return &WriteOp{Key: key, Del: true, Entry: entry}, nil
	})
	if err == nil && expired {
		n.Stats.Expired.Add(1)
	}
}

// expireLater queues key for deletion after a read found it expired; a full
// queue drops it, and the active cycle finds it later.
func (n *Coordinator) expireLater(key []byte) {
	select {
	case n.ExpireQ <- append([]byte(nil), key...):
	default:
	}
}
