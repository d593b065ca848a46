package simcluster_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/resp"
)

// expectFrames reads the next frames of x and checks each against want, as
// simcluster.Render shows them.
func expectFrames(t *testing.T, x *simcluster.Conn, want ...string) {
	t.Helper()
	for _, w := range want {
		if got := simcluster.Render(x.Receive()); got != w {
			t.Fatalf("got %s, want %s", got, w)
		}
	}
}

// nothing checks that x receives nothing for a moment.
func nothing(t *testing.T, x *simcluster.Conn) {
	t.Helper()
	if r, err := x.ReceiveWithin(50 * time.Millisecond); err == nil {
		t.Fatalf("received %s, want nothing", simcluster.Render(r))
	}
}

// Classic pub/sub across nodes (Redis Cluster: a PUBLISH on any node
// reaches every node's subscribers), with Redis's exact frames for
// subscribing and unsubscribing, PUBSUB's per-node answers, and the
// commands a RESP2 connection may run while subscribed.
func TestPubSubAcrossNodes(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 3})
	do := func(i int, args ...string) string { return simcluster.Render(c.Do(i, args...)) }
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s = %s, want %s", what, got, want)
		}
	}

	sub := c.Connect(0)
	sub.Send("SUBSCRIBE", "news", "sport", "news")
	expectFrames(t, sub, `["subscribe" "news" :1]`, `["subscribe" "sport" :2]`, `["subscribe" "news" :2]`)
	psub := c.Connect(1)
	psub.Send("PSUBSCRIBE", "n[ae]*", "*")
	expectFrames(t, psub, `["psubscribe" "n[ae]*" :1]`, `["psubscribe" "*" :2]`)

	// Published on the node without subscribers: its reply counts its own
	// receivers (none), and every node's subscribers get it.
	check("PUBLISH on n2", do(2, "PUBLISH", "news", "hello"), ":0")
	expectFrames(t, sub, `["message" "news" "hello"]`)
	got := []string{simcluster.Render(psub.Receive()), simcluster.Render(psub.Receive())}
	if !(strings.Contains(strings.Join(got, " "), `["pmessage" "n[ae]*" "news" "hello"]`) &&
		strings.Contains(strings.Join(got, " "), `["pmessage" "*" "news" "hello"]`)) {
		t.Fatalf("pattern subscriber got %v", got)
	}
	check("PUBLISH on n0", do(0, "PUBLISH", "sport", "goal"), ":1")
	check("PUBLISH on n1", do(1, "PUBLISH", "sport", "goal"), ":1") // the * subscriber
	expectFrames(t, sub, `["message" "sport" "goal"]`, `["message" "sport" "goal"]`)
	expectFrames(t, psub, `["pmessage" "*" "sport" "goal"]`, `["pmessage" "*" "sport" "goal"]`)

	// One node's messages arrive in the order it published them.
	for i := range 40 {
		c.DoQuiet(2, "PUBLISH", "news", fmt.Sprint(i))
	}
	for i := range 40 {
		expectFrames(t, sub, fmt.Sprintf(`["message" "news" "%d"]`, i))
	}
	for range 80 {
		psub.Receive()
	}

	// PUBSUB answers for the node it is sent to, as in Redis Cluster.
	check("NUMSUB n0", do(0, "PUBSUB", "NUMSUB", "news", "sport", "none"), `["news" :1 "sport" :1 "none" :0]`)
	check("NUMSUB n1", do(1, "PUBSUB", "NUMSUB", "news"), `["news" :0]`)
	check("NUMSUB none", do(1, "PUBSUB", "NUMSUB"), `[]`)
	check("CHANNELS n0", do(0, "PUBSUB", "CHANNELS"), `["news" "sport"]`)
	check("CHANNELS n0 s*", do(0, "PUBSUB", "CHANNELS", "s*"), `["sport"]`)
	check("CHANNELS n2", do(2, "PUBSUB", "CHANNELS"), `[]`)
	check("NUMPAT n1", do(1, "PUBSUB", "NUMPAT"), ":2")
	check("NUMPAT n0", do(0, "PUBSUB", "NUMPAT"), ":0")
	check("CHANNELS a b", do(0, "PUBSUB", "CHANNELS", "a", "b"), "-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.")
	check("NUMPAT x", do(0, "PUBSUB", "NUMPAT", "x"), "-ERR wrong number of arguments for 'pubsub|numpat' command")
	check("PUBLISH arity", do(0, "PUBLISH", "news"), "-ERR wrong number of arguments for 'publish' command")
	check("SUBSCRIBE without a connection", do(0, "SUBSCRIBE", "x"), "-ERR SUBSCRIBE isn't allowed for a DENY BLOCKING client")

	// The subscribed state of RESP2: only the subscription commands,
	// PING, QUIT and RESET run, and PING answers as an array.
	refused := func(name string) string {
		return "-ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
	}
	check("GET subscribed", simcluster.Render(sub.Do("GET", "k")), refused("get"))
	check("CLIENT ID subscribed", simcluster.Render(sub.Do("CLIENT", "ID")), refused("client|id"))
	check("PING subscribed", simcluster.Render(sub.Do("PING")), `["pong" ""]`)
	check("PING x subscribed", simcluster.Render(sub.Do("PING", "x")), `["pong" "x"]`)
	check("unknown subscribed", simcluster.Render(sub.Do("NOSUCH")), "-ERR unknown command 'NOSUCH', with args beginning with: ")

	// Unsubscribing: each channel with the count left, then a null
	// channel when there is nothing left; patterns count with channels.
	sub.Send("UNSUBSCRIBE", "sport", "never")
	expectFrames(t, sub, `["unsubscribe" "sport" :1]`, `["unsubscribe" "never" :1]`)
	sub.Send("PSUBSCRIBE", "s*")
	expectFrames(t, sub, `["psubscribe" "s*" :2]`)
	sub.Send("UNSUBSCRIBE")
	expectFrames(t, sub, `["unsubscribe" "news" :1]`)
	sub.Send("PUNSUBSCRIBE")
	expectFrames(t, sub, `["punsubscribe" "s*" :0]`)
	sub.Send("UNSUBSCRIBE")
	expectFrames(t, sub, `["unsubscribe" nil :0]`)
	check("GET after unsubscribing", simcluster.Render(sub.Do("GET", "k")), "nil")
	check("PING after unsubscribing", simcluster.Render(sub.Do("PING")), "+PONG")
	check("PUBLISH after unsubscribing", do(0, "PUBLISH", "news", "x"), ":0")
	nothing(t, sub)

	// RESET leaves the subscribed state without confirmations.
	sub.Send("SUBSCRIBE", "news")
	expectFrames(t, sub, `["subscribe" "news" :1]`)
	check("RESET", simcluster.Render(sub.Do("RESET")), "+RESET")
	check("GET after RESET", simcluster.Render(sub.Do("GET", "k")), "nil")
	check("NUMSUB after RESET", do(0, "PUBSUB", "NUMSUB", "news"), `["news" :0]`)

	// A connection that leaves takes its subscriptions with it.
	psub.Close()
	c.Until("the pattern subscriber's subscriptions are gone", func() (bool, string) {
		got := simcluster.Render(c.DoQuiet(1, "PUBSUB", "NUMPAT"))
		return got == ":0", got
	})
}

