package tests

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// TestStripeAgainstModel runs random SET (plain, NX, XX), GET, APPEND,
// INCR, DEL and SCHEME.MOVE sequences over stripe:2+1, 3+1, 4+2 and 3+2,
// hybrid:2+2 and 4+2 (and rep:3, to move to and from) with chunks of 256 B
// and 4 KiB, each client on keys of its own, and checks every reply
// against the model of one key; then every key is read back through
// another node.
func TestStripeAgainstModel(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{extra: []string{"--enable-debug-command"}})
	ctx := ctxT(t)
	for _, size := range []int{256, 4096} {
		t.Run(fmt.Sprintf("%dB", size), func(t *testing.T) {
			var schemes []string
			for _, km := range []string{"2+1", "3+1", "4+2", "3+2"} {
				schemes = append(schemes, fmt.Sprintf("stripe:%s/%d", km, size))
			}
			for _, km := range []string{"2+2", "4+2"} {
				schemes = append(schemes, fmt.Sprintf("hybrid:%s/%d", km, size))
			}
			schemes = append(schemes, "rep:3")
			const clients, keysEach, ops = 6, 8, 250
			states := make([]map[string]kvState, clients)
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for id := 0; id < clients; id++ {
				wg.Add(1)
				go func(id int) {
					defer wg.Done()
					rdb := c.plainClient(id%len(c.nodes), 2)
					rng := rand.New(rand.NewSource(int64(size + id)))
					var keys []string
					for k := 0; k < keysEach; k++ {
						keys = append(keys, fmt.Sprintf("stripe:%d:%d:%d", size, id, k))
					}
					state := map[string]kvState{}
					for i := 0; i < ops; i++ {
						in := randomInput(rng, keys, schemes, id, i)
						out, err := runInput(ctx, rdb, in)
						if err != nil {
							errs <- fmt.Errorf("%+v: %v", in, err)
							return
						}
						ok, next := kvModel.Step(state[in.key], in, out)
						if !ok {
							errs <- fmt.Errorf("%+v answered %+v; the model has %+v", in, out, state[in.key])
							return
						}
						state[in.key] = next.(kvState)
					}
					states[id] = state
				}(id)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			reader := c.plainClient(len(c.nodes)-1, 2)
			checked := 0
			for _, state := range states {
				for key, want := range state {
					out, err := runInput(ctx, reader, kvInput{key: key, op: "get"})
					if err != nil || out.exists != want.exists || out.value != want.value {
						t.Fatalf("GET %s = %+v, %v; the model has %+v", key, out, err, want)
					}
					checked++
					if want.exists {
						if err := reader.Do(ctx, "SCHEME.VERIFY", key).Err(); err != nil {
							t.Fatalf("SCHEME.VERIFY %s: %v", key, err)
						}
					}
				}
			}
			// Fill chunks until they seal, then delete and overwrite in them:
			// updates to sealed chunks go to parity as deltas.
			for _, sch := range schemes[:4] {
				for i := 0; i < 300; i++ {
					must(t, reader.Do(ctx, "SET", fmt.Sprintf("fill:%s:%d", sch, i), strings.Repeat("x", i%50), "SCHEME", sch).Err())
				}
				for i := 0; i < 300; i += 2 {
					must(t, reader.Do(ctx, "DEL", fmt.Sprintf("fill:%s:%d", sch, i)).Err())
					must(t, reader.Do(ctx, "SET", fmt.Sprintf("fill:%s:%d", sch, i+1), "y").Err())
				}
			}
			// APPEND grows a key past a chunk: it is stored in fragments.
			for _, sch := range schemes[:4] {
				k, want := "grow:"+sch, ""
				for i := 0; len(want) < 3*size; i++ {
					piece := fmt.Sprintf("<%d:%s>", i, strings.Repeat("g", i%90))
					if i == 0 {
						must(t, reader.Do(ctx, "SET", k, piece, "SCHEME", sch).Err())
					} else if n, err := reader.Append(ctx, k, piece).Result(); err != nil || int(n) != len(want)+len(piece) {
						t.Fatalf("APPEND %s: %d, %v; want length %d", k, n, err, len(want)+len(piece))
					}
					want += piece
				}
				if got, err := reader.Get(ctx, k).Result(); err != nil || got != want {
					t.Fatalf("GET %s: %d bytes, %v; want %d", k, len(got), err, len(want))
				}
				must(t, reader.Do(ctx, "SCHEME.VERIFY", k).Err())
			}
			checkStripeKeyspace(t, c, schemes[0])
			for i := range c.nodes {
				res, err := c.plainClient(i, 2).Do(ctx, "DEBUG", "STRIPES").Slice()
				if err != nil || len(res) != 2 || res[0].(int64) == 0 {
					t.Fatalf("DEBUG STRIPES on node %d: %v, %v (want chunks checked and no problem)", i, res, err)
				}
			}
			k := fmt.Sprintf("stripe:%d:of", size)
			must(t, reader.Do(ctx, "SET", k, "v", "SCHEME", schemes[2]).Err())
			want := strings.TrimSuffix(schemes[2], "/4096") // the default chunk size is not spelled
			if of, err := reader.Do(ctx, "SCHEME.OF", k).Result(); err != nil || !strings.Contains(fmt.Sprint(of), "spec "+want+" ") {
				t.Fatalf("SCHEME.OF %s = %v, %v; want %s", k, of, err, want)
			}
			t.Logf("%d operations checked against the model, %d keys read back and verified", clients*ops, checked)
		})
	}
}

