package commands

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/server/core"
	"github.com/memgest/memgest/server/peer"
	"github.com/memgest/memgest/wire"
)

// The bus of classic pub/sub: a PUBLISH reaches the subscribers of every
// node, as Redis Cluster's cluster bus carries it. The node that runs it
// delivers to its own subscribers and queues the message on a link to
// each other live node; a link sends what is queued in frames
// (peer.MsgPublish) one at a time, each after the last was answered, so
// a node's messages reach every other in the order it published them.
// Delivery is at most once, as Redis's is: a node that does not answer
// loses the frame, and a link whose queue passes busLinkLimit drops new
// messages until it has room (INFO's memgest_pubsub_bus_dropped counts
// both). Shard channels do not use the bus: SPUBLISH runs at the slot's
// coordinator, which holds every subscriber of its channels.

// Bounds of a link: the bytes it may have queued, and what one frame
// carries (one message at least, however large).
const (
	busLinkLimit  = 32 << 20
	busFrameBytes = 1 << 20
)

// bus is the node's links to the other nodes.
type bus struct {
	mu      sync.Mutex
	links   map[cluster.NodeID]*busLink
	dropped atomic.Int64
}

// busLink queues the messages for one node and sends them in order.
type busLink struct {
	node    cluster.Node
	mu      sync.Mutex
	queue   []busMsg
	bytes   int
	running bool // a goroutine is sending the queue
}

// busMsg is one published message, copied out of the request.
type busMsg struct{ channel, message []byte }

func (m busMsg) size() int { return len(m.channel) + len(m.message) }

// broadcast queues a published message for every other live node.
func (n *Server) broadcast(channel, message []byte) {
	m := n.Ctl.Map()
	var msg busMsg
	for _, node := range m.Nodes {
		if node.ID == n.NodeID || node.Gone() {
			continue
		}
		if msg.channel == nil {
			both := append(append(make([]byte, 0, len(channel)+len(message)), channel...), message...)
			msg = busMsg{channel: both[:len(channel):len(channel)], message: both[len(channel):]}
		}
		n.pubsub.bus.link(node).send(n, msg)
	}
}

// link is the link to node, made on first use.
func (b *bus) link(node cluster.Node) *busLink {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.links == nil {
		b.links = map[cluster.NodeID]*busLink{}
	}
	l := b.links[node.ID]
	if l == nil {
		l = &busLink{}
		b.links[node.ID] = l
	}
	l.mu.Lock()
	l.node = node // its addresses as the map has them now
	l.mu.Unlock()
	return l
}

// forget drops the links to nodes that left m or failed in it (their
// senders finish what they hold and stop).
func (b *bus) forget(m *cluster.Map) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.links {
		if nd, ok := m.Node(id); !ok || nd.Gone() {
			delete(b.links, id)
		}
	}
}

// send queues msg, starting the link's sender if it is idle; a message
// the queue has no room for is dropped.
func (l *busLink) send(n *Server, msg busMsg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bytes+msg.size() > busLinkLimit && l.bytes > 0 {
		n.pubsub.bus.dropped.Add(1)
		n.Log.Warn("pub/sub: a node's link is full; messages for it are dropped", "node", l.node.PeerAddr)
		return
	}
	l.queue = append(l.queue, msg)
	l.bytes += msg.size()
	if !l.running {
		l.running = true
		go l.run(n)
	}
}

// run sends the queue a frame at a time until it is empty.
func (l *busLink) run(n *Server) {
	for {
		node, batch := l.next()
		if batch == nil {
			return
		}
		payload, tail := encodePublish(batch)
		_, err := n.CallUnder(context.Background(), core.PeerReq{Node: node, Typ: peer.MsgPublish, Payload: payload, Tail: tail}, nil)
		if err != nil {
			n.pubsub.bus.dropped.Add(int64(len(batch)))
			n.Log.Warn("pub/sub: messages for a node lost", "node", node.PeerAddr, "messages", len(batch), "err", err)
		}
	}
}

// next takes the messages of the next frame off the queue, or stops the
// sender when there are none.
func (l *busLink) next() (cluster.Node, []busMsg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		l.running = false
		l.queue = nil
		return l.node, nil
	}
	size, i := 0, 0
	for i < len(l.queue) && (i == 0 || size+l.queue[i].size() <= busFrameBytes) {
		size += l.queue[i].size()
		i++
	}
	batch := l.queue[:i:i]
	l.queue = l.queue[i:]
	l.bytes -= size
	return l.node, batch
}

// encodePublish is a Publish payload: count u32, count × (channel,
// message); a large message goes out from its buffer (wire.Spool).
func encodePublish(msgs []busMsg) (payload []byte, tail [][]byte) {
	s := wire.Spool{Cur: wire.Enc(nil).U32(uint32(len(msgs)))}
	for _, m := range msgs {
		s.Bytes(m.channel)
		s.Bytes(m.message)
	}
	return s.Frame()
}

// decodePublish reads a Publish payload strictly: a count the payload
// cannot hold (each message takes two bytes or more), a short field or
// trailing bytes are malformed.
func decodePublish(b []byte) ([]busMsg, error) {
	return wire.DecodeList(b, func(d *wire.Dec) busMsg { return busMsg{channel: d.Bytes(), message: d.Bytes()} })
}

// OnPublish delivers another node's PUBLISH messages to this node's
// subscribers, in order. Only a cluster member reaches it: the peer port
// admits no connection that has not proved the cluster secret
// (server/trust.go).
func (n *Server) OnPublish(b []byte) ([]byte, error) {
	msgs, err := decodePublish(b)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		n.pubsub.publish(false, m.channel, m.message)
	}
	return nil, nil
}
