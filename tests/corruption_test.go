package tests

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// infoField reads one numeric field of node i's INFO (any section).
func (c *testCluster) infoField(i int, field string) int64 {
	c.t.Helper()
	info, err := c.plainClient(i, 2).Info(ctxT(c.t)).Result()
	must(c.t, err)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			must(c.t, err)
			return n
		}
	}
	c.t.Fatalf("INFO of node %d has no %s", i, field)
	return 0
}

// flip runs DEBUG FLIP key on node i and returns how many copies it
// corrupted.
func (c *testCluster) flip(i int, key string) int64 {
	c.t.Helper()
	n, err := c.plainClient(i, 2).Do(ctxT(c.t), "DEBUG", "FLIP", key).Int64()
	must(c.t, err)
	return n
}

// TestCorruptCopiesAreRepaired flips bytes in stored copies (DEBUG FLIP)
// and checks that memgest never serves them and restores them from
// redundancy: a split shard on read, a rep primary record on read, and a
// rep replica through the scrub. Each repair is proven by corrupting
// another copy afterwards: without the repair, too few good copies would
// be left and the read would fail.
func TestCorruptCopiesAreRepaired(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{extra: []string{"--enable-debug-command", "--scrub-rate", "0"}})
	ctx := ctxT(t)
	rdb := c.clusterClient()

	// A split:2+1 shard, repaired on read.
	sk := c.keyOn(t, rdb, 1, "split:")
	sval := strings.Repeat("s", 3000)
	must(t, rdb.Do(ctx, "SET", sk, sval, "SCHEME", "split:2+1").Err())
	h1, h2 := c.pieceHolder(t, sk, 1), c.pieceHolder(t, sk, 2)
	if got := c.flip(h1, sk); got != 1 {
		t.Fatalf("DEBUG FLIP on shard 1's holder changed %d copies, want 1", got)
	}
	via := c.plainClient(0, 2)
	if v, err := via.Get(ctx, sk).Result(); err != nil || v != sval {
		t.Fatalf("GET of a split key with a corrupt shard = %d bytes, %v", len(v), err)
	}
	waitCount(t, "a repair on node 1", func() int64 { return c.infoField(1, "repairs") }, 1)
	c.flip(h2, sk) // shard 1 must be good again, or only one shard is left
	if v, err := via.Get(ctx, sk).Result(); err != nil || v != sval {
		t.Fatalf("GET after the repaired shard's neighbour was corrupted = %d bytes, %v", len(v), err)
	}

	// A rep:3 primary record, repaired from a replica on read.
	rk := c.keyOn(t, rdb, 2, "rep:")
	must(t, rdb.Do(ctx, "SET", rk, "replicated value", "SCHEME", "rep:3").Err())
	if got := c.flip(2, rk); got != 1 {
		t.Fatalf("DEBUG FLIP on the coordinator changed %d copies, want its record", got)
	}
	if v, err := via.Get(ctx, rk).Result(); err != nil || v != "replicated value" {
		t.Fatalf("GET of a rep key with a corrupt record = %q, %v", v, err)
	}
	if v, err := via.Get(ctx, rk).Result(); err != nil || v != "replicated value" {
		t.Fatalf("second GET of the repaired rep key = %q, %v", v, err)
	}

	// A rep:3 key with all three copies corrupt names the corruption and
	// the key (it answered "kept changing under a read" before).
	ak := c.keyOn(t, rdb, 2, "rep-all:")
	must(t, rdb.Do(ctx, "SET", ak, "every copy flipped", "SCHEME", "rep:3").Err())
	var copies int64
	for i := range c.nodes {
		copies += c.flip(i, ak)
	}
	if copies != 3 {
		t.Fatalf("DEBUG FLIP changed %d copies of a rep:3 key, want 3", copies)
	}
	if v, err := via.Get(ctx, ak).Result(); err == nil || !strings.HasPrefix(err.Error(), "CORRUPT") || !strings.Contains(err.Error(), ak) {
		t.Fatalf("GET of a rep:3 key with every copy corrupt = %q, %v; want -CORRUPT naming it", v, err)
	}

	// A none key has no other copy: a clear error, never the bad bytes.
	nk := c.keyOn(t, rdb, 3, "none:")
	must(t, rdb.Set(ctx, nk, "only copy", 0).Err())
	c.flip(3, nk)
	if v, err := via.Get(ctx, nk).Result(); err == nil || err == redis.Nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("GET of a corrupt none key = %q, %v; want a checksum error", v, err)
	}

	// DEBUG is refused without the flag, and for unknown subcommands.
	if err := via.Do(ctx, "DEBUG", "NOSUCH").Err(); err == nil {
		t.Fatal("DEBUG NOSUCH was accepted")
	}
}

