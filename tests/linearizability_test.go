package tests

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

// kvInput is one operation of the linearizability test on one key.
type kvInput struct {
	key    string
	op     string // set, setnx, setxx, get, append, incr, del, move
	value  string // the sets and append
	scheme string // the sets and move
}

// kvOutput is what the client saw.
type kvOutput struct {
	value  string
	exists bool
	n      int64 // append: new length; incr: new value; del: count; move: 1/0
	failed bool  // move of a missing key; incr of a value that is no integer
	// applied says a SET NX or XX set the value (OK, not nil).
	applied bool
	// unknown marks a write that failed with an error that does not say
	// whether it ran: it may take effect at any point after its call, and
	// its output (empty) says nothing.
	unknown bool
	// lost marks a -LOST refusal: the key's value was lost beyond its
	// scheme's tolerance and the command did not run. Only lossyModel
	// accepts it.
	lost bool
}

// unknownOutcome is the output recorded for such a write, pending forever.
var unknownOutcome = kvOutput{unknown: true}

// kvState is the model's value of one key.
type kvState struct {
	value  string
	exists bool
	lost   bool // lossyModel only: the key answers -LOST until written or deleted
}

// kvModel is the sequential specification of one key under GET, SET (plain,
// NX and XX), APPEND, INCR, DEL and SCHEME.MOVE; moves change no value. A
// write of unknown outcome takes its effect where it is linearized, and its
// output is not checked.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(kvInput).key
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return kvState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(kvState), input.(kvInput), output.(kvOutput)
		if out.lost {
			return false, s // a key within its scheme's tolerance is never lost
		}
		switch in.op {
		case "set":
			return true, kvState{value: in.value, exists: true}
		case "setnx", "setxx":
			if applies := s.exists == (in.op == "setxx"); applies {
				return out.unknown || out.applied, kvState{value: in.value, exists: true}
			}
			return out.unknown || !out.applied, s
		case "incr":
			return stepIncr(s, out)
		case "get":
			return !out.unknown && out.exists == s.exists && out.value == s.value, s
		case "append":
			v := s.value + in.value
			return out.unknown || out.n == int64(len(v)), kvState{value: v, exists: true}
		case "del":
			return out.unknown || out.n == boolInt(s.exists), kvState{}
		case "move":
			return out.unknown || out.failed == !s.exists, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("%+v -> %+v", input, output)
	},
}

// lossyModel is kvModel for a key whose scheme tolerates fewer failures
// than a run injects (none keys under any kill): at any moment the key may
// lose its value, to absent (its coordinator died before the key directory
// heard of it) or to lost (GET and the commands that read it answer -LOST
// until a SET or DEL). It may never return a value that no linearization
// allows: a loss is never a resurrection of an older value.
var lossyModel = porcupine.NondeterministicModel{
	Partition: kvModel.Partition,
	Init:      func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		var next []any
		for _, s := range []kvState{state.(kvState), {}, {lost: true}} {
			if ok, after := stepLossy(s, input.(kvInput), output.(kvOutput)); ok {
				next = append(next, after)
			}
		}
		return next
	},
	DescribeOperation: kvModel.DescribeOperation,
}

// markableModel is kvModel for a key within its scheme's tolerance whose
// slot is in a range reported lost (failure-model.md, "When nothing names
// a lost key"): its value is never lost, but while it is absent it may
// answer as maybe lost (-LOST; DEL counts it, SET NX refuses) until it is
// written or deleted: nothing that survived tells it from a lost key of
// another scheme in the same slots.
var markableModel = porcupine.NondeterministicModel{
	Partition: kvModel.Partition,
	Init:      func() []any { return []any{kvState{}} },
	Step: func(state, input, output any) []any {
		s := state.(kvState)
		from := []kvState{s}
		if !s.exists && !s.lost {
			from = append(from, kvState{lost: true})
		}
		var next []any
		for _, f := range from {
			if ok, after := stepLossy(f, input.(kvInput), output.(kvOutput)); ok {
				next = append(next, after)
			}
		}
		return next
	},
	DescribeOperation: kvModel.DescribeOperation,
}

// stepLossy is one operation on a key that may be lost: kvModel's step,
// except on a lost key, where only writes that need no value run. A lost key
// exists (EXISTS counts it, DEL removes it), so SET XX writes over it and
// SET NX does not; commands that read the value answer -LOST.
func stepLossy(s kvState, in kvInput, out kvOutput) (bool, kvState) {
	if !s.lost {
		ok, after := kvModel.Step(s, in, out)
		return ok, after.(kvState)
	}
	switch in.op {
	case "set":
		return true, kvState{value: in.value, exists: true}
	case "setxx":
		if out.lost {
			return true, s
		}
		return out.unknown || out.applied, kvState{value: in.value, exists: true}
	case "setnx":
		return out.unknown || out.lost || !out.applied, s
	case "del":
		return out.unknown || out.n == 1, kvState{}
	case "get":
		return out.lost, s
	}
	return out.unknown || out.lost, s // refused: it would read the lost value
}

