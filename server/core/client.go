package core

import (
	"context"
	"fmt"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/bigcopy"
	"github.com/memgest/memgest/scheme/kind"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/transport"
)

// This file is the node's peer client: one request (call), or a fan-out
// to several nodes answered together (callEach), under the epoch and, for
// messages that act on this node's authority as a coordinator, the lease
// they were decided under (lease.go); and how long a request of a
// given size may take.

// Call sends one request to node under the current epoch. If the peer has a
// newer map, Call waits until this node has it too and retries, so a map
// change (a new scheme, say) never fails a write. Each retry goes out under
// a strictly newer epoch than the one refused, so the loop ends when this
// node catches up or the peer timeout runs out, however many map changes a
// failover commits in a row (a fixed count of retries once lost that race
// to four quick epochs). A peer with an older map
// waits on its side (peer.Router). A message that acts on this node's
// authority as a coordinator (carriesAuthority) is sent only under its
// lease and retried only while it still holds (stillHolds); otherwise it
// fails with errLeaseGone.
func (n *Coordinator) Call(ctx context.Context, node cluster.Node, typ uint8, payload []byte) ([]byte, error) {
	return n.CallUnder(ctx, PeerReq{Node: node, Typ: typ, Payload: payload}, nil)
}

// CallUnder is call for r, with the authority taken when the request was
// first stamped, or nil to take it at the first attempt.
//
// The request is given PeerTimeout plus the time its payload takes at
// bulkRate (peerDeadline; a forwarded command, its coordinator's work on
// it too), and a response still arriving is not cut off while its parts
// come (transport.Client.CallUntilIdle).
func (n *Coordinator) CallUnder(ctx context.Context, r PeerReq, auth *authority) ([]byte, error) {
	size := r.size()
	if r.Typ == peer.MsgForward || r.Typ == peer.MsgTx {
		size *= ForwardWork
	}
	ctx, cancel := context.WithTimeout(ctx, n.peerDeadline(size))
	defer cancel()
	node, typ := r.Node, r.Typ
	for {
		req := transport.Frame{Type: typ, Epoch: n.Ctl.Map().Epoch, Payload: r.Payload, Tail: r.Tail}
		if carriesAuthority(typ) {
			if auth == nil {
				a := n.TakeAuthority()
				auth = &a
			}
			if !n.stillHolds(*auth) {
				return nil, ErrLeaseGone
			}
		}
		resp, err := n.poolFor(typ).Get(node.PeerAddr).CallUntilIdle(ctx, req, n.Cfg.PeerTimeout)
		newer, stale := peer.StaleEpoch(err)
		if !stale {
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", node.PeerAddr, err)
			}
			return resp.Payload, nil
		}
		m, err := n.Ctl.WaitEpoch(ctx, newer)
		if err != nil {
			return nil, fmt.Errorf("node %s has epoch %d: %w", node.PeerAddr, newer, err)
		}
		if now, ok := m.Node(node.ID); ok && now.Gone() {
			// A node that left (or failed) may never see a newer map:
			// it would hold the request until the deadline. It refused
			// this one, so the caller may send it elsewhere.
			return nil, fmt.Errorf("node %s is %s at epoch %d (%w; %w)", node.PeerAddr, now.State, m.Epoch, kind.ErrNodeFailed, transport.ErrNotSent)
		}
	}
}

// bulkRate is the slowest rate, in bytes per second, at which a peer is
// expected to take a large payload: a request is given PeerTimeout plus
// the time its payload takes at this rate (peerDeadline), so a 512 MiB
// replica has 37 s in all. A fixed PeerTimeout failed such writes
// wherever 512 MiB took longer than 5 s to send: a 1 Gb/s link, or a
// loaded machine running race-built nodes (issue 23).
const bulkRate = 16 << 20

// peerDeadline is how long a request whose payloads come to size bytes
// is given.
func (n *Coordinator) peerDeadline(size int) time.Duration {
	return n.Cfg.PeerTimeout + TransferTime(size)
}

// TransferTime is how long size bytes take at bulkRate.
func TransferTime(size int) time.Duration {
	return time.Duration(size) * time.Second / bulkRate
}

// poolFor is the connections a message type travels on: heartbeats have
// their own, so that no data frame (a huge value's pieces, a batch the
// receiver stores on its connection's read loop) delays a lease renewal.
func (n *Coordinator) poolFor(typ uint8) *transport.Pool {
	if typ == peer.MsgHeartbeat {
		return n.Leases
	}
	return n.Peers
}

