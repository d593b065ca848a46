package commands

import (
	"context"

	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/server/resp"
	"github.com/memgest/memgest/transport"
	"github.com/memgest/memgest/wire"
)

func (n *Server) OnForward(b []byte) ([]byte, error) {
	head, body, err := n.runForwarded(b)
	if body == nil {
		return head, err
	}
	return bigcopy.Join(head, body, []byte(resp.BulkEnd)), nil
}

// ServeForward runs a forwarded command and replies with its RESP
// encoding, a large bulk string (a GET of a huge value) sent from where
// it is rather than copied into the reply.
func (n *Server) ServeForward(req transport.Frame, reply func(transport.Frame)) {
	head, body, err := n.runForwarded(req.Payload)
	switch {
	case err != nil:
		reply(peer.ErrFrame(err))
	case body == nil:
		reply(transport.Frame{Type: req.Type, Payload: head})
	default:
		reply(transport.Frame{Type: req.Type, Payload: head, Tail: [][]byte{body, []byte(resp.BulkEnd)}})
	}
}

// runForwarded runs the command of a Forward payload and returns its
// reply as AppendHead does.
func (n *Server) runForwarded(b []byte) (head, body []byte, err error) {
	f, err := decodeForward(b)
	if err != nil {
		return nil, nil, err
	}
	if f.Proto != 2 && f.Proto != 3 {
		return nil, nil, wire.ErrMalformed
	}
	// Finish (or give up) before the forwarding node stops waiting
	// (callUnder).
	budget := n.Cfg.PeerTimeout*4/5 + core.TransferTime(core.ForwardWork*len(b))
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cs := &connState{proto: f.Proto, authed: true, forwarded: true, imported: f.Import}
	head, body = n.execute(ctx, cs, f.Args).AppendHead(nil, f.Proto, inlineReply)
	return head, body, nil
}

func (n *Server) OnScan(b []byte) ([]byte, error) {
	req, err := decodeScan(b)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.Cfg.PeerTimeout*4/5)
	defer cancel()
	if err := n.stripes.RestoreAll(ctx); err != nil {
		return nil, err
	}
	return n.scanLocal(ctx, req).encode(nil), nil
}

func (n *Server) OnFlush([]byte) ([]byte, error) {
	n.FlushLocal()
	return nil, nil
}
