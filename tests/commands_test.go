package tests

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// schemes are the scheme specs every data command is checked against.
var schemes = []string{"none", "rep:3", "split:4+2", "stripe:4+2", "hybrid:4+2", "stripe:4+2@batch", "hybrid:4+2@auto"}

// plainClient is a non-cluster client on node i: memgest forwards for it.
func (c *testCluster) plainClient(i int, proto int) *redis.Client {
	cl := redis.NewClient(&redis.Options{Addr: c.nodes[i].addr(), Protocol: proto, DisableIdentity: true, Password: c.pass, TLSConfig: c.tls})
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

func (c *testCluster) clusterClient() *redis.ClusterClient {
	return c.clusterClientWith(func(*redis.ClusterOptions) {})
}

// clusterClientWith is clusterClient with options adjusted by adjust.
func (c *testCluster) clusterClientWith(adjust func(*redis.ClusterOptions)) *redis.ClusterClient {
	addrs := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		addrs[i] = nd.addr()
	}
	o := &redis.ClusterOptions{Addrs: addrs, DisableIdentity: true, Password: c.pass, TLSConfig: c.tls}
	adjust(o)
	cl := redis.NewClusterClient(o)
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// TestStringCommandsEveryScheme runs the string and key commands on keys
// of each scheme through a plain client connected to one node, so most
// keys are forwarded to their coordinator.
func TestStringCommandsEveryScheme(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	for _, proto := range []int{2, 3} {
		rdb := c.plainClient(2, proto)
		for _, sch := range schemes {
			t.Run(fmt.Sprintf("resp%d/%s", proto, sch), func(t *testing.T) {
				checkStringCommands(t, rdb, fmt.Sprintf("p%d:%s:", proto, sch), sch)
			})
		}
	}
}

func checkStringCommands(t *testing.T, rdb *redis.Client, prefix, sch string) {
	ctx := ctxT(t)
	k := func(s string) string { return prefix + s }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	eq := func(got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	must(rdb.Do(ctx, "SET", k("a"), "hello", "SCHEME", sch).Err())
	v, err := rdb.Get(ctx, k("a")).Result()
	must(err)
	eq(v, "hello")
	of, err := rdb.Do(ctx, "SCHEME.OF", k("a")).Result()
	must(err)
	if !strings.Contains(fmt.Sprint(of), sch) {
		t.Fatalf("SCHEME.OF %v does not name %s", of, sch)
	}
	// Overwrite keeps the scheme.
	must(rdb.Set(ctx, k("a"), "world", 0).Err())
	of, _ = rdb.Do(ctx, "SCHEME.OF", k("a")).Result()
	if !strings.Contains(fmt.Sprint(of), sch) {
		t.Fatalf("overwrite changed the scheme: %v", of)
	}
	eq(rdb.StrLen(ctx, k("a")).Val(), 5)
	eq(rdb.Append(ctx, k("a"), "!").Val(), 6)
	eq(rdb.Get(ctx, k("a")).Val(), "world!")
	// NX / XX / GET
	eq(rdb.SetNX(ctx, k("a"), "x", 0).Val(), false)
	eq(rdb.SetXX(ctx, k("nx"), "x", 0).Val(), false)
	eq(rdb.SetArgs(ctx, k("a"), "new", redis.SetArgs{Get: true}).Val(), "world!")
	eq(rdb.Get(ctx, k("a")).Val(), "new")
	// Counters
	must(rdb.Do(ctx, "SET", k("n"), "10", "SCHEME", sch).Err())
	eq(rdb.Incr(ctx, k("n")).Val(), 11)
	eq(rdb.IncrBy(ctx, k("n"), 5).Val(), 16)
	eq(rdb.Decr(ctx, k("n")).Val(), 15)
	eq(rdb.DecrBy(ctx, k("n"), 20).Val(), -5)
	if err := rdb.Incr(ctx, k("a")).Err(); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("INCR of a string: %v", err)
	}
	must(rdb.Do(ctx, "SET", k("max"), "9223372036854775807", "SCHEME", sch).Err())
	if err := rdb.Incr(ctx, k("max")).Err(); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Fatalf("INCR overflow: %v", err)
	}
	// TTLs
	must(rdb.Do(ctx, "SET", k("t"), "v", "EX", "100", "SCHEME", sch).Err())
	if ttl := rdb.TTL(ctx, k("t")).Val(); ttl < 99*time.Second || ttl > 100*time.Second {
		t.Fatalf("TTL %v", ttl)
	}
	eq(rdb.Persist(ctx, k("t")).Val(), true)
	eq(rdb.TTL(ctx, k("t")).Val(), time.Duration(-1))
	eq(rdb.PExpire(ctx, k("t"), 50*time.Second).Val(), true)
	if pttl := rdb.PTTL(ctx, k("t")).Val(); pttl <= 49*time.Second {
		t.Fatalf("PTTL %v", pttl)
	}
	must(rdb.Do(ctx, "SET", k("short"), "v", "PX", "150", "SCHEME", sch).Err())
	time.Sleep(300 * time.Millisecond)
	eq(rdb.Exists(ctx, k("short")).Val(), 0)
	eq(rdb.Get(ctx, k("short")).Err(), redis.Nil)
	// GETEX, GETDEL, KEEPTTL
	must(rdb.Do(ctx, "SET", k("g"), "v", "SCHEME", sch).Err())
	eq(rdb.GetEx(ctx, k("g"), 10*time.Second).Val(), "v")
	if ttl := rdb.TTL(ctx, k("g")).Val(); ttl <= 0 {
		t.Fatalf("GETEX did not set a TTL: %v", ttl)
	}
	must(rdb.SetArgs(ctx, k("g"), "w", redis.SetArgs{KeepTTL: true}).Err())
	if ttl := rdb.TTL(ctx, k("g")).Val(); ttl <= 0 {
		t.Fatalf("KEEPTTL lost the TTL: %v", ttl)
	}
	eq(rdb.GetDel(ctx, k("g")).Val(), "w")
	eq(rdb.Exists(ctx, k("g")).Val(), 0)
	eq(rdb.Type(ctx, k("a")).Val(), "string")
	eq(rdb.Type(ctx, k("g")).Val(), "none")
	// DEL / UNLINK count only existing keys.
	eq(rdb.Del(ctx, k("a"), k("n"), k("missing")).Val(), 2)
	eq(rdb.Unlink(ctx, k("max")).Val(), 1)
	eq(rdb.Get(ctx, k("a")).Err(), redis.Nil)
	// Large value across every scheme.
	big := strings.Repeat("0123456789", 100_000)
	must(rdb.Do(ctx, "SET", k("big"), big, "SCHEME", sch).Err())
	eq(rdb.Get(ctx, k("big")).Val() == big, true)
	eq(rdb.Del(ctx, k("big")).Val(), 1)
}