// TestScrubRepairsACorruptReplica corrupts a replica that no read ever
// touches; the scrub finds it and the coordinator stores it again.
func TestScrubRepairsACorruptReplica(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{extra: []string{"--enable-debug-command", "--scrub-rate", "1048576"}})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	rk := c.keyOn(t, rdb, 0, "scrub:")
	must(t, rdb.Do(ctx, "SET", rk, "scrubbed value", "SCHEME", "rep:2").Err())
	replica := -1
	for i := 1; i < len(c.nodes) && replica < 0; i++ {
		if c.flip(i, rk) == 1 {
			replica = i
		}
	}
	if replica < 0 {
		t.Fatal("no node holds the rep:2 key's replica")
	}
	waitCount(t, "the scrub to find the corrupt replica", func() int64 { return c.infoField(replica, "corrupt_found") }, 1)
	waitCount(t, "the coordinator's repair", func() int64 { return c.infoField(0, "repairs") }, 1)
	// The replica is good again: corrupt the coordinator's record, which a
	// read repairs from that replica alone.
	c.flip(0, rk)
	if v, err := c.plainClient(1, 2).Get(ctx, rk).Result(); err != nil || v != "scrubbed value" {
		t.Fatalf("GET with the record corrupt after the scrub's repair = %q, %v", v, err)
	}
	if !strings.Contains(c.metrics(0), "memgest_repairs_total") {
		t.Fatal("/metrics lacks memgest_repairs_total")
	}
}

// waitCount waits up to 15 s until get() reaches want.
func waitCount(t *testing.T, what string, get func() int64, want int64) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := get()
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %d, want %d", what, got, want)
		}
	}
}

// TestSchemeVerify: SCHEME.VERIFY reports a key whose pieces all agree
// with the pieces it checked, names a corrupt replica or shard, and answers
// nil for a missing key; DEBUG PIECES lists what a node holds.
func TestSchemeVerify(t *testing.T) {
	c := startCluster(t, 4, clusterOptions{extra: []string{"--enable-debug-command", "--scrub-rate", "0"}})
	ctx := ctxT(t)
	rdb := c.plainClient(0, 2) // memgest forwards to each key's coordinator
	verify := func(k string) ([]any, error) { return rdb.Do(ctx, "SCHEME.VERIFY", k).Slice() }
	for sch, pieces := range map[string]int64{"rep:3": 2, "split:2+1": 3} {
		k := "verify:" + sch
		must(t, rdb.Do(ctx, "SET", k, strings.Repeat("v", 2000), "SCHEME", sch).Err())
		rep, err := verify(k)
		must(t, err)
		if f := flatMap(rep); f["scheme"] != sch || f["pieces"] != pieces || f["unavailable"] != int64(0) {
			t.Fatalf("SCHEME.VERIFY %s = %v; want %d pieces checked", k, rep, pieces)
		}
	}
	if _, err := verify("verify:missing"); err != redis.Nil {
		t.Fatalf("SCHEME.VERIFY of a missing key = %v, want nil", err)
	}

	holder := c.pieceHolder(t, "verify:split:2+1", 1)
	rows, err := c.plainClient(holder, 2).Do(ctx, "DEBUG", "PIECES").Slice()
	must(t, err)
	listed := false
	for _, r := range rows {
		f := r.([]any)
		listed = listed || f[0] == "verify:split:2+1" && f[1] == "split:2+1" && f[3] == "shard" && f[4] == int64(1)
	}
	if !listed {
		t.Fatalf("DEBUG PIECES on shard 1's holder does not list it: %v", rows)
	}
	if got := c.flip(holder, "verify:split:2+1"); got != 1 {
		t.Fatalf("DEBUG FLIP changed %d copies, want 1", got)
	}
	if _, err := verify("verify:split:2+1"); err == nil || !strings.Contains(err.Error(), "shard 1 on") || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("SCHEME.VERIFY with a corrupt shard = %v; want it named", err)
	}
}
