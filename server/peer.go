package server

import (
	"github.com/memgest/memgest/server/peer"
)

// newRouter routes each peer message to the concern that serves it, in
// the mode it needs (peer.Router).
func (n *Node) newRouter() *peer.Router {
	r := peer.NewRouter(func(f func()) { n.Workers.Go(f) })
	for typ, h := range map[uint8]peer.Handler{
		peer.MsgJoin: n.onJoin, peer.MsgPropose: n.onPropose, peer.MsgHeartbeat: n.onHeartbeat,
	} {
		r.Handle(typ, peer.Unfenced, h)
	}
	for typ, h := range map[uint8]peer.Handler{
		peer.MsgScan: n.cmds.OnScan, peer.MsgStats: n.cmds.OnStats, peer.MsgFlush: n.cmds.OnFlush,
		peer.MsgListPieces: n.repair.OnListPieces, peer.MsgRepair: n.OnRepair, peer.MsgAudit: n.repair.OnAudit,
		peer.MsgHolds:      n.OnHolds,
		peer.MsgStripeRead: n.stripes.OnRead, peer.MsgStripeResync: n.stripes.OnResync, peer.MsgStripeBatch: n.stripes.OnBatch,
		peer.MsgStripeRepair: n.stripes.OnRepair,
		peer.MsgPublish:      n.cmds.OnPublish, // in order all the same: the sender waits for each frame's answer
	} {
		r.Handle(typ, peer.OffLoop, h)
	}
	for typ, h := range map[uint8]peer.Handler{
		peer.MsgDelPiece: n.OnDelPiece, peer.MsgDirectory: n.OnDirectory, peer.MsgStripe: n.stripes.OnUpdates,
	} {
		r.Handle(typ, peer.OnLoop, h)
	}
	r.HandleBulk(peer.MsgPutPieces, n.OnPutPieces)
	r.HandleStream(peer.MsgForward, peer.OffLoop, n.cmds.OnForward, n.cmds.ServeForward)
	r.Handle(peer.MsgTx, peer.OffLoop, n.cmds.OnTx)
	r.Handle(peer.MsgMigrate, peer.OffLoop, n.cmds.OnMigrate)
	r.HandleStream(peer.MsgGetPiece, peer.OnLoop, n.OnGetPiece, n.ServeRead)
	r.HandleStream(peer.MsgGetPieces, peer.OnLoop, n.OnGetPieces, n.ServeRead)
	return r
}
