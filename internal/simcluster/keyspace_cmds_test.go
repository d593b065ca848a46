package simcluster_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server/resp"
)

// KEYS and RANDOMKEY answer for the node they are sent to, every scheme
// included, as SCAN does (decision 0004); KEYS pattern CLUSTER for all.
func TestKeysAndRandomKeyPerNode(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	var all []string
	for i, spec := range everyScheme {
		for j := range 4 {
			k := fmt.Sprintf("user:%d:%d", i, j)
			c.Do(0, "SET", k, "v", "SCHEME", spec)
			all = append(all, k)
		}
	}
	c.Do(0, "SET", "other", "v")
	c.Do(0, "SET", "user:gone", "v", "PX", "1")
	time.Sleep(5 * time.Millisecond)
	var union []string
	for node := range c.Len() {
		keys := texts(c.Do(node, "KEYS", "user:*"))
		for _, k := range keys {
			if c.Coordinator(k) != node {
				t.Errorf("node %d listed %s, which node %d coordinates", node, k, c.Coordinator(k))
			}
		}
		union = append(union, keys...)
		if r := c.Do(node, "RANDOMKEY"); len(texts(c.Do(node, "KEYS", "*"))) == 0 {
			if !r.IsNil() {
				t.Errorf("node %d has no key but RANDOMKEY = %s", node, simcluster.Render(r))
			}
		} else if c.Coordinator(r.Text()) != node || r.Text() == "user:gone" {
			t.Errorf("node %d: RANDOMKEY = %s", node, simcluster.Render(r))
		}
	}
	slices.Sort(union)
	slices.Sort(all)
	if !slices.Equal(union, all) {
		t.Fatalf("KEYS user:* over the nodes = %v, want %v", union, all)
	}
	whole := texts(c.Do(c.AnyLive(), "KEYS", "user:*", "CLUSTER"))
	slices.Sort(whole)
	if !slices.Equal(whole, all) {
		t.Fatalf("KEYS user:* CLUSTER = %v, want %v", whole, all)
	}
	if got := simcluster.Render(c.Do(0, "KEYS", "user:*", "ALL")); got != "-ERR wrong number of arguments for 'keys' command" {
		t.Errorf("KEYS p ALL = %s", got)
	}
	if got := simcluster.Render(c.Do(0, "KEYS", "nomatch*", "cluster")); got != "[]" {
		t.Errorf("KEYS nomatch* = %s", got)
	}
	// RANDOMKEY draws every key of a node in time.
	node := c.Coordinator(all[0])
	mine := texts(c.Do(node, "KEYS", "*"))
	drawn := map[string]bool{}
	for range 400 {
		drawn[c.DoQuiet(node, "RANDOMKEY").Text()] = true
	}
	if len(drawn) < len(mine)/2 {
		t.Errorf("RANDOMKEY drew %d of node %d's %d keys in 400 draws", len(drawn), node, len(mine))
	}
	// The same for keys packed in a few stripe chunks, where a walk's step
	// is a whole chunk.
	c.Do(0, "FLUSHALL", "CLUSTER")
	for i := range 60 {
		c.Do(0, "SET", fmt.Sprintf("{packed}:%d", i), "v", "SCHEME", "stripe:4+2")
	}
	node = c.Coordinator("{packed}:0")
	drawn = map[string]bool{}
	for range 400 {
		drawn[c.DoQuiet(node, "RANDOMKEY").Text()] = true
	}
	if len(drawn) < 30 {
		t.Errorf("RANDOMKEY drew %d of 60 stripe keys in 400 draws", len(drawn))
	}
}

func texts(r resp.Reply) []string {
	var out []string
	for _, it := range r.Items() {
		out = append(out, it.Text())
	}
	return out
}