// TestMultiKeyAcrossNodes checks MGET, MSET, MSETNX, EXISTS and DEL whose
// keys live on different coordinators.
func TestMultiKeyAcrossNodes(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	rdb := c.plainClient(0, 2)
	ctx := ctxT(t)
	var keys []string
	var pairs []any
	for i := 0; i < 40; i++ {
		keys = append(keys, fmt.Sprintf("multi:%d", i))
		pairs = append(pairs, keys[i], fmt.Sprintf("v%d", i))
	}
	if err := rdb.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	vals, err := rdb.MGet(ctx, append(keys, "multi:none")...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals[:40] {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("MGET[%d] = %v", i, v)
		}
	}
	if vals[40] != nil {
		t.Fatalf("MGET of a missing key = %v", vals[40])
	}
	if n := rdb.Exists(ctx, keys...).Val(); n != 40 {
		t.Fatalf("EXISTS = %d", n)
	}
	if ok := rdb.MSetNX(ctx, "multi:new1", "a", keys[3], "b").Val(); ok {
		t.Fatal("MSETNX set keys although one exists")
	}
	if ok := rdb.MSetNX(ctx, "multi:new1", "a", "multi:new2", "b").Val(); !ok {
		t.Fatal("MSETNX refused new keys")
	}
	if n := dbsizeCluster(t, ctx, rdb); n != 42 {
		t.Fatalf("DBSIZE = %d, want 42", n)
	}
	if n := rdb.Del(ctx, append(keys, "multi:new1", "multi:new2", "multi:none")...).Val(); n != 42 {
		t.Fatalf("DEL = %d", n)
	}
	if n := dbsizeCluster(t, ctx, rdb); n != 0 {
		t.Fatalf("DBSIZE after DEL = %d", n)
	}
	checkSizePolicy(t, c)
	checkTemperaturePolicy(t, c)
}

