package core

import (
	"errors"

	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/store"
	"github.com/memgest/memgest/transport"
)

// Large requests are served off the connection's read loop, so that the
// frames behind them on the connection (other writes' pieces, reads) are
// not held up while a 512 MiB piece is stored or checksummed: PutPieces
// that came in parts (nothing depends on their order: a coordinator waits
// for their acknowledgement before it sends anything about their keys),
// and reads whose pieces are large (serveRead).

// ForwardWork is how many times its own size a forwarded command's
// coordinator may have to move: receive it, and send a rep:3 value's two
// replicas.
const ForwardWork = 3

// largeRead is the size of the pieces a read must return beyond which it
// is served off the read loop: checking their checksums takes a while.
const largeRead = 1 << 20

// ServeRead answers GetPiece and GetPieces: the pieces are looked up on
// the read loop (store.View: no copy), and checked and sent from there too
// when small, from a worker when large.
func (n *Coordinator) ServeRead(req transport.Frame, reply func(transport.Frame)) {
	refs, err := decodeReads(req)
	if err != nil {
		reply(peer.ErrFrame(err))
		return
	}
	views, size := n.viewPieces(refs)
	answer := func() {
		payload, tail, err := n.answerRead(req.Type, refs, views)
		if err != nil {
			reply(peer.ErrFrame(err))
			return
		}
		reply(transport.Frame{Type: req.Type, Payload: payload, Tail: tail})
	}
	if size > largeRead {
		n.Workers.Go(answer)
		return
	}
	answer()
}

// OnPutPieces stores a batch of pieces. A malformed batch stores none; a
// piece the store refuses (checksum, size) is reported in its slot of the
// reply and fails only the write it belongs to.
//
// The payload is this handler's (a frame's, or a copy made for a local
// request), so a piece that is most of it is stored without a copy; its
// bytes are then the store's. Smaller pieces are copied, so that no stored
// piece keeps much more than itself alive.
func (n *Coordinator) OnPutPieces(b []byte) ([]byte, error) {
	pieces, err := peer.DecodePutPieces(b)
	if err != nil {
		return nil, err
	}
	refusals := make([]string, len(pieces))
	for i, p := range pieces {
		if err := n.StorePiece(p, 2*len(p.Data) >= len(b)); err != nil {
			refusals[i] = err.Error()
		}
	}
	return peer.EncodePutPiecesResp(refusals), nil
}

func (n *Coordinator) OnGetPiece(b []byte) ([]byte, error) {
	refs, err := decodeReads(transport.Frame{Type: peer.MsgGetPiece, Payload: b})
	if err != nil {
		return nil, err
	}
	views, _ := n.viewPieces(refs)
	payload, _, err := n.answerRead(peer.MsgGetPiece, refs, views)
	return payload, err
}

// OnGetPieces reads many pieces; each slot says found, missing or corrupt.
func (n *Coordinator) OnGetPieces(b []byte) ([]byte, error) {
	refs, err := peer.DecodeGetPieces(b)
	if err != nil {
		return nil, err
	}
	views, _ := n.viewPieces(refs)
	payload, tail, err := n.answerRead(peer.MsgGetPieces, refs, views)
	return PeerReq{Payload: payload, Tail: tail}.Whole(), err
}

// decodeReads decodes a GetPiece (one ref) or GetPieces request.
func decodeReads(req transport.Frame) ([]peer.PieceRef, error) {
	if req.Type == peer.MsgGetPieces {
		return peer.DecodeGetPieces(req.Payload)
	}
	r, err := peer.DecodePieceRef(req.Payload)
	return []peer.PieceRef{r}, err
}

// pieceView is a stored piece as a read finds it, its checksum not yet
// checked.
type pieceView struct {
	data []byte
	meta store.Meta
	ok   bool
}

// viewPieces looks the pieces of refs up without copying them
// (store.View) and returns their total size.
func (n *Coordinator) viewPieces(refs []peer.PieceRef) ([]pieceView, int) {
	views := make([]pieceView, len(refs))
	size := 0
	for i, r := range refs {
		v := &views[i]
		v.data, v.meta, v.ok = n.Pieces.View(StoreKey(r))
		size += len(v.data)
	}
	return views, size
}

// answerRead checks the pieces a read found and encodes its reply: a
// GetPiece's is the piece's bytes (or an error), a GetPieces' a slot per
// piece, large ones sent without a copy.
func (n *Coordinator) answerRead(typ uint8, refs []peer.PieceRef, views []pieceView) ([]byte, [][]byte, error) {
	slots := make([]peer.PieceSlot, len(refs))
	for i, r := range refs {
		data, err := n.checkPiece(r, views[i].data, views[i].meta, views[i].ok)
		if typ == peer.MsgGetPiece {
			return data, nil, err
		}
		switch {
		case err == nil:
			slots[i].Data = data
		case errors.Is(err, kind.ErrPieceCorrupt):
			slots[i].Status = peer.PieceCorrupt
		default:
			slots[i].Status = peer.PieceMissing
		}
	}
	payload, tail := peer.EncodeGetPiecesResp(slots)
	return payload, tail, nil
}

func (n *Coordinator) OnDelPiece(b []byte) ([]byte, error) {
	r, err := peer.DecodePieceRef(b)
	if err != nil {
		return nil, err
	}
	n.dropPieces(r)
	return nil, nil
}