// TOUCH, EXPIRETIME, PEXPIRETIME, TIME, OBJECT and MEMORY USAGE on every
// scheme, with the Redis 7 documentation's examples and error texts.
func TestKeyIntrospectionOnEveryScheme(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	var noneUsage int64
	for _, spec := range everyScheme {
		t.Run(spec, func(t *testing.T) {
			key, do, check := onScheme(t, c, spec)
			k1, k2 := key("key1"), key("key2")
			check("SET", do("SET", k1, "Hello", "SCHEME", spec), "+OK")
			check("SET", do("SET", k2, "World", "SCHEME", spec), "+OK")
			check("TOUCH", do("TOUCH", k1, k2, key("nosuch")), ":2")
			check("TOUCH across nodes", do("TOUCH", k1, "elsewhere"), ":1")

			// EXPIRETIME / PEXPIRETIME: the documentation's example.
			check("EXPIREAT", do("EXPIREAT", k1, "33177117420"), ":1")
			check("EXPIRETIME", do("EXPIRETIME", k1), ":33177117420")
			check("PEXPIRETIME", do("PEXPIRETIME", k1), ":33177117420000")
			check("PEXPIREAT", do("PEXPIREAT", k1, "33177117420499"), ":1")
			check("EXPIRETIME rounds", do("EXPIRETIME", k1), ":33177117420")
			check("PEXPIREAT", do("PEXPIREAT", k1, "33177117420500"), ":1")
			check("EXPIRETIME rounds up", do("EXPIRETIME", k1), ":33177117421")
			check("EXPIRETIME without expiry", do("EXPIRETIME", k2), ":-1")
			check("PEXPIRETIME missing", do("PEXPIRETIME", key("nosuch")), ":-2")

			// OBJECT ENCODING as Redis picks it for a value SET stores.
			for _, tc := range [][2]string{{"12345", "int"}, {"-9223372036854775808", "int"}, {"012", "embstr"},
				{"Hello", "embstr"}, {strings.Repeat("x", 44), "embstr"}, {strings.Repeat("x", 45), "raw"}} {
				check("SET", do("SET", key("enc"), tc[0], "SCHEME", spec), "+OK")
				check("OBJECT ENCODING "+tc[0], do("OBJECT", "ENCODING", key("enc")), `"`+tc[1]+`"`)
			}
			check("OBJECT ENCODING missing", do("OBJECT", "ENCODING", key("nosuch")), "nil")
			check("SET", do("SET", key("enc"), "100"), "+OK")
			check("OBJECT REFCOUNT shared", do("OBJECT", "REFCOUNT", key("enc")), ":2147483647")
			check("OBJECT REFCOUNT", do("OBJECT", "REFCOUNT", k2), ":1")
			h := key("hash")
			setHash(t, c, h, spec, "f", "v")
			check("OBJECT ENCODING small hash", do("OBJECT", "ENCODING", h), `"listpack"`)
			setHash(t, c, h, spec, "f", strings.Repeat("v", 65))
			check("OBJECT ENCODING hash of a long value", do("OBJECT", "ENCODING", h), `"hashtable"`)
			many := make([]string, 0, 2*129)
			for i := range 129 {
				many = append(many, strconv.Itoa(i), "v")
			}
			setHash(t, c, h, spec, many...)
			check("OBJECT ENCODING hash of 129 fields", do("OBJECT", "ENCODING", h), `"hashtable"`)
			check("OBJECT FREQ", do("OBJECT", "FREQ", k2), "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			check("OBJECT IDLETIME", do("OBJECT", "IDLETIME", k2), "-ERR memgest: idle time is tracked only under a temperature policy (SCHEME.POLICY TEMPERATURE); without one no use of a key is recorded")
			check("OBJECT IDLETIME missing", do("OBJECT", "IDLETIME", key("nosuch")), "nil")
			check("OBJECT bogus", do("OBJECT", "BOGUS", k2), "-ERR unknown subcommand 'BOGUS'. Try OBJECT HELP.")
			check("OBJECT ENCODING a b", do("OBJECT", "ENCODING", k2, "x"), "-ERR wrong number of arguments for 'object|encoding' command")
			if help := c.Do(0, "OBJECT", "HELP").Items(); len(help) != 15 || help[0].Text() != "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" {
				t.Fatalf("OBJECT HELP = %s", simcluster.Render(c.Do(0, "OBJECT", "HELP")))
			}

			// MEMORY USAGE: the key's bytes across the cluster under its scheme.
			m := key("mem")
			check("SET", do("SET", m, strings.Repeat("x", 1000), "SCHEME", spec), "+OK")
			r := c.Do(c.AnyLive(), "MEMORY", "USAGE", m)
			if r.Kind() != resp.KindInt || r.Int() < 1000 {
				t.Fatalf("MEMORY USAGE = %s", simcluster.Render(r))
			}
			if spec == "none" {
				noneUsage = r.Int()
			} else if ratio := float64(r.Int()) / float64(noneUsage); ratio < 1.4 || ratio > 3.1 {
				t.Errorf("MEMORY USAGE = %d, %.2f times none's %d", r.Int(), ratio, noneUsage)
			}
			check("MEMORY USAGE SAMPLES 0", simcluster.Render(c.Do(c.AnyLive(), "MEMORY", "USAGE", m, "SAMPLES", "0")), simcluster.Render(r))
			check("MEMORY USAGE missing", do("MEMORY", "USAGE", key("nosuch")), "nil")
			check("MEMORY USAGE SAMPLES -1", do("MEMORY", "USAGE", m, "SAMPLES", "-1"), "-ERR syntax error")
			check("MEMORY USAGE SAMPLES x", do("MEMORY", "USAGE", m, "SAMPLES", "x"), "-ERR value is not an integer or out of range")
			check("MEMORY USAGE bogus", do("MEMORY", "USAGE", m, "bogus"), "-ERR syntax error")
			check("MEMORY STATS", do("MEMORY", "STATS"), "-ERR unknown subcommand 'STATS'. Try MEMORY HELP.")
		})
	}
	// TIME: seconds and microseconds of the node's clock.
	tm := c.Do(0, "TIME").Items()
	secs, err1 := strconv.ParseInt(tm[0].Text(), 10, 64)
	micros, err2 := strconv.ParseInt(tm[1].Text(), 10, 64)
	if len(tm) != 2 || err1 != nil || err2 != nil || micros < 0 || micros >= 1e6 || secs < time.Now().Unix()-5 {
		t.Errorf("TIME = %s", simcluster.Render(c.Do(0, "TIME")))
	}
}

// WAIT answers at once with the number of other nodes holding the
// connection's last written key, per scheme (decision 0013).
func TestWaitCountsTheLastWritesHolders(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	want := map[string]string{"none": ":0", "rep:3": ":2", "split:4+2": ":5", "stripe:4+2": ":2", "hybrid:4+2": ":2", "stripe:4+2@batch": ":2"} // the coordinator holds one split shard
	for _, spec := range everyScheme {
		k := "wait:{" + spec + "}"
		out := c.DoSession(c.AnyLive(), []string{"WAIT", "1", "0"}, []string{"SET", k, "v", "SCHEME", spec},
			[]string{"WAIT", "6", "100"}, []string{"GET", k}, []string{"WAIT", "0", "0"}, []string{"DEL", k}, []string{"WAIT", "1", "0"})
		got := []string{simcluster.Render(out[0]), simcluster.Render(out[2]), simcluster.Render(out[4]), simcluster.Render(out[6])}
		if w := []string{":0", want[spec], want[spec], ":0"}; !slices.Equal(got, w) {
			t.Errorf("%s: WAIT before a write, after it, after a read, after DEL = %v, want %v", spec, got, w)
		}
		// A write inside a transaction counts too, run here or on the
		// slot's coordinator from another node.
		for _, node := range []int{c.Coordinator(k), (c.Coordinator(k) + 1) % c.Len()} {
			out = c.DoSession(node, []string{"MULTI"}, []string{"SET", k, "v", "SCHEME", spec}, []string{"EXEC"}, []string{"WAIT", "0", "0"})
			if got := simcluster.Render(out[3]); got != want[spec] {
				t.Errorf("%s: WAIT after EXEC on node %d = %s, want %s", spec, node, got, want[spec])
			}
		}
	}
	for _, tc := range [][3]string{{"x", "0", "-ERR value is not an integer or out of range"},
		{"0", "x", "-ERR timeout is not an integer or out of range"}, {"0", "-1", "-ERR timeout is negative"},
		{"0", "9223372036854775807", "-ERR timeout is out of range"}} {
		if got := simcluster.Render(c.Do(0, "WAIT", tc[0], tc[1])); got != tc[2] {
			t.Errorf("WAIT %s %s = %s, want %s", tc[0], tc[1], got, tc[2])
		}
	}
}

// Under a temperature policy OBJECT IDLETIME answers from the access
// sketch: the seconds since the key was last read or written.
func TestObjectIdletimeUnderTemperaturePolicy(t *testing.T) {
	// A long failure timeout: Advance steps the clock a quarter of it at a
	// time, waiting for every node's lease renewal after each step, and
	// nothing here fails.
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6, FailureTimeout: 40 * time.Second})
	setPolicy(t, c, "TEMPERATURE", "rep:3", "stripe:4+2", "3600")
	expect(t, "SET", c.Do(0, "SET", "idle", "v"), "+OK")
	expect(t, "GET", c.Do(1, "GET", "idle"), `"v"`)
	c.Advance(30 * time.Second)
	idle := c.Do(2, "OBJECT", "IDLETIME", "idle")
	if idle.Kind() != resp.KindInt || idle.Int() < 29 || idle.Int() > 31 {
		t.Fatalf("OBJECT IDLETIME 30 s after a read = %s", simcluster.Render(idle))
	}
	expect(t, "GET", c.Do(1, "GET", "idle"), `"v"`)
	expect(t, "OBJECT IDLETIME after a read", c.Do(2, "OBJECT", "IDLETIME", "idle"), ":0")
}
