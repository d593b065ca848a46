package commands

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgest/memgest/server/config"
	"github.com/memgest/memgest/server/resp"
)

// A connection's pub/sub side. Once a connection sends a command of the
// subscription family, everything it is sent (replies, subscription
// confirmations, messages) goes through one ordered queue, its outbox,
// which a writer goroutine of its own empties: a publisher only appends
// to the outbox, so a subscriber that does not read never holds it up,
// and the outbox is bounded by the pubsub output limit (Redis's
// client-output-buffer-limit pubsub), past which the connection is
// closed. Its commands then run one at a time, each reply queued when it
// is made, so that a confirmation precedes every message of what it
// confirms and follows every reply before it, as in Redis's single
// output buffer.

// subscriber is one connection's subscriptions and outbox. mu guards the
// subscription sets and the queue; a confirmation is queued under the
// same hold of mu as the change it confirms, and a message only if its
// subscriber still has the subscription when it is queued, so a message
// never precedes its SUBSCRIBE's confirmation nor follows its
// UNSUBSCRIBE's. Lock order: the hub's shardMu, then mu, then the hub's
// mu (pubsubHub); a publisher holds none of the hub's locks while it
// takes mu.
type subscriber struct {
	cs    *connState
	conn  net.Conn
	limit config.OutputLimit
	now   func() time.Duration // the node's monotonic clock (Coordinator.MonoNow)
	// overflowed counts connections closed at the limit (INFO's
	// client_output_buffer_limit_disconnections).
	overflowed *atomic.Int64
	// netOut counts the bytes written (INFO's total_net_output_bytes);
	// nil counts nothing.
	netOut *atomic.Int64

	mu   sync.Mutex
	cond sync.Cond // outbox, pending or closed changed
	sets [kinds]map[string]struct{}
	// counts mirror len(sets[k]) for readers without mu: the subscribed
	// state's command check and CLIENT LIST.
	counts [kinds]atomic.Int32
	outbox [][]byte
	// pending is the bytes queued or being written; overSoft when it
	// went past the soft limit (zero: it is not past it).
	pending  int64
	overSoft time.Duration
	closed   bool
}

// subKind is a kind of subscription.
type subKind int

const (
	kindChannel subKind = iota // SUBSCRIBE
	kindPattern                // PSUBSCRIBE
	kindShard                  // SSUBSCRIBE
	kinds
)

// Each kind's words: its confirmations' and its messages' first element.
var (
	subscribeWord   = [kinds]string{"subscribe", "psubscribe", "ssubscribe"}
	unsubscribeWord = [kinds]string{"unsubscribe", "punsubscribe", "sunsubscribe"}
)

// newSubscriber starts the pub/sub side of cs, served on c.
func (n *Server) newSubscriber(cs *connState, c net.Conn) *subscriber {
	s := &subscriber{cs: cs, conn: c, limit: n.Cfg.PubSubLimit, now: func() time.Duration { return time.Duration(n.MonoNow()) }, overflowed: &n.pubsub.overflowed, netOut: &n.info.meters.netOut}
	s.cond.L = &s.mu
	for k := range s.sets {
		s.sets[k] = map[string]struct{}{}
	}
	go s.writeLoop()
	return s
}

// subscriptions is the count a confirmation of kind k reports: channels
// and patterns together, or shard channels (Redis's
// clientSubscriptionsCount and clientShardSubscriptionsCount).
func (s *subscriber) subscriptions(k subKind) int64 {
	if k == kindShard {
		return int64(s.counts[kindShard].Load())
	}
	return int64(s.counts[kindChannel].Load() + s.counts[kindPattern].Load())
}

// total is every subscription of the connection: while it is not zero, a
// RESP2 connection is in the subscribed state.
func (s *subscriber) total() int32 {
	return s.counts[kindChannel].Load() + s.counts[kindPattern].Load() + s.counts[kindShard].Load()
}

// proto is the connection's protocol now, for a message made on another
// goroutine.
func (s *subscriber) proto() int {
	s.cs.mu.Lock()
	defer s.cs.mu.Unlock()
	return s.cs.proto
}

