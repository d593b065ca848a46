package commands

import (
	"context"
	"strings"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

// Pub/Sub as Redis Cluster 7 has it (docs/commands.md, decision 0014):
// classic channels and patterns, whose PUBLISH reaches the subscribers of
// every node over the bus (pubsub_bus.go), and shard channels, which hash
// to slots like keys: SPUBLISH runs at the slot's coordinator, and
// SSUBSCRIBE is accepted only there. Subscriptions live on connections
// (pubsub_conn.go); the node's index of them is the hub (pubsub_hub.go).
func init() {
	register("subscribe", &command{run: func(n *Server, _ context.Context, cs *connState, args [][]byte) resp.Reply {
		return n.subscribe(cs, kindChannel, args)
	}})
	register("psubscribe", &command{run: func(n *Server, _ context.Context, cs *connState, args [][]byte) resp.Reply {
		return n.subscribe(cs, kindPattern, args)
	}})
	register("ssubscribe", &command{run: cmdSsubscribe, session: true})
	register("unsubscribe", &command{run: func(n *Server, _ context.Context, cs *connState, args [][]byte) resp.Reply {
		return n.unsubscribe(cs, kindChannel, args)
	}})
	register("punsubscribe", &command{run: func(n *Server, _ context.Context, cs *connState, args [][]byte) resp.Reply {
		return n.unsubscribe(cs, kindPattern, args)
	}})
	register("sunsubscribe", &command{run: cmdSunsubscribe, session: true})
	register("publish", &command{run: cmdPublish})
	register("spublish", &command{run: cmdSpublish, channels: true})
	register("pubsub", &command{run: cmdPubsub})
	register("reset", &command{run: cmdReset, noAuth: true, tx: true})
}

// subscribe is SUBSCRIBE and PSUBSCRIBE: the confirmations go through
// the connection's outbox, so the command's own reply is the zero one.
func (n *Server) subscribe(cs *connState, k subKind, args [][]byte) resp.Reply {
	if cs.pubsub == nil {
		return errNoSubscriber(args[0])
	}
	n.pubsub.subscribe(cs.pubsub, k, names(args[1:]))
	return resp.Reply{}
}

// unsubscribe is UNSUBSCRIBE and PUNSUBSCRIBE: from the names given, or
// from every one of the kind.
func (n *Server) unsubscribe(cs *connState, k subKind, args [][]byte) resp.Reply {
	if cs.pubsub == nil {
		return errNoSubscriber(args[0])
	}
	n.pubsub.unsubscribe(cs.pubsub, k, names(args[1:]), true)
	return resp.Reply{}
}

// errNoSubscriber answers a subscription command run without a client
// connection of its own (Server.Do), which has nowhere to send messages;
// Redis words it so for its clients that expect one reply per command.
func errNoSubscriber(name []byte) resp.Reply {
	return resp.Errorf("ERR %s isn't allowed for a DENY BLOCKING client", strings.ToUpper(string(name)))
}

// names are the channel or pattern arguments as strings, nil for none.
func names(args [][]byte) []string {
	if len(args) == 0 {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// cmdSsubscribe subscribes to shard channels of one slot that this node
// coordinates; under shardMu, so that dropMoved sees the subscription if
// the slot moves after the check.
func cmdSsubscribe(n *Server, _ context.Context, cs *connState, args [][]byte) resp.Reply {
	if cs.pubsub == nil {
		return errNoSubscriber(args[0])
	}
	n.pubsub.shardMu.Lock()
	defer n.pubsub.shardMu.Unlock()
	if r, refused := n.routeShard(args[1:], true); refused {
		return r
	}
	n.pubsub.subscribe(cs.pubsub, kindShard, names(args[1:]))
	return resp.Reply{}
}

// cmdSunsubscribe leaves shard channels, which Redis Cluster also routes:
// channels of several slots are CROSSSLOT, of another node's slot MOVED.
func cmdSunsubscribe(n *Server, _ context.Context, cs *connState, args [][]byte) resp.Reply {
	if cs.pubsub == nil {
		return errNoSubscriber(args[0])
	}
	if len(args) > 1 {
		if r, refused := n.routeShard(args[1:], false); refused {
			return r
		}
	}
	n.pubsub.unsubscribe(cs.pubsub, kindShard, names(args[1:]), true)
	return resp.Reply{}
}

// routeShard checks that shard channels hash to one slot this node
// coordinates, with Redis Cluster's errors: a subscription lives on the
// connection, so it is redirected (-MOVED), never forwarded. A subscribe
// also needs the cluster formed and this node's lease (not a recovered
// slot's records, which channels do not use).
func (n *Server) routeShard(channels [][]byte, subscribing bool) (resp.Reply, bool) {
	if r, down := n.clusterDown(); down && subscribing {
		return r, true
	}
	m := n.Ctl.Map()
	slot := keyslot.Of(channels[0])
	for _, ch := range channels[1:] {
		if keyslot.Of(ch) != slot {
			return resp.Err("CROSSSLOT Keys in request don't hash to the same slot"), true
		}
	}
	owner, ok := m.Coordinator(slot)
	switch {
	case !ok && subscribing:
		return resp.Err("CLUSTERDOWN Hash slot not served"), true
	case ok && owner.ID != n.NodeID:
		return resp.Errorf("MOVED %d %s", slot, owner.ClientAddr), true
	}
	if subscribing && m.State == cluster.OK && !n.Serving() {
		return errFenced, true
	}
	return resp.Reply{}, false
}

// cmdPublish delivers to this node's subscribers and sends the message to
// every other node. Its reply is Redis Cluster's: the receivers on this
// node (decision 0014).
func cmdPublish(n *Server, _ context.Context, _ *connState, args [][]byte) resp.Reply {
	received := n.pubsub.publish(false, args[1], args[2])
	n.broadcast(args[1], args[2])
	return resp.Int(int64(received))
}

// cmdSpublish runs at the channel's coordinator (dispatch routes it as a
// key command), where every subscriber of the channel is.
func cmdSpublish(n *Server, _ context.Context, _ *connState, args [][]byte) resp.Reply {
	return resp.Int(int64(n.pubsub.publish(true, args[1], args[2])))
}

// cmdPubsub is PUBSUB's introspection of this node's subscriptions, as a
// Redis Cluster node answers for its own.
func cmdPubsub(n *Server, _ context.Context, _ *connState, args [][]byte) resp.Reply {
	h := &n.pubsub
	sub := strings.ToLower(string(args[1]))
	k := kindChannel
	if strings.HasPrefix(sub, "shard") {
		k, sub = kindShard, strings.TrimPrefix(sub, "shard")
	}
	switch {
	case sub == "help" && k == kindChannel:
		return resp.Help("pubsub", pubsubHelp...)
	case sub == "channels" && len(args) <= 3:
		var pattern []byte
		if len(args) == 3 {
			pattern = args[2]
		}
		return resp.BulkStrings(h.channels(k, pattern)...)
	case sub == "numsub":
		items := make([]resp.Reply, 0, 2*(len(args)-2))
		for _, ch := range args[2:] {
			items = append(items, resp.Bulk(ch), resp.Int(int64(h.numsub(k, ch))))
		}
		return resp.Array(items...)
	case sub == "numpat" && k == kindChannel:
		return resp.Int(int64(h.count(kindPattern)))
	}
	return resp.Errorf("ERR unknown subcommand or wrong number of arguments for '%s'. Try PUBSUB HELP.", args[1])
}

var pubsubHelp = []string{
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
}

// cmdReset returns the connection to its state when it connected, as
// Redis's RESET does: no subscriptions (none confirmed), RESP2, no name,
// and authenticated only if no password is required.
func cmdReset(n *Server, _ context.Context, cs *connState, _ [][]byte) resp.Reply {
	if cs.pubsub != nil {
		n.pubsub.dropAll(cs.pubsub)
	}
	cs.tx = nil // discards a transaction being queued and unwatches, as Redis's RESET
	cs.mu.Lock()
	cs.proto, cs.name = 2, ""
	cs.mu.Unlock()
	cs.authed = !n.authRequired()
	return resp.Simple("RESET")
}

// PubSubLoop drops the shard subscribers of each slot this node stops
// coordinating, at every new map (a failover, a move), and the bus
// links to nodes gone from it.
func (n *Server) PubSubLoop(ctx context.Context) { n.OnMaps(ctx, 0, n.onMap) }

func (n *Server) onMap(m *cluster.Map) {
	if dropped := n.pubsub.dropMoved(m, n.NodeID); dropped > 0 {
		n.Log.Info("pub/sub: shard channels left with their slots", "channels", dropped, "epoch", m.Epoch)
	}
	n.pubsub.bus.forget(m)
}

// PubSubStats are a node's pub/sub counts for INFO.
type PubSubStats struct {
	Channels, Patterns, ShardChannels int
	// Overflowed is the connections closed at the pubsub output limit,
	// BusDropped the messages for other nodes lost (link full, or the
	// node did not answer).
	Overflowed, BusDropped int64
}

// PubSub reports the node's pub/sub counts.
func (n *Server) PubSub() PubSubStats {
	h := &n.pubsub
	return PubSubStats{
		Channels: h.count(kindChannel), Patterns: h.count(kindPattern), ShardChannels: h.count(kindShard),
		Overflowed: h.overflowed.Load(), BusDropped: h.bus.dropped.Load(),
	}
}
