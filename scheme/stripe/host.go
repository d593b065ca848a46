package stripe

import (
	"context"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/wire"
)

// Host is the node as its stripe engine sees it: the map, the peers, and
// the parts of a recovery and of lost keys that are the node's own (the
// key directory, versions and the write path). The node implements it.
type Host interface {
	// Self is this node's id.
	Self() cluster.NodeID
	// Map is the newest cluster map the node has.
	Map() *cluster.Map
	// Fences is the number of times the node was fenced: requests decided
	// under one count fail if the node is fenced since (CallEach).
	Fences() uint64
	// Call sends one request to node and returns its reply.
	Call(ctx context.Context, node cluster.Node, msg Msg, payload []byte) ([]byte, error)
	// CallEach sends every request at once, each with the node's authority
	// as of fences, and returns the replies and errors by request. A
	// request to this node is served here.
	CallEach(ctx context.Context, reqs []Request, fences uint64) ([][]byte, []error)
	// SentParity counts bytes of scheme e's updates sent to other nodes.
	SentParity(e cluster.SchemeEntry, bytes int)
	// RestoredOnDemand counts a command that had to wait for pending chunks
	// to be restored.
	RestoredOnDemand()
	// LoseTags reports the keys with one of tags as maybe lost (-LOST).
	LoseTags(tags []uint32, k kind.LostKey)
	// LoseRange reports every key of slots first..last the node does not
	// hold as maybe lost.
	LoseRange(first, last int, k kind.LostKey)
	// Rehome stores recovered objects, by scheme id, as this node's own:
	// for each key the newest version among them the node judges
	// readable, unless the key is known at a newer one.
	Rehome(ctx context.Context, m *cluster.Map, objects map[uint16][]Object) error
	// Relocate writes again, through the node's write path, the objects
	// of scheme id that are still their keys' current ones, as
	// compaction's relocations are: each joins a new chunk or stripe.
	Relocate(ctx context.Context, id uint16, objects []Object)
}

// Msg is a stripe engine's peer message; the node maps it to a frame type
// and hands the frames it receives to OnUpdates, OnRead and OnResync.
type Msg uint8

const (
	// MsgUpdates carries chunk updates to a parity holder (OnUpdates).
	MsgUpdates Msg = iota + 1
	// MsgRead reads a chunk, a parity chunk or a holder's state (OnRead).
	MsgRead
	// MsgResync asks a data node to resync a parity holder (OnResync).
	MsgResync
	// MsgBatch puts, reads, lists or frees batch stripes' pieces
	// (OnBatch).
	MsgBatch
	// MsgRepair gives a holder sound bytes for a copy or a parity chunk
	// the scrub found differing (OnRepair).
	MsgRepair
)

// Request is one message to a peer.
type Request struct {
	Node    cluster.Node
	Msg     Msg
	Payload []byte
}

// callEach is Host.CallEach under the node's current fence count.
func (eng *Engine) callEach(ctx context.Context, reqs []Request) ([][]byte, []error) {
	return eng.host.CallEach(ctx, reqs, eng.host.Fences())
}

// encodeList is wire.EncodeList for items that encode themselves.
func encodeList[T interface{ encode(wire.Enc) wire.Enc }](items []T) wire.Enc {
	return wire.EncodeList(items, func(e wire.Enc, x T) wire.Enc { return x.encode(e) })
}