// RESP3 clients get confirmations and messages as push frames, and may
// run any command while subscribed; a message published before a reply
// comes before it.
func TestPubSubRESP3Pushes(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 3})
	x := c.Connect(1)
	if r := x.Do("HELLO", "3"); r.Kind() != resp.KindMap {
		t.Fatalf("HELLO 3: %s", simcluster.Render(r))
	}
	x.Send("SUBSCRIBE", "ch")
	if r := x.Receive(); r.Kind() != resp.KindPush || simcluster.Render(r) != `["subscribe" "ch" :1]` {
		t.Fatalf("subscribe confirmation: %s %s", r.Kind(), simcluster.Render(r))
	}
	if got := simcluster.Render(x.Do("SET", "k", "v")); got != "+OK" {
		t.Fatalf("SET while subscribed in RESP3: %s", got)
	}
	if got := simcluster.Render(c.Do(1, "PUBLISH", "ch", "m1")); got != ":1" {
		t.Fatalf("PUBLISH: %s", got)
	}
	x.Send("GET", "k")
	if r := x.Receive(); r.Kind() != resp.KindPush || simcluster.Render(r) != `["message" "ch" "m1"]` {
		t.Fatalf("message: %s %s", r.Kind(), simcluster.Render(r))
	}
	if got := simcluster.Render(x.Receive()); got != `"v"` {
		t.Fatalf("GET after the message: %s", got)
	}
	if got := simcluster.Render(x.Do("PING")); got != "+PONG" {
		t.Fatalf("PING in RESP3: %s", got)
	}
	x.Send("UNSUBSCRIBE")
	if r := x.Receive(); r.Kind() != resp.KindPush || simcluster.Render(r) != `["unsubscribe" "ch" :0]` {
		t.Fatalf("unsubscribe confirmation: %s %s", r.Kind(), simcluster.Render(r))
	}
}