// stepIncr is INCR: a missing key counts as 0; a value that is no integer
// written the canonical way (Redis refuses "007" and "+7" too) is refused
// and stays.
func stepIncr(s kvState, out kvOutput) (bool, any) {
	v := int64(0)
	if s.exists {
		var err error
		v, err = strconv.ParseInt(s.value, 10, 64)
		if err != nil || strconv.FormatInt(v, 10) != s.value {
			return out.unknown || out.failed, s
		}
	}
	return out.unknown || (!out.failed && out.n == v+1), kvState{value: strconv.FormatInt(v+1, 10), exists: true}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestLinearizableAcrossSchemes has concurrent clients on several nodes
// write, read, append to, delete and move two keys across none, rep:3,
// split:4+2, stripe:4+2, hybrid:4+2 and their batch and auto modes, then checks the history with porcupine (DESIGN.md §8
// invariant 2). An operation that failed has an unknown outcome and is
// recorded as pending forever; its client goes on under a new id, as in
// etcd's robustness tests, so that its later operations do not overlap it
// on one client's line of the visualisation.
func TestLinearizableAcrossSchemes(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	const clients, opsPerClient = 8, 120
	start := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	var nextID atomic.Int64 // ids for clients after an operation of unknown outcome
	nextID.Store(clients)
	for id := 0; id < clients; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			rdb := c.plainClient(id%len(c.nodes), 2)
			rng := rand.New(rand.NewSource(int64(id)))
			cid := id // a new one after each operation of unknown outcome
			for i := 0; i < opsPerClient; i++ {
				in := randomInput(rng, []string{"lin:{a}", "lin:{b}"}, schemes, id, i)
				call := time.Since(start).Nanoseconds()
				out, err := runInput(ctx, rdb, in)
				ret := time.Since(start).Nanoseconds()
				if err != nil {
					if in.op == "get" {
						continue // a failed read has no effect
					}
					out, ret = unknownOutcome, math.MaxInt64
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: cid, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
				if ret == math.MaxInt64 {
					cid = int(nextID.Add(1) - 1)
				}
			}
		}(id)
	}
	wg.Wait()
	res := checkLinearizable(t, history, "across schemes")
	t.Logf("%d operations: %s", len(history), res)
}

