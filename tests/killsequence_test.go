package tests

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgest/memgest/keyslot"
	"github.com/redis/go-redis/v9"
)

// This file is issue 4's "Done when" sequence: a 6-node cluster with one
// spare holds over ten thousand keys in none, rep:3 and split:4+2, every
// value checked by its SHA-256 after each step, while a reader checks
// rep:3 and split:4+2 keys throughout.
//
//  1. kill -9 a non-voter: the spare replaces it, the rebuild completes;
//  2. kill -9 a voter (no spare left): survivors stand in, the rebuild
//     completes;
//  3. kill -9 two more nodes at once, beyond split:4+2's tolerance: exactly
//     the keys with too few pieces left (and the `none` keys of every dead
//     coordinator) answer -LOST, every other key reads back its bytes.

// seqKey is one key of the sequence test and what it must read back.
type seqKey struct {
	name   string
	scheme string
	sum    [32]byte
	size   int
}

// seqValue is key's value: deterministic bytes of a size from 16 B to 2 KiB.
func seqValue(key string) []byte {
	r := rand.New(rand.NewPCG(uint64(len(key)), uint64(keyslot.Of([]byte(key)))*7919+1))
	v := make([]byte, 16+r.IntN(2033))
	for i := range v {
		v[i] = byte(r.UintN(256))
	}
	return append(v, key...)
}

// seqLoad writes perScheme keys in each scheme through pipelines.
func seqLoad(t *testing.T, rdb *redis.ClusterClient, perScheme int) []seqKey {
	ctx := ctxT(t)
	var keys []seqKey
	for _, sch := range []string{"none", "rep:3", "split:4+2"} {
		prefix := strings.NewReplacer(":", "", "+", "p").Replace(sch)
		for start := 0; start < perScheme; start += 500 {
			pipe := rdb.Pipeline()
			for i := start; i < min(start+500, perScheme); i++ {
				k := fmt.Sprintf("%s:%d", prefix, i)
				v := seqValue(k)
				pipe.Do(ctx, "SET", k, v, "SCHEME", sch)
				keys = append(keys, seqKey{name: k, scheme: sch, sum: sha256.Sum256(v), size: len(v)})
			}
			_, err := pipe.Exec(ctx)
			must(t, err)
		}
	}
	return keys
}

// seqOutcome is what a key read back.
type seqOutcome struct {
	ok, lost, missing, wrong bool
	err                      error
}