// confirmLocked queues a confirmation: [word, name, count], a push in
// RESP3; a nil name (an UNSUBSCRIBE of nothing) is null.
func (s *subscriber) confirmLocked(word string, name *string, count int64) {
	subject := resp.Nil()
	if name != nil {
		subject = resp.BulkString(*name)
	}
	p := s.proto()
	s.queueLocked(resp.Push(resp.BulkString(word), subject, resp.Int(count)).AppendTo(nil, p))
}

// add subscribes to name; it reports false if it was already subscribed.
func (s *subscriber) addLocked(k subKind, name string) bool {
	if _, ok := s.sets[k][name]; ok {
		return false
	}
	s.sets[k][name] = struct{}{}
	s.counts[k].Add(1)
	return true
}

// removeLocked unsubscribes from name; it reports false if it was not
// subscribed.
func (s *subscriber) removeLocked(k subKind, name string) bool {
	if _, ok := s.sets[k][name]; !ok {
		return false
	}
	delete(s.sets[k], name)
	s.counts[k].Add(-1)
	return true
}

// deliver queues a message made for the connection's protocol by frame,
// if it still subscribes to name (a channel or pattern of kind k); it
// reports whether it did.
func (s *subscriber) deliver(k subKind, name string, frame func(proto int) []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sets[k][name]; !ok || s.closed {
		return false
	}
	return s.queueLocked(frame(s.proto()))
}

// queue appends frame to the outbox; false means the connection is
// closed, or closed now for passing its output limit.
func (s *subscriber) queue(frame []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queueLocked(frame)
}

func (s *subscriber) queueLocked(frame []byte) bool {
	if s.closed {
		return false
	}
	s.pending += int64(len(frame))
	if s.overLimitLocked() {
		s.overflowed.Add(1)
		s.closeLocked()
		return false
	}
	s.outbox = append(s.outbox, frame)
	s.cond.Broadcast()
	return true
}

// overLimitLocked applies the output limit as Redis's
// checkClientOutputBufferLimits does: past the hard limit at once, past
// the soft one when it has been past it for longer than SoftFor.
func (s *subscriber) overLimitLocked() bool {
	l := s.limit
	if l.Hard > 0 && s.pending > l.Hard {
		return true
	}
	if l.Soft == 0 || s.pending <= l.Soft {
		s.overSoft = 0
		return false
	}
	now := s.now() + 1 // never zero: zero means "not past the soft limit"
	if s.overSoft == 0 {
		s.overSoft = now
		return false
	}
	return now-s.overSoft > l.SoftFor
}

// closeLocked closes the outbox and the connection; the connection's
// reader then ends and removes its subscriptions (end).
func (s *subscriber) closeLocked() {
	if s.closed {
		return
	}
	s.closed = true
	s.outbox = nil
	s.cond.Broadcast()
	// Not under mu: closing a TLS connection nobody writes to sends an
	// alert, which may wait seconds for a client that does not read.
	go func() { _ = s.conn.Close() }()
}

