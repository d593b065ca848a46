package tests

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

// kvInput is one operation of the linearizability test on one key.
type kvInput struct {
	key    string
	op     string // set, get, append, del, move
	value  string // set and append
	scheme string // set and move
}

// kvOutput is what the client saw.
type kvOutput struct {
	value  string
	exists bool
	n      int64 // append: new length; del: count; move: 1/0
	failed bool  // move of a missing key
	// unknown marks a write that failed with an error that does not say
	// whether it ran: it may take effect at any point after its call, and
	// its output (empty) says nothing.
	unknown bool
}

// unknownOutcome is the output recorded for such a write, pending forever.
var unknownOutcome = kvOutput{unknown: true}

// kvState is the model's value of one key.
type kvState struct {
	value  string
	exists bool
}

// kvModel is the sequential specification of one key under GET, SET,
// APPEND, DEL and SCHEME.MOVE; moves change no value.
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
		switch in.op {
		case "set":
			return true, kvState{value: in.value, exists: true}
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

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestLinearizableAcrossSchemes has concurrent clients on several nodes
// write, read, append to, delete and move two keys across none, rep:3 and
// split:4+2, then checks the history with porcupine (DESIGN.md §8
// invariant 2). An operation that failed has an unknown outcome and is
// recorded as pending forever.
func TestLinearizableAcrossSchemes(t *testing.T) {
	c := startCluster(t, 6, clusterOptions{})
	ctx := ctxT(t)
	const clients, opsPerClient = 8, 120
	start := time.Now()
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	for id := 0; id < clients; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			rdb := c.plainClient(id%len(c.nodes), 2)
			rng := rand.New(rand.NewSource(int64(id)))
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
				history = append(history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}(id)
	}
	wg.Wait()
	res := porcupine.CheckOperationsTimeout(kvModel, history, 60*time.Second)
	if res != porcupine.Ok {
		t.Fatalf("%s history of %d operations (it is in %s)", res, len(history), dumpHistory(t, history, "across schemes"))
	}
	t.Logf("%d operations: %s", len(history), res)
}

// randomInput is client id's i-th operation on one of keys, in one of
// schemes: 30% SET, 30% GET, 10% each APPEND, DEL and SCHEME.MOVE.
func randomInput(rng *rand.Rand, keys, schemes []string, id, i int) kvInput {
	key := keys[rng.Intn(len(keys))]
	sch := schemes[rng.Intn(len(schemes))]
	switch r := rng.Intn(10); {
	case r < 3:
		return kvInput{key: key, op: "set", value: fmt.Sprintf("%d.%d", id, i), scheme: sch}
	case r < 6:
		return kvInput{key: key, op: "get"}
	case r < 7:
		return kvInput{key: key, op: "append", value: "+"}
	case r < 8:
		return kvInput{key: key, op: "del"}
	default:
		return kvInput{key: key, op: "move", scheme: sch}
	}
}

func runInput(ctx context.Context, rdb *redis.Client, in kvInput) (kvOutput, error) {
	switch in.op {
	case "set":
		return kvOutput{}, rdb.Do(ctx, "SET", in.key, in.value, "SCHEME", in.scheme).Err()
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
		for _, sch := range []string{"rep:3", "split:4+2", "none", "split:2+1", "rep:2"} {
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