// seqCheck reads every key (through one node, pipelined) and classifies
// the answers; answers that say nothing ran are retried (nothingRan).
func seqCheck(t *testing.T, cl *redis.Client, keys []seqKey) map[string]seqOutcome {
	ctx := ctxT(t)
	out := make(map[string]seqOutcome, len(keys))
	pending := keys
	for deadline := time.Now().Add(30 * time.Second); len(pending) > 0; {
		var again []seqKey
		for start := 0; start < len(pending); start += 500 {
			batch := pending[start:min(start+500, len(pending))]
			pipe := cl.Pipeline()
			cmds := make([]*redis.StringCmd, len(batch))
			for i, k := range batch {
				cmds[i] = pipe.Get(ctx, k.name)
			}
			_, _ = pipe.Exec(ctx)
			for i, k := range batch {
				v, err := cmds[i].Bytes()
				switch {
				case err == nil:
					good := len(v) == k.size && sha256.Sum256(v) == k.sum
					out[k.name] = seqOutcome{ok: good, wrong: !good}
				case err == redis.Nil:
					out[k.name] = seqOutcome{missing: true}
				case strings.HasPrefix(err.Error(), "LOST"):
					out[k.name] = seqOutcome{lost: true, err: err}
				case nothingRan(err) && time.Now().Before(deadline):
					again = append(again, k)
				default:
					out[k.name] = seqOutcome{err: err}
				}
			}
		}
		pending = again
		if len(pending) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return out
}

// nothingRan says whether err is a refusal to try again: TRYAGAIN (a
// shard recovering, a read whose lease lapsed and was not renewed) or the
// CLUSTERDOWN of a coordinator whose lease lapsed, which a loaded machine
// can cause for a moment (failure-model.md, "Fencing").
func nothingRan(err error) bool {
	return strings.HasPrefix(err.Error(), "TRYAGAIN") || strings.Contains(err.Error(), "no fresh lease")
}

// seqExpect checks outcomes: keys in lost answer -LOST, every other key
// its exact bytes.
func seqExpect(t *testing.T, step string, keys []seqKey, got map[string]seqOutcome, lost map[string]bool) {
	t.Helper()
	bad := 0
	for _, k := range keys {
		o := got[k.name]
		want := "its value"
		if lost[k.name] {
			want = "-LOST"
		}
		if (lost[k.name] && !o.lost) || (!lost[k.name] && !o.ok) {
			if bad < 10 {
				t.Errorf("%s: %s key %s: ok=%v lost=%v missing=%v wrong=%v err=%v; want %s",
					step, k.scheme, k.name, o.ok, o.lost, o.missing, o.wrong, o.err, want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d keys read back wrong", step, bad, len(keys))
	}
	t.Logf("%s: %d keys checked, %d lost as expected", step, len(keys), len(lost))
}

// coordinators maps each slot to the client address of its coordinator.
func coordinators(t *testing.T, cl *redis.Client) map[int]string {
	slots, err := cl.ClusterSlots(ctxT(t)).Result()
	must(t, err)
	out := map[int]string{}
	for _, r := range slots {
		for s := int(r.Start); s <= int(r.End); s++ {
			out[s] = r.Nodes[0].Addr
		}
	}
	return out
}

// noneKeysOf returns the none keys whose coordinator is at addr.
func noneKeysOf(keys []seqKey, coord map[int]string, addrs ...string) map[string]bool {
	out := map[string]bool{}
	for _, k := range keys {
		if k.scheme == "none" && slices.Contains(addrs, coord[keyslot.Of([]byte(k.name))]) {
			out[k.name] = true
		}
	}
	return out
}

// splitHolders reads the client addresses of each split key's pieces from
// SCHEME.OF, ignoring failed nodes.
func splitHolders(t *testing.T, cl *redis.Client, keys []seqKey) map[string][]string {
	ctx := ctxT(t)
	out := map[string][]string{}
	var names []string
	var cmds []*redis.Cmd
	pipe := cl.Pipeline()
	for _, k := range keys {
		if k.scheme != "split:4+2" {
			continue
		}
		names, cmds = append(names, k.name), append(cmds, pipe.Do(ctx, "SCHEME.OF", k.name))
		if len(cmds)%250 == 0 { // SCHEME.OF decodes the value: keep each reply batch small
			_, err := pipe.Exec(ctx)
			must(t, err)
		}
	}
	_, err := pipe.Exec(ctx)
	must(t, err)
	for i, c := range cmds {
		of, err := c.Slice()
		must(t, err)
		for _, p := range piecesOf(of) {
			if p.role == "shard" && p.state == "up" {
				out[names[i]] = append(out[names[i]], p.addr)
			}
		}
	}
	return out
}

// reader checks random rep:3 and split:4+2 keys until stopped: every
// answer is the key's value or a retryable error, never nil or wrong
// bytes.
type reader struct {
	ok, retried, wrong atomic.Int64
	firstWrong         atomic.Value
	stop               chan struct{}
	done               sync.WaitGroup
}

func startReader(t *testing.T, c *testCluster, at []int, keys []seqKey) *reader {
	r := &reader{stop: make(chan struct{})}
	var safe []seqKey
	for _, k := range keys {
		if k.scheme != "none" {
			safe = append(safe, k)
		}
	}
	for _, i := range at {
		cl := c.plainClient(i, 2)
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			ctx := context.Background()
			for rng := rand.New(rand.NewPCG(uint64(i), 1)); ; {
				select {
				case <-r.stop:
					return
				default:
				}
				k := safe[rng.IntN(len(safe))]
				v, err := cl.Get(ctx, k.name).Bytes()
				switch {
				case err == nil && len(v) == k.size && sha256.Sum256(v) == k.sum:
					r.ok.Add(1)
				case err != nil && err != redis.Nil && !strings.HasPrefix(err.Error(), "LOST"):
					r.retried.Add(1) // TRYAGAIN, CLUSTERDOWN, a dead node's connection
					time.Sleep(5 * time.Millisecond)
				default:
					r.wrong.Add(1)
					r.firstWrong.CompareAndSwap(nil, fmt.Sprintf("%s: %d bytes, %v", k.name, len(v), err))
				}
			}
		}()
	}
	return r
}

// halt stops the reader and fails the test if it saw a wrong answer.
func (r *reader) halt(t *testing.T, phase string) {
	close(r.stop)
	r.done.Wait()
	if r.wrong.Load() > 0 {
		t.Fatalf("%s: %d wrong reads of rep:3/split:4+2 keys, first %v", phase, r.wrong.Load(), r.firstWrong.Load())
	}
	t.Logf("%s: %d reads of rep:3/split:4+2 keys correct, %d retried, none wrong", phase, r.ok.Load(), r.retried.Load())
}

// patientClient is a RESP2 client of node i whose reads wait up to 30 s:
// the sequence's pipelines read thousands of split keys from race-built
// nodes on a loaded machine.
func (c *testCluster) patientClient(i int) *redis.Client {
	cl := redis.NewClient(&redis.Options{Addr: c.nodes[i].addr(), Protocol: 2, DisableIdentity: true,
		ReadTimeout: 30 * time.Second})
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// voterIndexes lists the indexes of the live nodes that are Raft voters.
func (c *testCluster) voterIndexes(from int) []int {
	st, err := c.status(from)
	must(c.t, err)
	var out []int
	for i, nd := range c.nodes {
		for _, n := range st.Nodes {
			if n.ClientAddr == nd.addr() && n.Voter && n.State != "failed" {
				out = append(out, i)
			}
		}
	}
	return out
}

func TestKillSequenceSixNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("the kill sequence takes about a minute")
	}
	c := startCluster(t, 6, clusterOptions{spares: 1, extra: []string{"--failure-timeout", "2s", "--heartbeat-interval", "100ms"}})
	rdb := c.clusterClient()
	keys := seqLoad(t, rdb, 3400)
	c.waitControlPlane(0, 5, 30*time.Second) // rep:3 and split:4+2 call for five voters
	nonVoters, voters := c.nonVoters(), c.voterIndexes(0)
	first := nonVoters[0] // not the spare (index 6): it is not placed yet
	if first == 6 {
		first = nonVoters[1]
	}
	// voters[0] dies in step 2; the watcher is a voter never killed, and
	// voters[2] reads too until step 3.
	second, watcher, alsoReads := voters[0], voters[1], voters[2]
	cl := c.patientClient(watcher)
	seqExpect(t, "loaded", keys, seqCheck(t, cl, keys), nil)

	// Step 1: a non-voter dies; the spare takes its places.
	lost := noneKeysOf(keys, coordinators(t, cl), c.nodes[first].addr())
	rd := startReader(t, c, []int{watcher, alsoReads}, keys)
	must(t, c.nodes[first].cmd.Process.Kill())
	t.Logf("step 1: non-voter %d marked failed after %s", first, c.waitFailed(watcher, first, 15*time.Second))
	t.Logf("step 1: rebuild done after %s", c.waitRebuilt(watcher, 60*time.Second))
	rd.halt(t, "step 1 (detection, recovery, rebuild)")
	seqExpect(t, "step 1", keys, seqCheck(t, cl, keys), lost)

	// Step 2: a voter dies; no spare is left, survivors stand in.
	for k := range noneKeysOf(keys, coordinators(t, cl), c.nodes[second].addr()) {
		lost[k] = true
	}
	rd = startReader(t, c, []int{watcher, alsoReads}, keys)
	must(t, c.nodes[second].cmd.Process.Kill())
	t.Logf("step 2: voter %d marked failed after %s", second, c.waitFailed(watcher, second, 15*time.Second))
	t.Logf("step 2: rebuild done after %s", c.waitRebuilt(watcher, 60*time.Second))
	rd.halt(t, "step 2 (detection, recovery, rebuild)")
	seqExpect(t, "step 2", keys, seqCheck(t, cl, keys), lost)

	// Step 3: two more nodes die at once. split:4+2 keys left with fewer
	// than 4 live shards are lost; rep:3 keys keep a copy. Every live node
	// votes by now (the second victim's vote passed to the spare), and
	// five voters survive two failures.
	voters = slices.DeleteFunc(c.voterIndexes(watcher), func(i int) bool { return i == watcher })
	if len(voters) != 4 {
		t.Fatalf("want four live voters besides the watcher, have %v", voters)
	}
	victims := voters[2:]
	dead := []string{c.nodes[victims[0]].addr(), c.nodes[victims[1]].addr()}
	holders := splitHolders(t, cl, keys)
	for k := range noneKeysOf(keys, coordinators(t, cl), dead...) {
		lost[k] = true
	}
	for k, hs := range holders {
		alive := 0
		for _, h := range hs {
			if !slices.Contains(dead, h) {
				alive++
			}
		}
		if alive < 4 {
			lost[k] = true
		}
	}
	for _, v := range victims {
		must(t, c.nodes[v].cmd.Process.Kill())
	}
	for _, v := range victims {
		c.waitFailed(watcher, v, 15*time.Second)
	}
	c.waitRebuilt(watcher, 60*time.Second)
	got := seqCheck(t, cl, keys)
	seqExpect(t, "step 3 (beyond tolerance)", keys, got, lost)
	for _, k := range keys {
		if o := got[k.name]; o.lost && k.scheme == "split:4+2" && !strings.Contains(o.err.Error(), "split:4+2 lost") {
			t.Fatalf("lost split key %s: %v; want the scheme and the pieces lost named", k.name, o.err)
		}
	}
	st, err := c.status(watcher)
	must(t, err)
	if st.LostCount != len(lost) {
		t.Fatalf("status counts %d lost keys, want exactly %d", st.LostCount, len(lost))
	}
}