// Sharded pub/sub: a shard channel's slot decides where it lives.
// SSUBSCRIBE is accepted only at the slot's coordinator (-MOVED
// elsewhere, CROSSSLOT across slots), SPUBLISH is routed there from any
// node, and when the node stops coordinating the slot its subscribers
// get an sunsubscribe for each channel, so that they subscribe again
// where the slot went.
func TestShardPubSubFollowsTheSlot(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 3})
	base := c.KeyOn(1, "orders")
	a, b := "{"+base+"}:a", "{"+base+"}:b"
	slot := keyslot.Of([]byte(a))

	elsewhere := c.Connect(0)
	if got, want := simcluster.Render(elsewhere.Do("SSUBSCRIBE", a)), fmt.Sprintf("-MOVED %d %s", slot, c.MapNode(1).ClientAddr); got != want {
		t.Fatalf("SSUBSCRIBE off the coordinator: %s, want %s", got, want)
	}
	other := c.KeyOn(2, "other")
	if got := simcluster.Render(elsewhere.Do("SSUBSCRIBE", a, other)); got != "-CROSSSLOT Keys in request don't hash to the same slot" {
		t.Fatalf("SSUBSCRIBE across slots: %s", got)
	}

	sub := c.Connect(1)
	sub.Send("SSUBSCRIBE", a, b)
	expectFrames(t, sub, fmt.Sprintf(`["ssubscribe" %q :1]`, a), fmt.Sprintf(`["ssubscribe" %q :2]`, b))
	sub.Send("SUBSCRIBE", "plain")
	expectFrames(t, sub, `["subscribe" "plain" :1]`) // shard channels count apart
	if got := simcluster.Render(c.Do(2, "SPUBLISH", a, "hi")); got != ":1" {
		t.Fatalf("SPUBLISH forwarded to the coordinator: %s", got)
	}
	expectFrames(t, sub, fmt.Sprintf(`["smessage" %q "hi"]`, a))
	if got := simcluster.Render(c.Do(1, "PUBLISH", a, "classic")); got != ":0" {
		t.Fatalf("PUBLISH to a shard channel's name: %s", got)
	}
	if got := simcluster.Render(c.Do(1, "PUBSUB", "SHARDCHANNELS")); got != fmt.Sprintf(`[%q %q]`, a, b) {
		t.Fatalf("SHARDCHANNELS: %s", got)
	}
	if got := simcluster.Render(c.Do(1, "PUBSUB", "SHARDNUMSUB", a, "x")); got != fmt.Sprintf(`[%q :1 "x" :0]`, a) {
		t.Fatalf("SHARDNUMSUB: %s", got)
	}
	if got := simcluster.Render(sub.Do("SUNSUBSCRIBE", a, other)); got != "-CROSSSLOT Keys in request don't hash to the same slot" {
		t.Fatalf("SUNSUBSCRIBE across slots: %s", got)
	}
	nothing(t, sub)

	// Node 1 is cut off and marked failed; once it hears of it, its shard
	// subscribers are told to go.
	c.Partition(1)
	c.FailOver(1)
	c.Heal()
	expectFrames(t, sub, fmt.Sprintf(`["sunsubscribe" %q :1]`, a), fmt.Sprintf(`["sunsubscribe" %q :0]`, b))
	owner := c.Coordinator(a)
	if owner == 1 || owner < 0 {
		t.Fatalf("slot %d still at node %d", slot, owner)
	}
	moved := c.Connect(owner)
	moved.Send("SSUBSCRIBE", a)
	expectFrames(t, moved, fmt.Sprintf(`["ssubscribe" %q :1]`, a))
	c.Until("the message reaches the slot's new node", func() (bool, string) {
		got := simcluster.Render(c.DoQuiet(owner, "SPUBLISH", a, "again"))
		return got == ":1", got
	})
	expectFrames(t, moved, fmt.Sprintf(`["smessage" %q "again"]`, a))
}