// checkStripeKeyspace checks, after the fill phase of TestStripeAgainstModel,
// that SCAN ... CLUSTER lists exactly the surviving keys of scheme sch (the
// odd ones) and that SCHEME.INFO accounts for them.
func checkStripeKeyspace(t *testing.T, c *testCluster, sch string) {
	t.Helper()
	ctx := ctxT(t)
	rdb := c.plainClient(0, 2)
	want := map[string]bool{}
	for i := 1; i < 300; i += 2 {
		want[fmt.Sprintf("fill:%s:%d", sch, i)] = true
	}
	got := map[string]bool{}
	for cursor := "0"; ; {
		res, err := rdb.Do(ctx, "SCAN", cursor, "MATCH", "fill:"+sch+":*", "COUNT", 50, "CLUSTER").Slice()
		must(t, err)
		for _, k := range res[1].([]any) {
			got[k.(string)] = true
		}
		if cursor = res[0].(string); cursor == "0" {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("SCAN listed %d keys of %s, want %d", len(got), sch, len(want))
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("SCAN missed %s", k)
		}
	}
	fields := schemeInfo(t, rdb, sch)
	info := fields
	for _, f := range []string{"keys", "logical_bytes", "data_chunk_bytes", "index_bytes", "object_bytes"} {
		if n, ok := fields[f].(int64); !ok || n <= 0 {
			t.Fatalf("SCHEME.INFO %s: %s = %v, want > 0 (%v)", sch, f, fields[f], info)
		}
	}
	// Open chunks are buffered on the parity holders, sealed ones in parity.
	if p, b := fields["parity_bytes"].(int64), fields["buffered_bytes"].(int64); p+b <= 0 {
		t.Fatalf("SCHEME.INFO %s has no redundancy bytes: %v", sch, info)
	}
	if fields["keys"].(int64) < int64(len(want)) {
		t.Fatalf("SCHEME.INFO %s counts %d keys, at least %d exist", sch, fields["keys"], len(want))
	}
}

// schemeInfo returns the fields of SCHEME.INFO name.
func schemeInfo(t *testing.T, rdb *redis.Client, name string) map[string]any {
	t.Helper()
	info, err := rdb.Do(ctxT(t), "SCHEME.INFO", name).Result()
	must(t, err)
	return replyMap(info)
}

// infoFloat reads a SCHEME.INFO field given as a decimal string.
func infoFloat(t *testing.T, fields map[string]any, name string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(fmt.Sprint(fields[name]), 64)
	if err != nil {
		t.Fatalf("SCHEME.INFO %s = %v: %v", name, fields[name], err)
	}
	return f
}

// TestStripeCompactionUnderChurn loads stripe keys, then churns them: four
// rounds each overwrite a random half of the keys with values of other
// sizes, some with a TTL, and the last deletes some, which leaves garbage
// spread over the chunks. Compaction must bring the scheme's stored bytes back
// within 10% of MemEC's formula for the objects left, keep every key as
// last written (TTLs too), and leave every stripe matching its parity (and
// for hybrid:4+2 every replica copy matching its chunk).
func TestStripeCompactionUnderChurn(t *testing.T) {
	for _, sch := range []string{"stripe:4+2/512", "hybrid:4+2/512"} {
		t.Run(strings.ReplaceAll(sch, "/", "_"), func(t *testing.T) { compactionUnderChurn(t, sch) })
	}
}