// carriesAuthority says whether a message type changes what its receiver
// holds for the sender's keys on the sender's word as their coordinator
// (DESIGN.md §1 fencing): pieces, releases and directory entries. Requests
// the receiver decides on itself (forwarded commands, reads, listings) do
// not.
func carriesAuthority(typ uint8) bool {
	return typ == peer.MsgPutPieces || typ == peer.MsgDelPiece || typ == peer.MsgDirectory || typ == peer.MsgStripe
}

// PeerReq is one request of a fan-out to several nodes: its payload is
// payload followed by tail, whose large segments are sent without a copy
// (spool).
type PeerReq struct {
	Node    cluster.Node
	Typ     uint8
	Payload []byte
	Tail    [][]byte
}

// size is the length of r's payload.
func (r PeerReq) size() int { return transport.Frame{Payload: r.Payload, Tail: r.Tail}.Size() }

// Whole is r's payload in one slice, for a request served locally: a copy
// when it has a tail.
func (r PeerReq) Whole() []byte {
	if len(r.Tail) == 0 {
		return r.Payload
	}
	return bigcopy.Join(append([][]byte{r.Payload}, r.Tail...)...)
}

// peerResult is one reply of a fan-out.
type peerResult struct {
	i       int
	payload []byte
	err     error
}

// CallEach sends every request at once and returns each reply or error,
// without a goroutine or timer per request. Requests to this node run
// locally; a request refused for a stale epoch is retried through call,
// which catches up first. Requests unanswered within the peer timeout fail.
// Requests that carry this node's authority fail with errLeaseGone, sent
// or retried, when it does not hold (see call).
func (n *Coordinator) CallEach(ctx context.Context, reqs []PeerReq) ([][]byte, []error) {
	return n.CallEachSince(ctx, reqs, n.Lease.Fences.Load())
}

// CallEachSince is callEach for requests decided when the node's fence
// count was fences: those that carry its authority fail with errLeaseGone
// if it was fenced since, even if it has been readmitted.
func (n *Coordinator) CallEachSince(ctx context.Context, reqs []PeerReq, fences uint64) ([][]byte, []error) {
	epoch := n.Ctl.Map().Epoch
	auth := n.TakeAuthority()
	auth.Ok = auth.Ok && auth.fences == fences
	replies := make([][]byte, len(reqs))
	errs := make([]error, len(reqs))
	answered := make([]bool, len(reqs))
	done := make(chan peerResult, len(reqs))
	waiting, bytes := 0, 0
	for i, r := range reqs {
		if carriesAuthority(r.Typ) && !auth.Ok {
			errs[i], answered[i] = ErrLeaseGone, true
			continue
		}
		if r.Node.ID == n.NodeID {
			replies[i], errs[i] = n.Router.Handler(r.Typ)(r.Whole())
			answered[i] = true
			continue
		}
		if r.Node.Gone() { // a node that left answers nothing either
			errs[i], answered[i] = kind.ErrNodeFailed, true
			continue
		}
		waiting++
		bytes += r.size()
		frame := transport.Frame{Type: r.Typ, Epoch: epoch, Payload: r.Payload, Tail: r.Tail}
		n.Peers.Get(r.Node.PeerAddr).Go(frame, func(resp transport.Frame, err error) {
			done <- peerResult{i: i, payload: resp.Payload, err: err}
		})
	}
	if waiting > 0 {
		n.collect(ctx, done, waiting, n.peerDeadline(bytes), answered, replies, errs)
	}
	for i, err := range errs {
		if _, stale := peer.StaleEpoch(err); stale {
			replies[i], errs[i] = n.CallUnder(ctx, reqs[i], &auth)
		} else if err != nil && reqs[i].Node.ID != n.NodeID {
			errs[i] = fmt.Errorf("node %s: %w", reqs[i].Node.PeerAddr, err)
		}
	}
	return replies, errs
}

// collect gathers want results from done into replies and errs, marking
// them answered; those still unanswered at the timeout (within, which
// peerDeadline sizes to the requests) or cancellation fail with that
// cause. Late results land in done's buffer and are dropped.
func (n *Coordinator) collect(ctx context.Context, done <-chan peerResult, want int, within time.Duration, answered []bool, replies [][]byte, errs []error) {
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	var cause error
	for got := 0; got < want && cause == nil; {
		select {
		case r := <-done:
			replies[r.i], errs[r.i], answered[r.i] = r.payload, r.err, true
			got++
		case <-timeout.C:
			cause = fmt.Errorf("no reply within %s", within.Round(time.Millisecond))
		case <-ctx.Done():
			cause = ctx.Err()
		}
	}
	if cause == nil {
		return
	}
	for i := range errs {
		if !answered[i] {
			errs[i] = cause
		}
	}
}
