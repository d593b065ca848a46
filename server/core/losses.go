package core

import (
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
)

// forgetLost ends the loss report of op's key, which op writes or
// deletes. A deleted key the map's reports cover is cleared there too, in
// the background, so that it reads as absent on any later coordinator
// (cluster.ClearLost); a written one exists, and no coordinator looks it
// up in the reports.
func (n *Coordinator) forgetLost(op *WriteOp) {
	if !n.Lost.Forget(op.Key, op.Del) || !op.Del {
		return
	}
	slot := keyslot.Of(op.Key)
	if len(n.Ctl.Map().LossesOf(slot, slot)) == 0 {
		return
	}
	clear := cluster.ClearLost{Key: string(op.Key), Slot: slot}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*n.Cfg.PeerTimeout)
		defer cancel()
		if _, err := n.Propose(ctx, clear); err != nil {
			n.Log.Warn("clearing a deleted key's loss report in the map failed; it stays cleared here", "key", clear.Key, "err", err)
		}
	}()
}