func compactionUnderChurn(t *testing.T, sch string) {
	c := startCluster(t, 6, clusterOptions{extra: []string{"--enable-debug-command", "--compact-rate", "1048576", "--compact-share", "0.5"}})
	ctx := ctxT(t)
	const keys = 20000
	plain := c.plainClient(0, 2)
	must(t, plain.Do(ctx, "SCHEME.DEFAULT", sch).Err())
	c.waitDefault(sch)
	rdb := c.clusterClient()
	rng := rand.New(rand.NewSource(6))
	want := make([]string, keys) // "" once deleted
	withTTL := make([]bool, keys)
	for round := 0; round <= 4; round++ {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range keys {
				k := fmt.Sprintf("churn:%d", i)
				switch {
				case round > 0 && rng.Intn(2) == 0:
					// Half the keys each round, at random: the garbage is
					// spread over the chunks rather than emptying them.
				case round == 4 && i%8 == 0:
					p.Del(ctx, k)
					want[i] = ""
				case round == 4 && i%10 == 1:
					want[i] = fmt.Sprintf("%d:%d:%s", i, round, strings.Repeat("t", rng.Intn(25)))
					p.Set(ctx, k, want[i], time.Hour)
					withTTL[i] = true
				default:
					want[i] = fmt.Sprintf("%d:%d:%s", i, round, strings.Repeat("v", rng.Intn(25)))
					p.Set(ctx, k, want[i], 0)
					withTTL[i] = false
				}
			}
			return nil
		})
		must(t, err)
	}
	churned := schemeInfo(t, plain, sch)
	t.Logf("after the churn: overhead %v (formula %v), %v garbage bytes in %v of data chunks",
		churned["overhead"], churned["memec_overhead"], churned["garbage_bytes"], churned["data_chunk_bytes"])
	deadline := time.Now().Add(90 * time.Second)
	for {
		f := schemeInfo(t, plain, sch)
		over, formula := infoFloat(t, f, "overhead"), infoFloat(t, f, "memec_overhead")
		if over <= 1.1*formula {
			t.Logf("after compaction: overhead %.3f, formula %.3f, %v garbage bytes in %v of data chunks",
				over, formula, f["garbage_bytes"], f["data_chunk_bytes"])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("overhead still %.3f against the formula's %.3f: %v", over, formula, f)
		}
		time.Sleep(250 * time.Millisecond)
	}
	var relocated int64
	for i := range c.nodes {
		relocated += c.infoField(i, "memgest_stripe_relocated_objects")
	}
	if relocated == 0 {
		t.Fatal("no object was relocated")
	}
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range keys {
			p.Get(ctx, fmt.Sprintf("churn:%d", i))
			p.TTL(ctx, fmt.Sprintf("churn:%d", i))
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	for i := range keys {
		got, err := cmds[2*i].(*redis.StringCmd).Result()
		ttl := cmds[2*i+1].(*redis.DurationCmd).Val()
		switch {
		case want[i] == "" && err != redis.Nil:
			t.Fatalf("churn:%d was deleted; GET = %q, %v", i, got, err)
		case want[i] != "" && (err != nil || got != want[i]):
			t.Fatalf("churn:%d = %q, %v; want %q", i, got, err, want[i])
		case want[i] != "" && withTTL[i] && (ttl <= 0 || ttl > time.Hour):
			t.Fatalf("churn:%d lost its TTL: %v", i, ttl)
		case want[i] != "" && !withTTL[i] && ttl != -1:
			t.Fatalf("churn:%d has a TTL it was not given: %v", i, ttl)
		}
	}
	for i := range c.nodes {
		res, err := c.plainClient(i, 2).Do(ctx, "DEBUG", "STRIPES").Slice()
		if err != nil || len(res) != 2 || res[1].(int64) != 0 {
			t.Fatalf("DEBUG STRIPES on node %d: %v, %v", i, res, err)
		}
	}
	t.Logf("%d objects relocated", relocated)
}