// checkSizePolicy runs SCHEME.POLICY SIZE on real processes (decision
// 0010): once every node's map has it, MSET's keys on every coordinator
// take the scheme their size picks, an update crossing the threshold
// moves a key, and OFF removes the policy. The rest is tested in
// internal/simcluster.
func checkSizePolicy(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	rdb := c.plainClient(1, 2)
	must(t, rdb.Do(ctx, "SCHEME.POLICY", "SIZE", "16", "rep:3", "split:2+1").Err())
	awaitPolicy := func(want string) { awaitPolicyEverywhere(t, c, want) }
	awaitPolicy("[policy size threshold 16 below rep:3 at_or_above split:2+1]")
	specOf := func(k string) string { return specOfKey(t, rdb, k) }
	var pairs []any
	for i := range 12 {
		pairs = append(pairs, fmt.Sprintf("policy:%d", i), strings.Repeat("x", 10+i))
	}
	must(t, rdb.MSet(ctx, pairs...).Err())
	for i := range 12 {
		want := map[bool]string{true: "rep:3", false: "split:2+1"}[10+i < 16]
		if got := specOf(fmt.Sprintf("policy:%d", i)); got != want {
			t.Fatalf("policy:%d (%d bytes) is in %s, want %s", i, 10+i, got, want)
		}
	}
	must(t, rdb.Append(ctx, "policy:0", "0123456789").Err())
	if got := specOf("policy:0"); got != "split:2+1" {
		t.Fatalf("an APPEND crossing the threshold left the key in %s", got)
	}
	must(t, rdb.Do(ctx, "SCHEME.POLICY", "OFF").Err())
	awaitPolicy("[policy off]")
	for i := range 12 {
		must(t, rdb.Del(ctx, fmt.Sprintf("policy:%d", i)).Err())
	}
}

// awaitPolicyEverywhere waits until every node's SCHEME.POLICY reads want.
func awaitPolicyEverywhere(t *testing.T, c *testCluster, want string) {
	t.Helper()
	ctx := ctxT(t)
	deadline := time.Now().Add(10 * time.Second)
	for i := range c.nodes {
		for fmt.Sprint(c.plainClient(i, 2).Do(ctx, "SCHEME.POLICY").Val()) != want {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: SCHEME.POLICY = %v, want %s", i, c.plainClient(i, 2).Do(ctx, "SCHEME.POLICY").Val(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// specOfKey is the spec SCHEME.OF gives key.
func specOfKey(t *testing.T, rdb *redis.Client, key string) string {
	t.Helper()
	r, err := rdb.Do(ctxT(t), "SCHEME.OF", key).Slice()
	if err != nil || len(r) < 4 {
		t.Fatalf("SCHEME.OF %s: %v, %v", key, r, err)
	}
	return fmt.Sprint(r[3])
}

// checkTemperaturePolicy runs SCHEME.POLICY TEMPERATURE on real processes
// (decision 0010) with a reader that never stops: keys written go to the
// hot scheme, move to the cold one once idle a second, read back their
// values throughout (never nil), and a write moves one back. The sketch,
// the promotion by reads and linearizability are tested in
// internal/simcluster on the injected clock.
func checkTemperaturePolicy(t *testing.T, c *testCluster) {
	ctx := ctxT(t)
	rdb := c.plainClient(2, 2)
	must(t, rdb.Do(ctx, "SCHEME.POLICY", "TEMPERATURE", "rep:3", "stripe:2+1", "1").Err())
	awaitPolicyEverywhere(t, c, "[policy temperature hot rep:3 cold stripe:2+1 idle_seconds 1]")
	keys := make([]string, 12)
	for i := range keys {
		keys[i] = fmt.Sprintf("temp:{%d}", i)
		must(t, rdb.Set(ctx, keys[i], "value-"+keys[i], 0).Err())
		if got := specOfKey(t, rdb, keys[i]); got != "rep:3" {
			t.Fatalf("%s written under the policy is in %s, want rep:3", keys[i], got)
		}
	}
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() { // reads one key after another while they move
		reader := c.plainClient(3, 2)
		for i := 0; ; i++ {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			k := keys[i%len(keys)]
			if v, err := reader.Get(ctx, k).Result(); err != nil || v != "value-"+k {
				readerDone <- fmt.Errorf("GET %s while keys move = %q, %v", k, v, err)
				return
			}
			time.Sleep(250 * time.Millisecond) // each key read every 3 s: idle long enough to move between reads
		}
	}()
	var once sync.Once
	stopReader := func() error {
		var err error
		once.Do(func() { close(stop); err = <-readerDone })
		return err
	}
	defer func() { _ = stopReader() }() // after a failure already reported
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		cold := 0
		for _, k := range keys {
			if specOfKey(t, rdb, k) == "stripe:2+1" {
				cold++
			}
		}
		if cold > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no key moved to the cold scheme in 20 s with an idle time of 1 s")
		}
	}
	for _, k := range keys {
		if specOfKey(t, rdb, k) == "stripe:2+1" {
			must(t, rdb.Set(ctx, k, "value-"+k, 0).Err())
			if got := specOfKey(t, rdb, k); got != "rep:3" {
				t.Fatalf("a cold key written is in %s, want rep:3", got)
			}
			break
		}
	}
	must(t, stopReader())
	must(t, rdb.Do(ctx, "SCHEME.POLICY", "OFF").Err())
	awaitPolicyEverywhere(t, c, "[policy off]")
	for _, k := range keys {
		must(t, rdb.Del(ctx, k).Err())
	}
}
