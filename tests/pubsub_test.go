package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// checkPubSub drives pub/sub through real processes (run inside
// TestClusterClient, on its six-node cluster, to spare a cluster's start):
// go-redis's ClusterClient subscribes where it likes and publishes
// elsewhere, SSUBSCRIBE and SPUBLISH follow the channel's slot, a RESP3
// subscriber gets pushes, and a raw RESP2 connection sees Redis's exact
// frames.
func checkPubSub(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	cc := c.clusterClient()

	// Classic: subscribed at the node of the channel's slot (go-redis's
	// choice), published from every node.
	ps := cc.Subscribe(ctx, "pubsub:news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		t.Fatal(err)
	}
	for i := range c.nodes {
		must(t, c.plainClient(i, 2).Publish(ctx, "pubsub:news", fmt.Sprint(i)).Err())
		receive(t, ps, "pubsub:news", fmt.Sprint(i))
	}

	// Sharded: the cluster client subscribes at the slot's coordinator and
	// SPUBLISH is routed there.
	sps := cc.SSubscribe(ctx, "{pubsub}:orders")
	defer sps.Close()
	if _, err := sps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if n := cc.SPublish(ctx, "{pubsub}:orders", "o1").Val(); n != 1 {
		t.Fatalf("SPUBLISH reached %d subscribers", n)
	}
	receive(t, sps, "{pubsub}:orders", "o1")
	total := int64(0)
	for i := range c.nodes {
		total += c.plainClient(i, 2).PubSubShardNumSub(ctx, "{pubsub}:orders").Val()["{pubsub}:orders"]
	}
	if total != 1 {
		t.Fatalf("SHARDNUMSUB over the nodes: %d", total)
	}

	// RESP3: a push, and other commands on the subscribed connection.
	r3 := c.plainClient(1, 3)
	ps3 := r3.Subscribe(ctx, "pubsub:r3")
	defer ps3.Close()
	if _, err := ps3.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	must(t, c.plainClient(4, 3).Publish(ctx, "pubsub:r3", "pushed").Err())
	receive(t, ps3, "pubsub:r3", "pushed")

	// Redis's frames, byte for byte, and the subscribed state.
	conn, err := net.DialTimeout("tcp", c.nodes[2].addr(), 5*time.Second)
	must(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(conn)
	exchange := func(req, want string) {
		t.Helper()
		if _, err := conn.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(rd, got); err != nil || string(got) != want {
			t.Fatalf("%q: got %q (%v), want %q", req, got, err, want)
		}
	}
	exchange("SUBSCRIBE raw\r\n", "*3\r\n$9\r\nsubscribe\r\n$3\r\nraw\r\n:1\r\n")
	exchange("PING\r\n", "*2\r\n$4\r\npong\r\n$0\r\n\r\n")
	exchange("GET k\r\n", "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
	must(t, c.plainClient(5, 2).Publish(ctx, "raw", "hi").Err())
	exchange("", "*3\r\n$7\r\nmessage\r\n$3\r\nraw\r\n$2\r\nhi\r\n")
	exchange("UNSUBSCRIBE\r\n", "*3\r\n$11\r\nunsubscribe\r\n$3\r\nraw\r\n:0\r\n")
	exchange("UNSUBSCRIBE\r\n", "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n")
}

// receive waits for one message on ps and checks it.
func receive(t *testing.T, ps *redis.PubSub, channel, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := ps.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("waiting for %q on %s: %v", payload, channel, err)
	}
	if m.Channel != channel || m.Payload != payload {
		t.Fatalf("received %q on %s, want %q on %s", m.Payload, m.Channel, payload, channel)
	}
}