// TestLinearizableHotBatchKeys has many clients write two hot keys of
// batching schemes with plain SETs (blind writes, which overlap in flight
// and share rounds, decision 0009) while others read and now and then
// delete them, and checks the history with porcupine: a round stores only
// a key's newest object, and every writer's SET is still linearizable.
// Porcupine's search, not the cluster, is what costs here: 12 clients ×
// 150 operations on two keys took 58 s to check under -race, × 75 10 s.
func TestLinearizableHotBatchKeys(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	admin := c.plainClient(0, 2)
	must(t, admin.Do(ctx, "SCHEME.DEFAULT", "stripe:4+2@batch").Err())
	c.waitDefault("stripe:4+2@batch")
	keys := []string{"hot:{a}", "hot:{b}"}
	must(t, admin.Do(ctx, "SET", keys[1], "0", "SCHEME", "hybrid:4+2@batch").Err())
	const clients, opsPerClient = 12, 75
	start := time.Now()
	var mu sync.Mutex
	history := []porcupine.Operation{{ClientId: clients, Input: kvInput{key: keys[1], op: "set", value: "0"}, Output: kvOutput{}, Call: 0, Return: 1}}
	var wg sync.WaitGroup
	for id := range clients {
		wg.Go(func() {
			rdb := c.plainClient(id%len(c.nodes), 2)
			rng := rand.New(rand.NewSource(int64(id)))
			for i := range opsPerClient {
				key := keys[rng.Intn(len(keys))]
				in := kvInput{key: key, op: "get"}
				switch r := rng.Intn(100); {
				case r < 60:
					in = kvInput{key: key, op: "set", value: strconv.Itoa((id+1)*1_000_000 + i)}
				case r < 63:
					in = kvInput{key: key, op: "del"}
				}
				call := time.Since(start).Nanoseconds() + 2
				out, err := runInput(ctx, rdb, in)
				ret := time.Since(start).Nanoseconds() + 2
				if err != nil {
					if in.op == "get" {
						continue
					}
					out, ret = unknownOutcome, math.MaxInt64
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	ran := time.Since(start)
	res := checkLinearizable(t, history, "hot batch keys")
	t.Logf("%d operations in %s, checked in %s: %s", len(history), ran.Round(time.Millisecond), (time.Since(start) - ran).Round(time.Millisecond), res)
}

// randomInput is client id's i-th operation on one of keys, in one of
// schemes: 20% SET, 30% GET, 10% each APPEND, DEL and SCHEME.MOVE, 7% SET
// NX, 7% SET XX, 6% INCR. Set values are integers, unique to the client and
// operation, and APPEND adds a digit, so INCR mostly applies.
func randomInput(rng *rand.Rand, keys, schemes []string, id, i int) kvInput {
	key := keys[rng.Intn(len(keys))]
	sch := schemes[rng.Intn(len(schemes))]
	value := strconv.Itoa((id+1)*1_000_000 + i)
	switch r := rng.Intn(100); {
	case r < 20:
		return kvInput{key: key, op: "set", value: value, scheme: sch}
	case r < 27:
		return kvInput{key: key, op: "setnx", value: value, scheme: sch}
	case r < 34:
		return kvInput{key: key, op: "setxx", value: value, scheme: sch}
	case r < 64:
		return kvInput{key: key, op: "get"}
	case r < 74:
		return kvInput{key: key, op: "append", value: "7"}
	case r < 80:
		return kvInput{key: key, op: "incr"}
	case r < 90:
		return kvInput{key: key, op: "del"}
	default:
		return kvInput{key: key, op: "move", scheme: sch}
	}
}

func runInput(ctx context.Context, rdb *redis.Client, in kvInput) (kvOutput, error) {
	switch in.op {
	case "set":
		if in.scheme == "" { // a plain SET: a blind write
			return kvOutput{}, rdb.Set(ctx, in.key, in.value, 0).Err()
		}
		return kvOutput{}, rdb.Do(ctx, "SET", in.key, in.value, "SCHEME", in.scheme).Err()
	case "setnx", "setxx":
		err := rdb.Do(ctx, "SET", in.key, in.value, strings.ToUpper(strings.TrimPrefix(in.op, "set")), "SCHEME", in.scheme).Err()
		if errors.Is(err, redis.Nil) {
			return kvOutput{}, nil
		}
		return kvOutput{applied: err == nil}, err
	case "incr":
		n, err := rdb.Incr(ctx, in.key).Result()
		if err != nil && strings.Contains(err.Error(), "not an integer") {
			return kvOutput{failed: true}, nil
		}
		return kvOutput{n: n}, err
	case "get":
		v, err := rdb.Get(ctx, in.key).Result()
		if errors.Is(err, redis.Nil) {
			return kvOutput{}, nil
		}
		return kvOutput{value: v, exists: true}, err
	case "append":
		n, err := rdb.Append(ctx, in.key, in.value).Result()
		return kvOutput{n: n}, err
	case "del":
		n, err := rdb.Del(ctx, in.key).Result()
		return kvOutput{n: n}, err
	case "move":
		n, err := rdb.Do(ctx, "SCHEME.MOVE", in.key, in.scheme).Int64()
		if err != nil && strings.Contains(err.Error(), "no such key") {
			return kvOutput{failed: true}, nil
		}
		return kvOutput{n: n}, err
	}
	return kvOutput{}, fmt.Errorf("unknown op %q", in.op)
}

// TestMoveUnderReadsNeverAbsent moves a key between schemes while readers
// on every node read it: no read may miss it (invariant 4).
func TestMoveUnderReadsNeverAbsent(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	admin := c.plainClient(0, 2)
	const key, value = "moving", "payload-that-must-never-vanish"
	if err := admin.Do(ctx, "SET", key, value, "SCHEME", "none").Err(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var reads, bad int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rdb := c.plainClient(i, 3)
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := rdb.Get(ctx, key).Result()
				mu.Lock()
				reads++
				if err != nil || v != value {
					bad++
					t.Errorf("node %d read %q, %v during a move", i, v, err)
				}
				mu.Unlock()
			}
		}(i)
	}
	moves := 0
	for round := 0; round < 20; round++ {
		for _, sch := range []string{"rep:3", "split:4+2", "hybrid:4+2", "stripe:4+2", "hybrid:2+2", "stripe:4+2@batch", "hybrid:4+2@auto", "none", "split:2+1", "rep:2"} {
			if err := admin.Do(ctx, "SCHEME.MOVE", key, sch).Err(); err != nil {
				t.Fatalf("move to %s: %v", sch, err)
			}
			moves++
		}
	}
	close(stop)
	wg.Wait()
	if bad > 0 || reads == 0 {
		t.Fatalf("%d of %d reads wrong during %d moves", bad, reads, moves)
	}
	t.Logf("%d moves, %d reads, all returned the value", moves, reads)
}

// TestKVModel checks the checker: small sequential and concurrent histories
// the model must accept or refuse, unknown outcomes included.
func TestKVModel(t *testing.T) {
	op := func(client int, call, ret int64, in kvInput, out kvOutput) porcupine.Operation {
		in.key = "k"
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	set := func(v string) kvInput { return kvInput{op: "set", value: v} }
	get := kvInput{op: "get"}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"set then get", []porcupine.Operation{op(0, 0, 1, set("1"), kvOutput{}), op(0, 2, 3, get, kvOutput{value: "1", exists: true})}, true},
		{"stale read", []porcupine.Operation{op(0, 0, 1, set("1"), kvOutput{}), op(0, 2, 3, set("2"), kvOutput{}),
			op(1, 4, 5, get, kvOutput{value: "1", exists: true})}, false},
		{"nx on a missing key applies", []porcupine.Operation{op(0, 0, 1, kvInput{op: "setnx", value: "1"}, kvOutput{applied: true}),
			op(0, 2, 3, get, kvOutput{value: "1", exists: true})}, true},
		{"nx on a present key must not apply", []porcupine.Operation{op(0, 0, 1, set("1"), kvOutput{}),
			op(0, 2, 3, kvInput{op: "setnx", value: "2"}, kvOutput{applied: true})}, false},
		{"xx on a missing key does not apply", []porcupine.Operation{op(0, 0, 1, kvInput{op: "setxx", value: "1"}, kvOutput{}),
			op(0, 2, 3, get, kvOutput{})}, true},
		{"incr counts from the value", []porcupine.Operation{op(0, 0, 1, set("41"), kvOutput{}),
			op(0, 2, 3, kvInput{op: "incr"}, kvOutput{n: 42})}, true},
		{"incr of text is refused", []porcupine.Operation{op(0, 0, 1, set("4x"), kvOutput{}),
			op(0, 2, 3, kvInput{op: "incr"}, kvOutput{n: 1})}, false},
		{"incr of a number not written canonically is refused", []porcupine.Operation{op(0, 0, 1, set("07"), kvOutput{}),
			op(0, 2, 3, kvInput{op: "incr"}, kvOutput{failed: true})}, true},
		{"an unknown append may apply", []porcupine.Operation{op(0, 0, 1, set("1"), kvOutput{}),
			op(0, 2, math.MaxInt64, kvInput{op: "append", value: "7"}, unknownOutcome),
			op(1, 4, 5, get, kvOutput{value: "17", exists: true})}, true},
		{"an unknown append may not apply", []porcupine.Operation{op(0, 0, 1, set("1"), kvOutput{}),
			op(0, 2, math.MaxInt64, kvInput{op: "append", value: "7"}, unknownOutcome),
			op(1, 4, 5, get, kvOutput{value: "1", exists: true})}, true},
		{"an unknown append applies once", []porcupine.Operation{op(0, 0, 1, set("1"), kvOutput{}),
			op(0, 2, math.MaxInt64, kvInput{op: "append", value: "7"}, unknownOutcome),
			op(1, 4, 5, get, kvOutput{value: "177", exists: true})}, false},
	} {
		if got := porcupine.CheckOperations(kvModel, tc.history); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}
}

// TestLossyModel checks the model of keys beyond their tolerance: a key may
// be lost at any moment, SET XX writes over a lost key (which exists), and
// a loss never brings an older value back.
func TestLossyModel(t *testing.T) {
	op := func(call int64, in kvInput, out kvOutput) porcupine.Operation {
		in.key = "k"
		return porcupine.Operation{ClientId: 0, Input: in, Call: call, Output: out, Return: call + 1}
	}
	set := func(v string) kvInput { return kvInput{op: "set", value: v} }
	get, lost := kvInput{op: "get"}, kvOutput{lost: true}
	value := func(v string) kvOutput { return kvOutput{value: v, exists: true} }
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"a key may be lost", []porcupine.Operation{op(0, set("1"), kvOutput{}), op(2, get, lost)}, true},
		{"or vanish", []porcupine.Operation{op(0, set("1"), kvOutput{}), op(2, get, kvOutput{})}, true},
		{"a loss never brings an older value back", []porcupine.Operation{op(0, set("1"), kvOutput{}),
			op(2, set("2"), kvOutput{}), op(4, get, value("1"))}, false},
		{"nor does a lost key come back", []porcupine.Operation{op(0, set("1"), kvOutput{}),
			op(2, get, lost), op(4, get, value("1"))}, false},
		{"SET XX writes over a lost key", []porcupine.Operation{op(0, set("1"), kvOutput{}), op(2, get, lost),
			op(4, kvInput{op: "setxx", value: "2"}, kvOutput{applied: true}), op(6, get, value("2"))}, true},
		{"APPEND never reads a lost value", []porcupine.Operation{op(0, set("1"), kvOutput{}), op(2, get, lost),
			op(4, kvInput{op: "append", value: "7"}, kvOutput{n: 2})}, false},
	} {
		if got := porcupine.CheckOperations(lossyModel.ToModel(), tc.history); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}
}
