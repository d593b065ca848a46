package commands

import (
	"bytes"
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/wire"
)

// A transaction whose slot another node coordinates runs there as a
// whole: WATCH asks the coordinator for the versions to record, and EXEC
// sends it the queued commands and the watched versions in one Tx request
// (peer.MsgTx), which it runs as runTx does for a local one. A forwarded
// command of the transaction's would run on its own, between other
// connections' commands.

// Kinds of Tx request.
const (
	txWatch uint8 = 1 // read the versions WATCH records
	txExec  uint8 = 2 // run a transaction
)

// txReq is a Tx request: the slot, and either the keys to watch or the
// queued commands with what WATCH recorded (watch nil: nothing).
type txReq struct {
	kind  uint8
	proto int
	slot  int
	keys  [][]byte   // txWatch
	watch *watchSet  // txExec
	cmds  [][][]byte // txExec
}

// spool is r's encoding as a frame's payload and tail: large arguments
// are sent from the client's request, as forwardReq's are.
func (r txReq) spool() (payload []byte, tail [][]byte) {
	s := wire.Spool{Cur: wire.Enc(nil).U8(r.kind).U8(uint8(r.proto)).U16(uint16(r.slot))}
	if r.kind == txWatch {
		s.Cur = s.Cur.U32(uint32(len(r.keys)))
		for _, k := range r.keys {
			s.Cur = s.Cur.Bytes(k)
		}
		return s.Frame()
	}
	s.Cur = s.Cur.Flag(r.watch != nil)
	if w := r.watch; w != nil {
		s.Cur = s.Cur.Str(string(w.node)).U64(w.boot).U64(w.mark).Flag(w.broken).U32(uint32(len(w.keys)))
		for _, k := range w.keys {
			s.Cur = s.Cur.Bytes(k.key).Flag(k.exists).U64(k.version)
		}
	}
	s.Cur = s.Cur.U32(uint32(len(r.cmds)))
	for _, args := range r.cmds {
		s.Cur = s.Cur.U32(uint32(len(args)))
		for _, a := range args {
			s.Bytes(a)
		}
	}
	return s.Frame()
}

func decodeTx(b []byte) (txReq, error) {
	d := wire.NewDec(b)
	r := txReq{kind: d.U8(), proto: int(d.U8()), slot: int(d.U16())}
	switch r.kind {
	case txWatch:
		r.keys = decodeList(&d, len(b), (*wire.Dec).Bytes)
	case txExec:
		if d.Flag() {
			w := &watchSet{slot: r.slot, node: cluster.NodeID(d.Str()), boot: d.U64(), mark: d.U64(), broken: d.Flag()}
			w.keys = decodeList(&d, len(b), func(d *wire.Dec) watchedKey {
				return watchedKey{key: d.Bytes(), exists: d.Flag(), version: d.U64()}
			})
			r.watch = w
		}
		r.cmds = decodeList(&d, len(b), func(d *wire.Dec) [][]byte { return decodeList(d, len(b), (*wire.Dec).Bytes) })
	default:
		d.Fail()
	}
	if r.proto != 2 && r.proto != 3 {
		d.Fail()
	}
	return r, d.Done()
}

// decodeList reads a u32 count and as many items; a count no payload of
// size bytes can hold fails d.
func decodeList[T any](d *wire.Dec, size int, item func(*wire.Dec) T) []T {
	n := int(d.U32())
	if n > size {
		d.Fail()
		return nil
	}
	out := make([]T, 0, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		out = append(out, item(d))
	}
	return out
}

// OnTx serves a Tx request as the slot's coordinator: a WATCH's
// versions (encodeWatch), or a transaction's RESP reply.
func (n *Server) OnTx(b []byte) ([]byte, error) {
	r, err := decodeTx(b)
	if err != nil {
		return nil, err
	}
	// Finish (or give up) before the sending node stops waiting.
	budget := n.Cfg.PeerTimeout*4/5 + core.TransferTime(core.ForwardWork*len(b))
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var reply resp.Reply
	var w watchSet
	owner, ok := n.Ctl.Map().Coordinator(r.slot)
	switch {
	case !ok:
		reply = errSlotNotServed
	case owner.ID != n.NodeID:
		reply = resp.Moved(r.slot, owner.ClientAddr) // maps in flux: the client retries there
	case r.kind == txWatch:
		w, reply = n.watchHere(ctx, r.slot, r.keys)
	default:
		cs := &connState{proto: r.proto, authed: true, forwarded: true}
		reply = n.runTx(ctx, cs, r.slot, r.watch, r.cmds)
	}
	if r.kind == txWatch {
		return encodeWatch(w, reply), nil
	}
	return reply.AppendTo(nil, r.proto), nil
}

// encodeWatch is the answer to a txWatch request: 0 and the versions, or
// 1 and the error reply the WATCH gets.
func encodeWatch(w watchSet, r resp.Reply) []byte {
	if r.IsError() {
		return wire.Enc(nil).U8(1).Str(r.Text())
	}
	e := wire.Enc(nil).U8(0).Str(string(w.node)).U64(w.boot).U64(w.mark).U32(uint32(len(w.keys)))
	for _, k := range w.keys {
		e = e.Flag(k.exists).U64(k.version)
	}
	return e
}

// decodeWatch reads encodeWatch's answer for keys.
func decodeWatch(b []byte, slot int, keys [][]byte) (watchSet, resp.Reply, error) {
	d := wire.NewDec(b)
	if d.U8() == 1 {
		msg := d.Str()
		return watchSet{}, resp.Err(msg), d.Done()
	}
	w := watchSet{slot: slot, node: cluster.NodeID(d.Str()), boot: d.U64(), mark: d.U64()}
	if int(d.U32()) != len(keys) {
		d.Fail()
	}
	for i := 0; i < len(keys) && d.Err() == nil; i++ {
		w.keys = append(w.keys, watchedKey{key: bytes.Clone(keys[i]), exists: d.Flag(), version: d.U64()})
	}
	return w, resp.OK(), d.Done()
}

// watchRemote asks owner, the coordinator of slot, for the versions of
// keys that WATCH records.
func (n *Server) watchRemote(ctx context.Context, owner cluster.Node, slot int, keys [][]byte) (watchSet, resp.Reply) {
	payload, tail := txReq{kind: txWatch, proto: 2, slot: slot, keys: keys}.spool()
	out, err := n.CallUnder(ctx, core.PeerReq{Node: owner, Typ: peer.MsgTx, Payload: payload, Tail: tail}, nil)
	if err != nil {
		// WATCH changes nothing: safe to retry either way.
		return watchSet{}, resp.Errorf("TRYAGAIN memgest: coordinator %s did not answer WATCH: %v", owner.ClientAddr, err)
	}
	w, r, err := decodeWatch(out, slot, keys)
	if err != nil {
		return w, resp.Errorf("ERR bad WATCH reply from coordinator %s: %v", owner.ClientAddr, err)
	}
	return w, r
}

// forwardTx runs a transaction on owner, the coordinator of slot, and
// relays its reply. As with a forwarded command (forward), a failure
// after the request was sent leaves the outcome unknown.
func (n *Server) forwardTx(ctx context.Context, cs *connState, owner cluster.Node, slot int, w *watchSet, cmds [][][]byte) resp.Reply {
	payload, tail := txReq{kind: txExec, proto: cs.proto, slot: slot, watch: w, cmds: cmds}.spool()
	return n.relay(ctx, core.PeerReq{Node: owner, Typ: peer.MsgTx, Payload: payload, Tail: tail}, "transaction")
}