// TestStripeKeysExpire: stripe keys with a TTL read as gone once it
// passes, and the active expiry deletes them from their chunks without
// being asked.
func TestStripeKeysExpire(t *testing.T) {
	c := startCluster(t, 3, clusterOptions{})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	plain := c.plainClient(0, 2)
	const sch = "stripe:2+1/1024"
	// Long enough that a loaded CI machine counts the keys before any
	// expires (300 ms was not: 586 of 600 were left once).
	const ttl = 2 * time.Second
	written := time.Now()
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 300 {
			p.Do(ctx, "SET", fmt.Sprintf("ttl:%d", i), "v", "PX", ttl.Milliseconds(), "SCHEME", sch)
			p.Do(ctx, "SET", fmt.Sprintf("keep:%d", i), "v", "SCHEME", sch)
		}
		return nil
	})
	must(t, err)
	n := schemeInfo(t, plain, sch)["keys"].(int64)
	if counted := time.Since(written); counted >= ttl {
		t.Fatalf("writing and counting the keys took %v, past their TTL", counted)
	}
	if n != 600 {
		t.Fatalf("%d keys in %s, want 600", n, sch)
	}
	time.Sleep(time.Until(written.Add(ttl + 50*time.Millisecond)))
	if err := rdb.Get(ctx, "ttl:7").Err(); err != redis.Nil {
		t.Fatalf("GET of an expired stripe key: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := schemeInfo(t, plain, sch)["keys"].(int64)
		if n == 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d keys left in %s after their TTL; want the 300 without one", n, sch)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var expired int64
	for i := range c.nodes {
		expired += c.infoField(i, "expired_keys")
	}
	if expired != 300 {
		t.Fatalf("expired_keys totals %d, want 300", expired)
	}
}

// TestStripeSurvivesMFailures writes stripe keys in every shape of issue
// 6, overwrites and deletes some (so that sealed chunks take deltas), and
// kills M data nodes, non-voters where there are enough (M = 2 calls for
// five voters, which survive two failures): every key must read back as last
// written once recovery has decoded the dead coordinators' chunks, the
// survivors' stripes must agree with their parity, and once M spares have
// taken the dead nodes' places and the rebuild has dropped their chunks
// from parity and resynced the spares, every stripe is checkable again.
// Where enough nodes are left, M more nodes are then killed (stand-ins
// take their places this time): no key may be lost.
func TestStripeSurvivesMFailures(t *testing.T) {
	for _, shape := range []struct {
		spec string
		m    int
	}{{"stripe:2+1/256", 1}, {"stripe:3+1/256", 1}, {"stripe:4+2/256", 2}, {"stripe:3+2/4096", 2}, {"hybrid:3+2/256", 2}} {
		t.Run(strings.ReplaceAll(shape.spec, "/", "_"), func(t *testing.T) {
			c := startCluster(t, 6, clusterOptions{spares: shape.m, extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms", "--enable-debug-command"}})
			ctx := ctxT(t)
			rdb := c.plainClient(0, 2)
			want := map[string]string{}
			for i := 0; i < 400; i++ {
				k, v := fmt.Sprintf("s:%d", i), strings.Repeat(string(rune('a'+i%26)), 1+i%40)
				if i%40 == 7 {
					v = strings.Repeat(v, 1+3000/len(v)) // larger than a chunk: fragments
				}
				must(t, rdb.Do(ctx, "SET", k, v, "SCHEME", shape.spec).Err())
				want[k] = v
			}
			for i := 0; i < 399; i += 3 {
				k := fmt.Sprintf("s:%d", i)
				must(t, rdb.Del(ctx, k).Err())
				delete(want, k)
				k = fmt.Sprintf("s:%d", i+1) // keeps its scheme
				must(t, rdb.Set(ctx, k, "new", 0).Err())
				want[k] = "new"
			}
			victims := c.preferNonVoters(shape.m) // data nodes, not a spare: it holds no place yet
			alive := slices.IndexFunc(c.nodes, func(nd *node) bool {
				return !slices.ContainsFunc(victims, func(v int) bool { return c.nodes[v] == nd })
			})
			for _, v := range victims {
				must(t, c.nodes[v].cmd.Process.Kill())
			}
			for _, v := range victims {
				c.waitFailed(alive, v, 15*time.Second)
			}
			took := waitRecovered(t, c.plainClient(alive, 2), want)
			for i := 0; i < 399; i += 3 {
				if n, err := c.plainClient(alive, 2).Exists(ctx, fmt.Sprintf("s:%d", i)).Result(); err != nil || n != 0 {
					t.Fatalf("deleted key s:%d came back: %d, %v", i, n, err)
				}
			}
			rebuilt := c.waitRebuilt(alive, 20*time.Second)
			checkStripes(t, c, victims, true)
			t.Logf("%d keys read back %s after %d nodes were marked failed; rebuilt %s later", len(want), took, shape.m, rebuilt)
			_, spec, _ := strings.Cut(shape.spec, ":")
			spec, _, _ = strings.Cut(spec, "/")
			var k, m int
			fmt.Sscanf(spec, "%d+%d", &k, &m)
			if len(c.nodes)-2*shape.m < k+m || len(c.nonVoters()) < 2*shape.m {
				return // too few nodes left to place the scheme after a second round
			}
			// The rebuild restored the tolerance: M more failures lose nothing.
			var second []int
			for _, v := range c.nonVoters() {
				if !slices.Contains(victims, v) && len(second) < shape.m {
					second = append(second, v)
				}
			}
			for _, v := range second {
				must(t, c.nodes[v].cmd.Process.Kill())
			}
			for _, v := range second {
				c.waitFailed(alive, v, 15*time.Second)
			}
			took = waitRecovered(t, c.plainClient(alive, 2), want)
			c.waitRebuilt(alive, 20*time.Second)
			checkStripes(t, c, append(victims, second...), true)
			t.Logf("after %d more failures all keys read back %s after they were marked failed", shape.m, took)
		})
	}
}

// checkStripes runs DEBUG STRIPES on every node but the dead ones: no
// chunk may disagree with its stripe, and once rebuilt none may be left
// unverifiable.
func checkStripes(t *testing.T, c *testCluster, dead []int, rebuilt bool) {
	t.Helper()
	ctx := ctxT(t)
	for i := range c.nodes {
		if slices.Contains(dead, i) {
			continue
		}
		res, err := c.plainClient(i, 2).Do(ctx, "DEBUG", "STRIPES").Slice()
		if err != nil || len(res) != 2 || rebuilt && res[1].(int64) != 0 {
			t.Fatalf("DEBUG STRIPES on node %d: %v, %v (checked, unavailable, problems)", i, res, err)
		}
	}
}

// TestStripeCrashBetweenParityHolders crashes a coordinator in the middle
// of sending chunk updates, after the first parity holder of the chunk's
// list applied them and before the second received them (failpoint
// stripe.between-holders): on the seal of a chunk, on the removal of an
// object from a sealed chunk, and on an in-place update of one (a value
// of the same size). The two holders are left at
// different seqs of the chunk. A second node, a data position of the same
// list, is killed at once, so that the chunk can only be decoded with both
// parities (M = 2 failures in all). Every acknowledged key must read back
// as written, the one write in flight either way, and after the rebuild
// every stripe must match its parity.
func TestStripeCrashBetweenParityHolders(t *testing.T) {
	for _, mid := range []string{"seal", "update", "inplace"} {
		t.Run(mid, func(t *testing.T) {
			c := startCluster(t, 6, clusterOptions{spares: 2, extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms",
				"--enable-debug-command", "--compact-rate", "0"}})
			ctx := ctxT(t)
			const sch = "stripe:4+2/256"
			rdb := c.clusterClient()
			candidates := slices.DeleteFunc(c.nonVoters(), func(i int) bool { return i >= 6 }) // not a spare
			x := candidates[0]
			want := map[string]string{}
			var onX []string
			for i := 0; i < 400; i++ {
				k, v := fmt.Sprintf("mid:%d", i), strings.Repeat(string(rune('a'+i%26)), 8+i%33)
				must(t, rdb.Do(ctx, "SET", k, v, "SCHEME", sch).Err())
				want[k] = v
				if cl, err := rdb.MasterForKey(ctx, k); err == nil && cl.Options().Addr == c.nodes[x].addr() {
					onX = append(onX, k)
				}
			}
			// The key whose chunk the crash leaves half-updated, a sealed one
			// of a list where another non-voter holds a data position.
			key, y := "", -1
			for _, k := range onX {
				f, err := rdb.Do(ctx, "SCHEME.VERIFY", k).Result()
				must(t, err)
				m := replyMap(f)
				var list, pos, num int
				if n, err := fmt.Sscanf(fmt.Sprint(m["chunk"]), "%d/%d/%d", &list, &pos, &num); n != 3 || err != nil || pos > 3 {
					t.Fatalf("SCHEME.VERIFY %s names chunk %q", k, m["chunk"])
				}
				nodes := m["stripe_nodes"].([]any)
				if m["sealed"].(int64) != 1 || len(nodes) != 6 {
					continue
				}
				for _, cand := range candidates[1:] {
					if slices.Contains(nodes[:4], any(c.nodes[cand].addr())) {
						key, y = k, cand
					}
				}
				if key != "" {
					break
				}
			}
			if key == "" {
				t.Fatalf("no sealed chunk of node %d shares a list with another non-voter as a data position", x)
			}
			admin := c.plainClient(x, 2)
			must(t, admin.Do(ctx, "DEBUG", "FAILPOINT", "stripe.between-holders", "crash").Err())
			inFlight, before := key, want[key]
			after := ""
			if mid == "seal" {
				// No open chunk has room for an object this large: a chunk
				// opens and the fullest open one is sealed, in one frame.
				inFlight = c.keyOn(t, rdb, x, "mid:big:")
				before, after = "", strings.Repeat("z", 190)
				err := admin.Do(ctx, "SET", inFlight, after, "SCHEME", sch).Err()
				if err == nil {
					t.Fatal("the SET that seals a chunk was acknowledged; the failpoint should have crashed its coordinator")
				}
			} else if mid == "inplace" {
				after = strings.Repeat("#", len(before))
				if err := admin.Set(ctx, key, after, 0).Err(); err == nil {
					t.Fatal("the SET was acknowledged; the failpoint should have crashed its coordinator")
				}
			} else if err := admin.Del(ctx, key).Err(); err == nil {
				t.Fatal("the DEL was acknowledged; the failpoint should have crashed its coordinator")
			}
			<-c.nodes[x].done
			must(t, c.nodes[y].cmd.Process.Kill())
			delete(want, inFlight)
			alive := slices.IndexFunc(c.nodes, func(nd *node) bool { return nd != c.nodes[x] && nd != c.nodes[y] })
			c.waitFailed(alive, x, 15*time.Second)
			c.waitFailed(alive, y, 15*time.Second)
			reader := c.plainClient(alive, 2)
			took := waitRecovered(t, reader, want)
			got, err := reader.Get(ctx, inFlight).Result()
			absentOK := before == "" || mid == "update" // absent before the SET, or deleted
			if !(err == redis.Nil && absentOK || err == nil && (got == before || got == after && after != "")) {
				t.Fatalf("the key written when its coordinator crashed reads %q, %v; want %q or %q", got, err, before, after)
			}
			c.waitRebuilt(alive, 30*time.Second)
			checkStripes(t, c, []int{x, y}, true)
			t.Logf("crash mid-%s on node %d (%s), node %d killed: %d keys read back %s after the failure marks", mid, x, key, y, len(want), took)
		})
	}
}

// replyMap turns a RESP2 map reply (a flat array) into a map.
func replyMap(r any) map[string]any {
	out := map[string]any{}
	switch v := r.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[fmt.Sprint(v[i])] = v[i+1]
		}
	case map[any]any:
		for k, x := range v {
			out[fmt.Sprint(k)] = x
		}
	}
	return out
}

