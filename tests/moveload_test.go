package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

// moveLoad is a bounded load of clients that SET, GET and DEL keys of
// several schemes while slots move (issue 29: "add and rebalance, drain
// and remove, each under load with a porcupine-checked history"). Each
// client talks to one node, which forwards to the key's coordinator.
type moveLoad struct {
	keys    []string
	schemes map[string]string // key → the scheme its SETs name
	start   time.Time
	done    chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	history  []porcupine.Operation
	failures []string
	retries  int
}

// startMoveLoad writes n keys named prefix:i spread over schemes and
// starts one client per entry of clients that, until stop, SETs (55%),
// GETs (40%) and DELs (5%) them, pausing gap between operations. A
// TRYAGAIN (a slot between owners) did not run the command, which the
// client retries; any other error is a failure check reports.
func startMoveLoad(t *testing.T, clients []*redis.Client, prefix string, n int, schemes []string, gap time.Duration, seed uint64) *moveLoad {
	l := &moveLoad{schemes: map[string]string{}, start: time.Now(), done: make(chan struct{})}
	for i := range n {
		k := fmt.Sprintf("%s:%d", prefix, i)
		l.keys = append(l.keys, k)
		l.schemes[k] = schemes[i%len(schemes)]
		l.run(ctxT(t), clients[0], len(clients), kvInput{key: k, op: "set", value: "0", scheme: l.schemes[k]})
	}
	for id, rdb := range clients {
		l.wg.Go(func() { l.client(ctxT(t), rdb, id, gap, rand.New(rand.NewPCG(seed, uint64(id)))) })
	}
	t.Cleanup(l.stop)
	return l
}

// client runs operations until stop.
func (l *moveLoad) client(ctx context.Context, rdb *redis.Client, id int, gap time.Duration, rng *rand.Rand) {
	for i := 0; ; i++ {
		select {
		case <-l.done:
			return
		case <-time.After(gap):
		}
		k := l.keys[rng.IntN(len(l.keys))]
		in := kvInput{key: k, op: "get"}
		switch r := rng.IntN(100); {
		case r < 55:
			in = kvInput{key: k, op: "set", value: fmt.Sprint((id+1)*1_000_000 + i), scheme: l.schemes[k]}
		case r < 60:
			in = kvInput{key: k, op: "del"}
		}
		l.run(ctx, rdb, id, in)
	}
}

// run sends in until it runs, retrying TRYAGAIN, and records it.
func (l *moveLoad) run(ctx context.Context, rdb *redis.Client, id int, in kvInput) {
	call := time.Since(l.start).Nanoseconds()
	for {
		out, err := runInput(ctx, rdb, in)
		if err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") {
			l.mu.Lock()
			l.retries++
			l.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			continue
		}
		ret := time.Since(l.start).Nanoseconds()
		l.mu.Lock()
		defer l.mu.Unlock()
		if err != nil {
			l.failures = append(l.failures, fmt.Sprintf("%s %s: %v", in.op, in.key, err))
			return // its outcome unknown: check fails anyway
		}
		l.history = append(l.history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
		return
	}
}

// stop ends the clients and waits for them.
func (l *moveLoad) stop() {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	l.wg.Wait()
}

// check stops the load and fails the test if a command failed or the
// history is not linearizable.
func (l *moveLoad) check(t *testing.T, what string) {
	t.Helper()
	l.stop()
	l.mu.Lock()
	history, failures := slices.Clone(l.history), l.failures
	l.mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("%s: %d commands failed, the first: %s", what, len(failures), failures[0])
	}
	res := checkLinearizable(t, history, what)
	t.Logf("%s: %d operations on %d keys (%d TRYAGAIN retried): %s", what, len(history), len(l.keys), l.retries, res)
}
