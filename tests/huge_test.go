package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// hugeMiB is the value size TestHugeValuesEveryScheme writes, in MiB:
// MEMGEST_TEST_HUGE_MIB (`make test-huge` sets 512, the largest value a
// node takes), else 24. 24 MiB is a multi-part message in every scheme
// (24 parts of a replica, 6 of each split shard, 12,288 stripe updates in
// 24 frames and 6 waves per parity holder), small enough for race-built
// nodes, whose shadow memory multiplies every copy: at 512 MiB they took
// 22 GiB together and a stripe GET took minutes (decision 0006).
func hugeMiB(t *testing.T) int {
	v := os.Getenv("MEMGEST_TEST_HUGE_MIB")
	if v == "" {
		return 24
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 512 {
		t.Fatalf("MEMGEST_TEST_HUGE_MIB=%q: want 1..512", v)
	}
	return n
}

// TestHugeValuesEveryScheme writes and reads a huge value in none, rep:3,
// split:4+2, stripe:4+2, hybrid:4+2 and the two @batch modes (whose
// values larger than a chunk go in place, as fragments) on the Raft leader, the node whose stalls cost
// the most, while a small load runs on every scheme (issue 23 item 7:
// 256 MiB split SETs answered "lease lapsed", 500 MiB lost the leader, a
// 64 MiB stripe GET timed out). Each value reads back byte for byte, and
// meanwhile no node is marked failed, the map does not change (no
// failover, no readmission), the leader stays, and the small load sees no
// error.
func TestHugeValuesEveryScheme(t *testing.T) {
	size := hugeMiB(t) << 20
	c := startCluster(t, 6, clusterOptions{})
	huge := c.hugeClient()
	ctx := context.Background()
	schemes := []string{"none", "rep:3", "split:4+2", "stripe:4+2", "hybrid:4+2", "stripe:4+2@batch", "hybrid:4+2@batch"}
	for _, sch := range schemes { // registers each scheme: the map's epoch then stays
		if err := huge.Do(ctx, "SET", "warm:"+sch, "v", "SCHEME", sch).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before := c.clusterState(t)
	load := startSmallLoad(c, schemes)
	value := hugeValue(size)
	want := sha256.Sum256(value)
	for _, sch := range schemes {
		key := c.keyOnLeader(t, huge, "huge:"+sch)
		start := time.Now()
		if err := huge.Do(ctx, "SET", key, value, "SCHEME", sch).Err(); err != nil {
			t.Fatalf("SET of %d MiB in %s: %v", size>>20, sch, err)
		}
		wrote := time.Since(start)
		got, err := huge.Get(ctx, key).Bytes()
		if err != nil {
			t.Fatalf("GET of %d MiB in %s: %v", size>>20, sch, err)
		}
		if len(got) != size || sha256.Sum256(got) != want {
			t.Fatalf("GET in %s: %d bytes that differ from the %d written", sch, len(got), size)
		}
		t.Logf("%s: SET %d MiB in %s, GET in %s", sch, size>>20, wrote.Round(time.Millisecond), (time.Since(start) - wrote).Round(time.Millisecond))
		got = nil
		if err := huge.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ops, errs, p99 := load.stop()
	t.Logf("small load: %d operations, p99 %s; peak RSS per node (MiB): %v", ops, p99, c.peakRSS())
	if len(errs) > 0 {
		t.Errorf("the small load saw %d errors, e.g. %v", len(errs), errs[:min(5, len(errs))])
	}
	if after := c.clusterState(t); after != before {
		t.Errorf("the cluster changed under huge values: before %s, after %s", before, after)
	}
}

// hugeClient is a cluster client for huge values: generous timeouts, no
// retries (a failure shows as it is).
func (c *testCluster) hugeClient() *redis.ClusterClient {
	return c.clusterClientWith(func(o *redis.ClusterOptions) {
		o.ReadTimeout, o.WriteTimeout, o.MaxRetries, o.PoolSize = 5*time.Minute, 5*time.Minute, -1, 2
	})
}

// hugeValue is size bytes that no compression or pattern could shortcut.
func hugeValue(size int) []byte {
	v := make([]byte, size)
	rng := rand.New(rand.NewPCG(23, 7))
	for i := 0; i+8 <= size; i += 8 {
		x := rng.Uint64()
		for j := range 8 {
			v[i+j] = byte(x >> (8 * j))
		}
	}
	return v
}

// clusterState is what must not change while huge values are written:
// the Raft leader, the map's epoch (any failover or readmission bumps it)
// and each node's state, as node 0 reports them.
func (c *testCluster) clusterState(t *testing.T) string {
	t.Helper()
	st, err := c.status(0)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, n := range st.Nodes {
		states = append(states, n.State)
	}
	return fmt.Sprintf("leader %s, epoch %d, nodes %v", st.Leader, st.Epoch, states)
}

// keyOnLeader returns a key named after base that the Raft leader
// coordinates.
func (c *testCluster) keyOnLeader(t *testing.T, rdb *redis.ClusterClient, base string) string {
	t.Helper()
	ctx := ctxT(t)
	leader := c.nodes[c.leader(0)].addr()
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10000 {
		key := fmt.Sprintf("%s:%d", base, i)
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(slots, func(s redis.ClusterSlot) bool {
			return int64(s.Start) <= slot && slot <= int64(s.End) && s.Nodes[0].Addr == leader
		}) {
			return key
		}
	}
	t.Fatalf("no key of %s on the leader %s", base, leader)
	return ""
}

// peakRSS is each node's peak resident memory in MiB (VmHWM).
func (c *testCluster) peakRSS() []int {
	out := make([]int, len(c.nodes))
	for i, nd := range c.nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", nd.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
				kb, _ := strconv.Atoi(f[1])
				out[i] = kb >> 10
			}
		}
	}
	return out
}

// smallLoad is a few clients writing and reading small values of every
// scheme until stopped.
type smallLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	lat    []time.Duration
	errs   []error
}

// startSmallLoad starts four clients, each a cluster client of its own
// with timeouts that a loaded machine's latency does not reach.
func startSmallLoad(c *testCluster, schemes []string) *smallLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &smallLoad{cancel: cancel}
	for w := range 4 {
		rdb := c.clusterClientWith(func(o *redis.ClusterOptions) {
			o.ReadTimeout, o.WriteTimeout, o.MaxRetries = time.Minute, time.Minute, -1
		})
		l.wg.Go(func() { l.run(ctx, rdb, w, schemes) })
	}
	return l
}

func (l *smallLoad) run(ctx context.Context, rdb *redis.ClusterClient, w int, schemes []string) {
	rng := rand.New(rand.NewPCG(uint64(w), 99))
	for ctx.Err() == nil {
		sch := schemes[rng.IntN(len(schemes))]
		key := fmt.Sprintf("small:%s:%d", sch, rng.IntN(500))
		start := time.Now()
		var err error
		if rng.IntN(2) == 0 {
			err = rdb.Do(ctx, "SET", key, fmt.Sprintf("value %d", rng.Int()), "SCHEME", sch).Err()
		} else if err = rdb.Get(ctx, key).Err(); err == redis.Nil {
			err = nil
		}
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		l.lat = append(l.lat, time.Since(start))
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("%s: %w", key, err))
		}
		l.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// stop ends the load and returns its count of operations, its errors and
// its p99 latency.
func (l *smallLoad) stop() (int, []error, time.Duration) {
	l.cancel()
	l.wg.Wait()
	slices.Sort(l.lat)
	if len(l.lat) == 0 {
		return 0, l.errs, 0
	}
	return len(l.lat), l.errs, l.lat[len(l.lat)*99/100]
}
