package simcluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/cluster"
	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server"
)

// A migration moves the end of a shard's slot range to a new shard
// coordinated by a promoted spare (decision 0016): keys of every scheme
// read back bit-exact with their TTL and scheme, reads during the move
// never miss a key, writes during it are kept, and the slots end up
// routed to the new node.
func TestMigrationMovesSlotsOfEveryScheme(t *testing.T) {
	// The sweep audits pieces every 10 milliseconds, so that one that
	// judged the importer's pieces by the source's keys would drop them
	// during the move (found once: a split key read LOST).
	const failureTimeout = 250 * time.Millisecond
	c := simcluster.Start(t, 29, simcluster.Options{Nodes: 6, Spares: 1, FailureTimeout: failureTimeout,
		Configure: func(_ int, cfg *server.Config) { cfg.SweepInterval = 10 * time.Millisecond }})
	started := time.Now()
	spare := c.Len() - 1
	newID := c.Node(spare).NodeID
	propose(t, c, cluster.Promote{ID: newID})
	m := c.Node(0).Map()
	src := m.Shards[0]
	first := src.Last - 1199
	schemes := []string{"none", "rep:3", "split:4+2", "stripe:4+2"}
	want := map[string]string{}
	var keys []string
	for i := 0; len(keys) < 240; i++ {
		k := fmt.Sprintf("mig:%d", i)
		if s := keyslot.Of([]byte(k)); s < src.First || s > src.Last {
			continue
		}
		v := fmt.Sprintf("value-%d-%0*d", i, i%300, i)
		spec := schemes[len(keys)%len(schemes)]
		args := []string{"SET", k, v, "SCHEME", spec}
		if len(keys)%5 == 0 {
			args = append(args, "EX", "3600")
		}
		expect(t, "SET "+k, c.Do(c.AnyLive(), args...), "+OK")
		want[k] = v
		keys = append(keys, k)
	}

	// Readers and a writer run through the whole migration, each through
	// every node in turn (the cluster's random source is not theirs).
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, redirects atomic.Int64
	errs := make(chan string, 8)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r; !stop.Load(); i++ {
				k := keys[i%len(keys)]
				if k == keys[0] {
					continue // the writer's key
				}
				got := c.DoQuiet(i%c.Len(), "GET", k).Text()
				if strings.HasPrefix(got, "MOVED ") || strings.HasPrefix(got, "TRYAGAIN ") {
					redirects.Add(1) // maps in flux: a client follows or retries
					continue
				}
				if got != want[k] {
					select {
					case errs <- fmt.Sprintf("GET %s during the migration = %s", k, got):
					default:
					}
					return
				}
				reads.Add(1)
			}
		}()
	}
	var last atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(1); !stop.Load(); i++ {
			if r := c.DoQuiet(int(i)%c.Len(), "SET", keys[0], fmt.Sprint(i)).Text(); r == "OK" {
				last.Store(i)
			}
		}
	}()

	// A node's sweep starts judging pieces two failure timeouts after it
	// started (repair.AuditVerdicts).
	time.Sleep(time.Until(started.Add(2*failureTimeout + 50*time.Millisecond)))
	// The new placement puts the source's other nodes in the opposite
	// order, so every parity holder of a stripe list sits at another
	// position in it than in the source's.
	place := []cluster.NodeID{newID}
	for i := len(src.Placement) - 1; i >= 1; i-- {
		place = append(place, src.Placement[i])
	}
	propose(t, c, cluster.Migrate{From: 0, First: first, Last: src.Last, Placement: place})
	c.WaitMap("the migration done", func(m *cluster.Map) bool {
		return len(m.Shards) == 7 && !m.Shards[6].Importing && m.Shards[0].Last == first-1
	})
	stop.Store(true)
	wg.Wait()
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
	t.Logf("%d reads during the migration, %d redirected", reads.Load(), redirects.Load())
	want[keys[0]] = fmt.Sprint(last.Load()) // the last acknowledged write of it
	if last.Load() == 0 {
		t.Fatal("no write during the migration was acknowledged")
	}

	moved := 0
	for i, k := range keys {
		got := c.Do(c.AnyLive(), "GET", k).Text()
		if got != want[k] {
			t.Errorf("GET %s = %q, want %q", k, got, want[k])
		}
		if s := keyslot.Of([]byte(k)); s >= first {
			moved++
			// Every piece the importer placed agrees with the key,
			// parity at the positions its holders think they hold.
			if r := c.Do(c.AnyLive(), "SCHEME.VERIFY", k); r.IsError() || simcluster.Fields(r)["unavailable"].Int() != 0 {
				t.Errorf("SCHEME.VERIFY %s after the move: %s", k, simcluster.Render(r))
			}
			if c.Coordinator(k) != spare {
				t.Errorf("%s (slot %d) is coordinated by node %d, not the new one", k, s, c.Coordinator(k))
			}
		}
		if i > 0 {
			if spec := specOf(t, c, k); spec != schemes[i%len(schemes)] {
				t.Errorf("%s has scheme %s, want %s", k, spec, schemes[i%len(schemes)])
			}
		}
		if i%5 == 0 && i > 0 {
			if ttl := simcluster.Render(c.Do(c.AnyLive(), "TTL", k)); ttl == "-1" || ttl == "-2" {
				t.Errorf("TTL %s = %s after the move", k, ttl)
			}
		}
	}
	if moved == 0 {
		t.Fatal("no key was in the migrated slots")
	}
	t.Logf("%d of %d keys moved", moved, len(keys))
}

// propose commits cmd through node 0 and waits for every live node to
// have the map that results.
func propose(t *testing.T, c *simcluster.Cluster, cmd cluster.Command) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Node(c.AnyLiveFirst()).Propose(ctx, cmd)
	if err != nil {
		t.Fatalf("propose %T: %v", cmd, err)
	}
	c.WaitMap(fmt.Sprintf("%T applied", cmd), func(n *cluster.Map) bool { return n.Epoch >= m.Epoch })
}