// TestStripeRecoveryIsMetadataFirst: a failed coordinator's shards are
// served once their keys are known, before the chunks holding them are
// decoded (Ring §5.5). The background pass that decodes the rest is held
// back (failpoint stripe.before-restore), so commands reach keys whose
// chunks are still pending: each must first restore the key's chunk, a
// write must win over the restored version, and a key deleted then must
// stay deleted once the background pass has run. The rebuild waits for
// the pass, and every stripe matches its parity after it.
func TestStripeRecoveryIsMetadataFirst(t *testing.T) {
	const spec, keys = "stripe:2+1/256", 1500
	c := startCluster(t, 6, clusterOptions{spares: 1, extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms", "--enable-debug-command"}})
	ctx := ctxT(t)
	rdb := c.plainClient(0, 2)
	want := map[string]string{}
	for i := 0; i < keys; i++ {
		k, v := fmt.Sprintf("m:%d", i), fmt.Sprintf("value-%d", i)
		must(t, rdb.Do(ctx, "SET", k, v, "SCHEME", spec).Err())
		want[k] = v
	}
	for i := 0; i < keys; i += 5 {
		k := fmt.Sprintf("m:%d", i)
		must(t, rdb.Del(ctx, k).Err())
		delete(want, k)
	}
	for i := 1; i < keys; i += 7 { // another size: relocated, the old version left as garbage
		k := fmt.Sprintf("m:%d", i)
		must(t, rdb.Do(ctx, "SET", k, "relocated-"+k, "SCHEME", spec).Err())
		want[k] = "relocated-" + k
	}
	for i := range c.nodes {
		must(t, c.plainClient(i, 2).Do(ctx, "DEBUG", "FAILPOINT", "stripe.before-restore", "sleep:6s").Err())
	}
	victim := c.nonVoters()[0]
	alive := slices.IndexFunc(c.nodes, func(nd *node) bool { return nd != c.nodes[victim] })
	must(t, c.nodes[victim].cmd.Process.Kill())
	c.waitFailed(alive, victim, 15*time.Second)
	pendingSeen := int64(0)
	for deadline := time.Now().Add(10 * time.Second); pendingSeen == 0; {
		if c.infoField(alive, "shards_recovering") == 0 {
			for i := range c.nodes {
				if i != victim {
					pendingSeen += c.infoField(i, "stripe_chunks_pending")
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no recovered shard was served with stripe chunks pending")
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := c.plainClient(alive, 2)
	var gone []string
	for i := 2; i < keys; i += 11 { // while their chunks are pending
		k := fmt.Sprintf("m:%d", i)
		if i%2 == 0 {
			must(t, client.Del(ctx, k).Err())
			delete(want, k)
			gone = append(gone, k)
		} else {
			must(t, client.Do(ctx, "SET", k, "rewritten", "SCHEME", spec).Err())
			want[k] = "rewritten"
		}
	}
	took := waitRecovered(t, client, want)
	restored := int64(0)
	for i := range c.nodes {
		if i != victim {
			restored += c.infoField(i, "stripe_chunks_restored")
		}
	}
	if restored == 0 {
		t.Fatal("commands on pending keys restored no chunk")
	}
	var families []map[string]*dto.MetricFamily
	for i := range c.nodes {
		if i != victim {
			families = append(families, scrape(t, c.nodes[i].httpPort))
		}
	}
	if n := sumMetric(families, "memgest_degraded_requests_total", map[string]string{"kind": "stripe_restored"}); n == 0 {
		t.Fatal("/metrics counts no command that restored stripe chunks first")
	}
	t.Logf("%d chunks pending when the shards were served; commands restored %d; every key read back %s later", pendingSeen, restored, took)
	c.waitRebuilt(alive, 30*time.Second)
	if n := c.infoField(alive, "shards_stripes_pending"); n != 0 {
		t.Fatalf("rebuilt with %d shards' stripe keys still pending", n)
	}
	waitRecovered(t, client, want)
	for _, k := range gone {
		if n, err := client.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Fatalf("%s, deleted while its chunk was pending, came back: %d, %v", k, n, err)
		}
	}
	for i := 0; i < keys; i += 5 {
		if _, written := want[fmt.Sprintf("m:%d", i)]; written {
			continue // written again since
		}
		if n, err := client.Exists(ctx, fmt.Sprintf("m:%d", i)).Result(); err != nil || n != 0 {
			t.Fatalf("m:%d, deleted before the failure, came back: %d, %v", i, n, err)
		}
	}
	if n, err := client.Do(ctx, "DBSIZE", "CLUSTER").Int64(); err != nil || n != int64(len(want)) {
		t.Fatalf("DBSIZE %d, %v; want %d", n, err, len(want))
	}
	checkStripes(t, c, []int{victim}, true)
}

// TestStripeStandInsKeepTolerance fails three nodes one after the other,
// without spares, each once the last is rebuilt, so that stripe:2+1 (one
// failure tolerated) is always within its tolerance. In one list the
// parity position fails first and a survivor stands in; then that
// stand-in fails, and the position passes to another survivor, which the
// rebuild must resync; then a data node of the list fails, and its
// chunks are decoded with that parity. Stand-ins used to be recomputed
// from scratch: the third failure moved the parity position back to a
// node without its parity, and the second never resynced anyone.
func TestStripeStandInsKeepTolerance(t *testing.T) {
	const spec = "stripe:2+1/256"
	c := startCluster(t, 6, clusterOptions{voters: 1, extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms", "--enable-debug-command"}})
	ctx := ctxT(t)
	// Shard v's placement is the join order rotated to the voter v: its
	// data positions are v and v+1, its parity position v+2, and v+3
	// stands in first. None of the victims is the voter.
	order := c.joinOrder()
	v := slices.Index(order, c.leader(0))
	victims := []int{order[(v+2)%6], order[(v+3)%6], order[(v+1)%6]}
	alive := order[v]
	rdb := c.plainClient(alive, 2)
	want := map[string]string{}
	write := func(round int) {
		for i := 0; i < 600; i++ {
			k, val := fmt.Sprintf("t:%d", i), fmt.Sprintf("round-%d-%d", round, i)
			if i%9 == 4 {
				must(t, rdb.Del(ctx, k).Err())
				delete(want, k)
				continue
			}
			must(t, rdb.Do(ctx, "SET", k, val, "SCHEME", spec).Err())
			want[k] = val
		}
	}
	write(0)
	for round, victim := range victims {
		must(t, c.nodes[victim].cmd.Process.Kill())
		c.waitFailed(alive, victim, 15*time.Second)
		took := waitRecovered(t, c.plainClient(alive, 2), want)
		rebuilt := c.waitRebuilt(alive, 30*time.Second)
		checkStripes(t, c, victims[:round+1], true)
		t.Logf("failure %d (node %d): keys read back %s after the mark, rebuilt %s later", round+1, victim, took, rebuilt)
		if round < len(victims)-1 {
			write(round + 1) // new chunks sealed with the new holders
		}
	}
}

// preferNonVoters picks n of the six data nodes to kill: those that are
// not Raft voters first, in index order, then voters.
func (c *testCluster) preferNonVoters(n int) []int {
	c.t.Helper()
	c.waitVotersGrown(0)
	voters := c.voterIndexes(0)
	var out []int
	for _, voting := range []bool{false, true} {
		for i := 0; i < 6 && len(out) < n; i++ {
			if slices.Contains(voters, i) == voting {
				out = append(out, i)
			}
		}
	}
	return out
}

// joinOrder lists the nodes' indexes in the map's order, which is the
// order placements rotate (cluster.Place).
func (c *testCluster) joinOrder() []int {
	c.t.Helper()
	st, err := c.status(0)
	must(c.t, err)
	var out []int
	for _, n := range st.Nodes {
		if i := c.byAddr(n.ClientAddr); i >= 0 {
			out = append(out, i)
		}
	}
	if len(out) != len(c.nodes) {
		c.t.Fatalf("status lists %d of %d nodes", len(out), len(c.nodes))
	}
	return out
}

// TestStripeBeyondToleranceReportsLostKeys kills a coordinator of
// stripe:4+2 keys together with two more data nodes of one of its lists:
// that list's sealed chunks cannot be decoded (3 of 6 positions lost).
// Stripe keys have no directory entries; the survivors' parity holders
// kept the chunks' manifests, so every key whose tag is in one answers
// -LOST "may have been lost" naming the scheme, and a key of a chunk no
// surviving manifest names answers so too (its slot range is reported);
// none answers nil; the others read back (an open chunk is copied on the
// parity holders). DEL clears a lost key, SET makes it readable, and
// memgest status counts the lost tags.
func TestStripeBeyondToleranceReportsLostKeys(t *testing.T) {
	const spec = "stripe:4+2/256"
	c := startCluster(t, 7, clusterOptions{voters: 1, extra: []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms"}})
	ctx := ctxT(t)
	rdb := c.clusterClient()
	// stripe:4+2 calls for five voters: the victim is a node without a
	// vote, so that the three nodes killed hold at most two of the five
	// and the control plane keeps its quorum (data beyond tolerance, the
	// control plane within it).
	must(t, rdb.Do(ctx, "SET", "grow-voters", "x", "SCHEME", spec).Err())
	c.waitVotersGrown(0)
	voter := c.leader(0)
	nonVoters := c.nonVoters()
	if len(nonVoters) == 0 {
		t.Fatal("every node of seven votes; stripe:4+2 calls for five")
	}
	victim := nonVoters[0]
	keys := map[string]string{}
	for j := 0; j < 120; j++ {
		k := c.keyOn(t, rdb, victim, fmt.Sprintf("b%d:", j))
		keys[k] = strings.Repeat(string(rune('a'+j%26)), 20+j%30)
		must(t, rdb.Do(ctx, "SET", k, keys[k], "SCHEME", spec).Err())
	}
	// Every node's chunks fill the same stripes: a stripe whose other
	// data chunks were never written decodes from zeros.
	pipe := rdb.Pipeline()
	for j := 0; j < 2000; j++ {
		pipe.Do(ctx, "SET", fmt.Sprintf("fill:%d", j), strings.Repeat("f", 40), "SCHEME", spec)
	}
	_, err := pipe.Exec(ctx)
	must(t, err)
	// Pick a list of the victim whose other data nodes are not the voter.
	list := map[string]string{} // key → its chunk's list
	var doomed []int
	var doomedList string
	for k := range keys {
		v, err := c.plainClient(voter, 2).Do(ctx, "SCHEME.VERIFY", k).Slice()
		must(t, err)
		var data []int
		for i := 0; i+1 < len(v); i += 2 {
			switch v[i] {
			case "chunk":
				list[k], _, _ = strings.Cut(v[i+1].(string), "/")
			case "stripe_nodes":
				for _, a := range v[i+1].([]any)[:4] {
					data = append(data, c.byAddr(a.(string)))
				}
			}
		}
		if doomed == nil && !slices.Contains(data, voter) && slices.Contains(data, victim) {
			doomed = append([]int{victim}, slices.DeleteFunc(data, func(i int) bool { return i == victim })[:2]...)
			doomedList = list[k]
		}
	}
	if doomed == nil {
		t.Fatal("no list of the victim has its other data nodes apart from the voter")
	}
	for _, d := range doomed {
		must(t, c.nodes[d].cmd.Process.Kill())
	}
	for _, d := range doomed {
		c.waitFailed(voter, d, 15*time.Second)
	}
	cl := c.plainClient(voter, 2)
	var lost []string
	for k, want := range keys {
		var got string
		var err error
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if got, err = cl.Get(ctx, k).Result(); err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
				break
			}
		}
		// Another list of the victim may have lost its parity holders
		// (killed at parity positions there) and its manifests with them:
		// its keys answer -LOST all the same, never nil.
		switch {
		case err == nil && got == want:
		case err != nil && strings.HasPrefix(err.Error(), "LOST") && strings.Contains(err.Error(), "may have been lost") && strings.Contains(err.Error(), spec):
			lost = append(lost, k)
		default:
			t.Fatalf("GET %s (list %s; list %s lost 3 data nodes) = %q, %v; want its value or -LOST naming %s", k, list[k], doomedList, got, err, spec)
		}
	}
	if len(lost) == 0 {
		t.Fatal("no key answered -LOST: were the chunks decoded after all?")
	}
	st, err := c.status(voter)
	must(t, err)
	if st.LostCount == 0 {
		t.Fatalf("%d keys answered -LOST, status counts none", len(lost))
	}
	if n, err := cl.Del(ctx, lost[0]).Result(); err != nil || n != 1 {
		t.Fatalf("DEL of lost %s = %d, %v", lost[0], n, err)
	}
	if err := cl.Get(ctx, lost[0]).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after DEL of lost %s = %v, want nil", lost[0], err)
	}
	if len(lost) > 1 {
		must(t, cl.Set(ctx, lost[1], "again", 0).Err())
		if got, err := cl.Get(ctx, lost[1]).Result(); err != nil || got != "again" {
			t.Fatalf("GET after SET of lost %s = %q, %v", lost[1], got, err)
		}
	}
	t.Logf("%d of %d keys answered -LOST after nodes %v failed; status lists %d lost entries", len(lost), len(keys), doomed, st.LostCount)
}