func (s *subscriber) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// writeLoop writes the outbox until it is closed, everything queued at
// once (writev).
func (s *subscriber) writeLoop() {
	for {
		s.mu.Lock()
		for len(s.outbox) == 0 && !s.closed {
			s.cond.Wait()
		}
		if s.closed {
			s.mu.Unlock()
			return
		}
		batch, size := coalesce(s.outbox)
		s.outbox = nil
		s.mu.Unlock()
		wrote, err := batch.WriteTo(s.conn)
		if s.netOut != nil {
			s.netOut.Add(wrote)
		}
		s.mu.Lock()
		s.pending -= size
		if err != nil {
			s.closeLocked()
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// coalesceMax is the most bytes of frames copied into one write; more
// go out as they are (writev on TCP).
const coalesceMax = 256 << 10

// coalesce is the frames to write at once and their size: copied into
// one buffer when they are several and small, so that a connection over
// TLS, which writes each buffer apart, sends one record rather than one
// per message.
func coalesce(frames [][]byte) (net.Buffers, int64) {
	size := 0
	for _, f := range frames {
		size += len(f)
	}
	if len(frames) == 1 || size > coalesceMax {
		return frames, int64(size)
	}
	joined := make([]byte, 0, size)
	for _, f := range frames {
		joined = append(joined, f...)
	}
	return net.Buffers{joined}, int64(size)
}

// drainTimeout bounds how long a connection leaving (QUIT, CLIENT KILL
// of itself) waits for its outbox to be written.
const drainTimeout = time.Second

// drain waits until everything queued is written, or the connection is
// closed, or drainTimeout passes (the write then fails).
func (s *subscriber) drain() {
	_ = s.conn.SetWriteDeadline(time.Now().Add(drainTimeout))
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.pending > 0 && !s.closed {
		s.cond.Wait()
	}
}

// serveSubscribed is servePipeline for a connection with a pub/sub side
// (or getting one in this pipeline): commands run one at a time and
// every reply goes through the outbox as it is made. The subscription
// commands queue their own confirmations and return the zero reply.
func (n *Server) serveSubscribed(c net.Conn, cs *connState, cmds [][][]byte) bool {
	defer cs.pipe.reset(cmds)
	if cs.pubsub == nil {
		s := n.newSubscriber(cs, c)
		cs.mu.Lock() // CLIENT LIST of other connections reads it
		cs.pubsub = s
		cs.mu.Unlock()
	}
	s := cs.pubsub
	for _, args := range cmds {
		r := n.execute(context.Background(), cs, args)
		if !r.IsZero() && !s.queue(r.AppendTo(nil, cs.proto)) {
			return false // closed: past its limit, or a write failed
		}
		if isQuit(args) || cs.killed.Load() {
			s.drain()
			return false
		}
	}
	return !s.isClosed()
}

// subscribes says whether a command of cmds is of the subscription family:
// the connection's output then goes through an outbox.
func subscribes(cmds [][][]byte) bool {
	for _, args := range cmds {
		if len(args) > 0 && isSubscription(args[0]) {
			return true
		}
	}
	return false
}

// isSubscription matches (P|S)SUBSCRIBE and (P|S)UNSUBSCRIBE, in any
// case, cheaply enough to run on every pipelined command.
func isSubscription(name []byte) bool {
	if len(name) < len("subscribe") || len(name) > len("punsubscribe") {
		return false
	}
	spec, ok := resp.Lookup(name)
	return ok && subscriptionCommands[spec.Name]
}

// subscriptionCommands are the subscription family.
var subscriptionCommands = map[string]bool{
	"subscribe": true, "ssubscribe": true, "psubscribe": true,
	"unsubscribe": true, "sunsubscribe": true, "punsubscribe": true,
}

// endSubscriber removes a leaving connection's subscriptions and stops
// its writer.
func (n *Server) endSubscriber(cs *connState) {
	s := cs.pubsub
	if s == nil {
		return
	}
	n.pubsub.dropAll(s)
	s.mu.Lock()
	s.closeLocked()
	s.mu.Unlock()
}

// subscribedRESP2 says whether cs is in RESP2's subscribed state, where
// only the subscription commands, PING, QUIT and RESET run.
func (cs *connState) subscribedRESP2() bool {
	return cs.pubsub != nil && cs.proto == 2 && cs.pubsub.total() > 0
}

// allowedSubscribed are the commands a RESP2 connection in the
// subscribed state may run.
var allowedSubscribed = map[string]bool{"ping": true, "quit": true, "reset": true}

// refuseSubscribed answers Redis's error for any other command of a
// RESP2 connection in the subscribed state (RESP3 connections may run
// anything).
func refuseSubscribed(cs *connState, spec *resp.CommandSpec) (resp.Reply, bool) {
	if !cs.subscribedRESP2() || allowedSubscribed[spec.Name] || subscriptionCommands[spec.Name] {
		return resp.Reply{}, false
	}
	return resp.Errorf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", spec.Name), true
}