// A subscriber that does not read is disconnected once what waits for it
// passes the pubsub output limit's hard bound, or stays past its soft
// bound for longer than the soft seconds (on the injected clock), without
// holding up the publisher.
func TestSlowSubscriberIsDisconnected(t *testing.T) {
	const hard, soft = 64 << 10, 16 << 10
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 1, Configure: func(_ int, cfg *server.Config) {
		cfg.PubSubLimit = server.OutputLimit{Hard: hard, Soft: soft, SoftFor: 2 * time.Second}
	}})
	payload := strings.Repeat("x", 1024)
	publish := func(n int) (received int) {
		for range n {
			if c.DoQuiet(0, "PUBLISH", "firehose", payload).Int() == 1 {
				received++
			}
		}
		return received
	}
	gone := func(x *simcluster.Conn) {
		t.Helper()
		c.Until("the subscriber's subscription is gone", func() (bool, string) {
			got := simcluster.Render(c.DoQuiet(0, "PUBSUB", "NUMSUB", "firehose"))
			return got == `["firehose" :0]`, got
		})
		for {
			_, err := x.ReceiveWithin(5 * time.Second)
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatalf("reading the disconnected subscriber: %v", err)
			}
		}
	}

	slow := c.Connect(0)
	slow.Send("SUBSCRIBE", "firehose")
	expectFrames(t, slow, `["subscribe" "firehose" :1]`)
	if got := publish(2 * hard / len(payload)); got == 0 || got > hard/len(payload)+1 {
		t.Fatalf("%d messages queued for a subscriber that does not read, hard limit %d bytes", got, hard)
	}
	gone(slow)

	lagging := c.Connect(0)
	lagging.Send("SUBSCRIBE", "firehose")
	expectFrames(t, lagging, `["subscribe" "firehose" :1]`)
	if got := publish(2 * soft / len(payload)); got != 2*soft/len(payload) {
		t.Fatalf("%d of %d messages queued past the soft limit, before its seconds", got, 2*soft/len(payload))
	}
	c.Advance(3 * time.Second)
	if got := publish(1); got != 0 {
		t.Fatal("still subscribed after staying past the soft limit for longer than its seconds")
	}
	gone(lagging)
	info := c.Do(0, "INFO", "stats").Text()
	if !strings.Contains(info, "client_output_buffer_limit_disconnections:2\r\n") {
		t.Fatalf("INFO stats:\n%s", info)
	}
}
