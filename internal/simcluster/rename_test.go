package simcluster_test

import (
	"sync"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
)

// RENAME, RENAMENX and COPY (issue 28) on every scheme: the Redis 7
// documentation's examples, the value, TTL, type and scheme carried to the
// destination, Redis Cluster's CROSSSLOT, and refusals that change nothing.
func TestRenameAndCopyOnEveryScheme(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range everyScheme {
		t.Run(spec, func(t *testing.T) {
			key, do, check := onScheme(t, c, spec)
			// RENAME: the documentation's example, with a TTL.
			mykey, other := key("mykey"), key("myotherkey")
			check("SET", do("SET", mykey, "Hello", "SCHEME", spec, "EX", "100"), "+OK")
			check("RENAME", do("RENAME", mykey, other), "+OK")
			check("GET", do("GET", other), `"Hello"`)
			check("EXISTS source", do("EXISTS", mykey), ":0")
			check("TTL moved", do("TTL", other), ":100")
			check("scheme moved", specOf(t, c, other), spec)
			// Over an existing key of another scheme: it takes the source's.
			check("SET", do("SET", mykey, "again", "SCHEME", spec), "+OK")
			check("RENAME over", do("RENAME", other, mykey), "+OK")
			check("GET", do("GET", mykey), `"Hello"`)
			check("TTL", do("TTL", mykey), ":100")
			check("RENAME to itself", do("RENAME", mykey, mykey), "+OK")
			check("RENAME missing", do("RENAME", key("nosuch"), other), "-ERR no such key")
			check("RENAME missing to itself", do("RENAME", key("nosuch"), key("nosuch")), "-ERR no such key")
			check("RENAME across slots", do("RENAME", mykey, "elsewhere"), "-CROSSSLOT Keys in request don't hash to the same slot")
			check("GET after refusals", do("GET", mykey), `"Hello"`)
			check("EXISTS after refusals", do("EXISTS", other, "elsewhere"), ":0")

			// RENAMENX: the documentation's example.
			check("SET", do("SET", other, "World", "SCHEME", "none"), "+OK")
			check("RENAMENX onto an existing key", do("RENAMENX", mykey, other), ":0")
			check("GET", do("GET", other), `"World"`)
			check("GET source kept", do("GET", mykey), `"Hello"`)
			check("RENAMENX to itself", do("RENAMENX", mykey, mykey), ":0")
			check("RENAMENX missing", do("RENAMENX", key("nosuch"), key("x")), "-ERR no such key")
			check("RENAMENX", do("RENAMENX", mykey, key("fresh")), ":1")
			check("GET", do("GET", key("fresh")), `"Hello"`)
			check("scheme moved", specOf(t, c, key("fresh")), spec)

			// COPY: the documentation's example, then REPLACE and DB.
			dolly, clone := key("dolly"), key("clone")
			check("SET", do("SET", dolly, "sheep", "SCHEME", spec, "PX", "100000"), "+OK")
			check("COPY", do("COPY", dolly, clone), ":1")
			check("GET", do("GET", clone), `"sheep"`)
			check("GET source", do("GET", dolly), `"sheep"`)
			check("TTL copied", do("TTL", clone), ":100")
			check("scheme copied", specOf(t, c, clone), spec)
			check("SET", do("SET", dolly, "goat"), "+OK")
			check("COPY onto an existing key", do("COPY", dolly, clone), ":0")
			check("GET", do("GET", clone), `"sheep"`)
			check("COPY REPLACE DB 0", do("COPY", dolly, clone, "DB", "0", "REPLACE"), ":1")
			check("GET", do("GET", clone), `"goat"`)
			check("COPY missing", do("COPY", key("nosuch"), clone), ":0")
			check("COPY to itself", do("COPY", dolly, dolly), "-ERR source and destination objects are the same")
			check("COPY DB 1", do("COPY", dolly, key("c2"), "DB", "1"), "-ERR DB index is out of range")
			check("COPY DB x", do("COPY", dolly, key("c2"), "DB", "x"), "-ERR value is not an integer or out of range")
			check("COPY DB huge", do("COPY", dolly, key("c2"), "DB", "99999999999"), "-ERR value is out of range, value must between -2147483648 and 2147483647")
			check("COPY DB", do("COPY", dolly, key("c2"), "DB"), "-ERR syntax error")
			check("COPY bogus", do("COPY", dolly, key("c2"), "NOW"), "-ERR syntax error")
			check("COPY across slots", do("COPY", dolly, "elsewhere"), "-CROSSSLOT Keys in request don't hash to the same slot")
			check("EXISTS after refusals", do("EXISTS", key("c2"), "elsewhere"), ":0")

			// A hash keeps its type through COPY and RENAME.
			h := key("hash")
			setHash(t, c, h, spec, "field", "value")
			check("COPY a hash", do("COPY", h, key("hcopy")), ":1")
			check("RENAME a hash", do("RENAME", key("hcopy"), key("hmoved")), "+OK")
			check("the hash moved", rawValue(t, c, key("hmoved")), string(mustHash("field", "value")))
			check("scheme moved", specOf(t, c, key("hmoved")), spec)
		})
	}
}

// Two keys of different slots that one node coordinates are CROSSSLOT all
// the same, as in Redis Cluster, for every two-key command.
func TestTwoKeyCommandsAreCrossSlotOnOneCoordinator(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 3})
	a := c.KeyOn(0, "a")
	b := c.KeyOn(0, "b")
	if keyslot.Of([]byte(a)) == keyslot.Of([]byte(b)) {
		t.Fatalf("%s and %s share a slot", a, b)
	}
	c.Do(0, "SET", a, "v")
	for _, cmd := range []string{"RENAME", "RENAMENX", "COPY", "LCS"} {
		for _, node := range []int{0, 1} { // the coordinator, and a node that forwards
			if got := simcluster.Render(c.Do(node, cmd, a, b)); got != "-CROSSSLOT Keys in request don't hash to the same slot" {
				t.Errorf("%s on node %d: %s", cmd, node, got)
			}
		}
	}
	if got := simcluster.Render(c.Do(1, "EXISTS", a, b)); got != ":1" {
		t.Errorf("EXISTS = %s", got)
	}
}

// RENAME a b and RENAME b a at once never wait on each other (RMWPair
// takes the keys in one order), and the value is never lost.
func TestConcurrentRenamesBothWays(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range []string{"rep:3", "stripe:4+2"} {
		a, b := "ping:{"+spec+"}", "pong:{"+spec+"}"
		c.Do(0, "SET", a, "ball", "SCHEME", spec)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				from, to := a, b
				if w%2 == 1 {
					from, to = b, a
				}
				for range 25 {
					c.DoQuiet(w, "RENAME", from, to) // ERR no such key when the other side is ahead
				}
			}()
		}
		wg.Wait()
		got := simcluster.Render(c.Do(0, "MGET", a, b))
		if got != `["ball" nil]` && got != `[nil "ball"]` {
			t.Fatalf("%s: MGET after the renames = %s", spec, got)
		}
	}
}
