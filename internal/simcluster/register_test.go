package simcluster_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/keyslot"
	"github.com/memgest/memgest/server/resp"
)

// register is porcupine's model of one string key: SET, GET and DEL, per
// key. A GET of an absent key answers nil.
var register = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regOp).key
			if byKey[k] == nil {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return regOut{} },
	Step: func(state, input, output any) (bool, any) {
		in, s := input.(regOp), state.(regOut)
		switch {
		case in.set:
			return true, regOut{value: in.value, exists: true}
		case in.del:
			out := output.(regOut)
			return out.unknown || out.deleted == s.exists, regOut{}
		}
		return output.(regOut) == s, s
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("%+v -> %+v", input, output)
	},
}

// regOp is one operation of register: a GET unless set or del.
type regOp struct {
	key, value string
	set, del   bool
	// node and epoch say which node answered, at which epoch of its map
	// (when the answer came); the model ignores them, a failure shows them.
	node  int
	epoch uint64
}

// regOut is what a GET answered (value, exists) or a DEL counted
// (deleted). unknown marks a write that failed saying it may or may not
// have run: it is pending forever (it may take effect at any point after
// its call) and its output says nothing.
type regOut struct {
	value   string
	exists  bool
	deleted bool
	unknown bool
}

// registerLoad is a load of clients that SET, GET and DEL keys through
// the nodes a test names, recording a history for porcupine.
type registerLoad struct {
	t       *testing.T
	c       *simcluster.Cluster
	keys    []string
	schemes map[string]string // key → the scheme its SETs name
	nodes   func() []int
	start   time.Time

	mu            sync.Mutex
	history       []porcupine.Operation
	failures      []string
	indeterminate []string // commands that failed saying they may or may not have run
	retries       int
}

// startRegisterLoad writes n keys spread over none, rep:3, split:4+2 and
// stripe:4+2 and starts clients goroutines that, until stop, SET (60%),
// GET (35%) and DEL (5%) them through nodes(), each command on a node
// drawn from its own seeded source. A MOVED or TRYAGAIN answer (a map in
// flux) did not run the command, which the client then retries. A write
// that fails saying it may or may not have run is pending forever in the
// history (a read that does has no effect and is left out), and check
// logs them; any other error is a failure check reports. check runs
// porcupine on the history.
func startRegisterLoad(t *testing.T, c *simcluster.Cluster, prefix string, n, clients int, nodes func() []int) (stop func(), check func(when string) []string) {
	l := &registerLoad{t: t, c: c, schemes: map[string]string{}, nodes: nodes, start: time.Now()}
	specs := []string{"none", "rep:3", "split:4+2", "stripe:4+2"}
	for i := range n {
		k := fmt.Sprintf("%s:%d", prefix, i)
		l.keys = append(l.keys, k)
		l.schemes[k] = specs[i%len(specs)]
		l.run(0, regOp{key: k, value: "v0", set: true})
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for id := 1; id <= clients; id++ {
		wg.Go(func() { l.client(id, done) })
	}
	stop = func() {
		select {
		case <-done:
		default:
			close(done)
		}
		wg.Wait()
	}
	t.Cleanup(stop) // a test that ends early stops its clients before its nodes
	return stop, l.check
}

// client runs operations until done, each drawn from a source seeded by
// the cluster's seed and the client's id.
func (l *registerLoad) client(id int, done <-chan struct{}) {
	rng := rand.New(rand.NewPCG(l.c.Seed(), uint64(id)))
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		in := regOp{key: l.keys[rng.IntN(len(l.keys))]}
		switch r := rng.IntN(100); {
		case r < 60:
			in.set, in.value = true, fmt.Sprintf("c%d-%d", id, i)
		case r < 65:
			in.del = true
		}
		l.run(id, in)
	}
}

// run sends in until it runs, retrying MOVED and TRYAGAIN, and records it.
func (l *registerLoad) run(id int, in regOp) {
	args := []string{"GET", in.key}
	switch {
	case in.set:
		args = []string{"SET", in.key, in.value, "SCHEME", l.schemes[in.key]}
	case in.del:
		args = []string{"DEL", in.key}
	}
	call := time.Since(l.start).Nanoseconds()
	for tries := 0; ; tries++ {
		ns := l.nodes()
		in.node = ns[(id+tries)%len(ns)]
		r := l.c.DoQuiet(in.node, args...)
		in.epoch = l.c.Node(in.node).Map().Epoch
		if text := r.Text(); r.Kind() == resp.KindError && (strings.HasPrefix(text, "MOVED ") || strings.HasPrefix(text, "TRYAGAIN ")) {
			l.mu.Lock()
			l.retries++
			l.mu.Unlock()
			time.Sleep(time.Millisecond)
			continue
		}
		ret := time.Since(l.start).Nanoseconds()
		out, ok := regOutOf(in, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		if r.Kind() == resp.KindError && strings.Contains(r.Text(), "may or may not have run") {
			l.indeterminate = append(l.indeterminate, fmt.Sprintf("%s (slot %d) → %.400s", strings.Join(args[:2], " "), keyslot.Of([]byte(in.key)), simcluster.Render(r)))
			if in.set || in.del {
				l.history = append(l.history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: regOut{unknown: true}, Return: math.MaxInt64})
			}
			return
		}
		if !ok {
			l.failures = append(l.failures, fmt.Sprintf("%s (slot %d) → %.400s", strings.Join(args[:2], " "), keyslot.Of([]byte(in.key)), simcluster.Render(r)))
			return // its outcome unknown, left out of the history: check fails anyway
		}
		l.history = append(l.history, porcupine.Operation{ClientId: id, Input: in, Call: call, Output: out, Return: ret})
		return
	}
}

// regOutOf reads r as in's answer; ok is false for an answer no command
// of the load should give (an error).
func regOutOf(in regOp, r resp.Reply) (out regOut, ok bool) {
	switch {
	case in.set:
		return regOut{}, r.Text() == "OK"
	case in.del:
		n := r.Int()
		return regOut{deleted: n == 1}, r.Kind() == resp.KindInt && (n == 0 || n == 1)
	case r.Kind() == resp.KindBulk:
		return regOut{value: r.Text(), exists: true}, true
	}
	return regOut{}, r.IsNil()
}

// check fails the test if a command failed or the history is not
// linearizable, and returns the keys the history has operations on.
func (l *registerLoad) check(when string) []string {
	l.t.Helper()
	l.mu.Lock()
	history, failures, retries := slices.Clone(l.history), slices.Clone(l.failures), l.retries
	indeterminate := slices.Clone(l.indeterminate)
	l.mu.Unlock()
	for _, c := range indeterminate {
		l.t.Logf("%s: outcome unknown: %s", when, c)
	}
	if len(failures) > 0 {
		l.t.Fatalf("%s: %d commands failed, the first: %s", when, len(failures), failures[0])
	}
	switch porcupine.CheckOperationsTimeout(register, history, checkTimeout) {
	case porcupine.Illegal:
		l.t.Fatalf("%s: the history of %d operations is not linearizable%s", when, len(history), illegalKeys(history))
	case porcupine.Unknown:
		l.t.Fatalf("%s: the history of %d operations was not decided within %s%s", when, len(history), checkTimeout, illegalKeys(history))
	}
	l.t.Logf("%s: %d operations linearizable (%d MOVED/TRYAGAIN retried, %d of unknown outcome)", when, len(history), retries, len(indeterminate))
	return l.keys
}

// checkTimeout bounds porcupine's search: a linearizable history of a
// few thousand operations over tens of keys is decided in well under a
// second, while an illegal one can make the search explore for hours
// (a CI run was killed after 30 minutes in it).
const checkTimeout = time.Minute

// illegalKeys checks each key's operations alone and describes those of
// the keys whose history is illegal or undecided (the first few, each op
// in call order), so that a failure shows what went wrong.
func illegalKeys(history []porcupine.Operation) string {
	var b strings.Builder
	shown := 0
	for _, ops := range register.Partition(history) {
		res := porcupine.CheckOperationsTimeout(register, ops, checkTimeout/10)
		if res == porcupine.Ok {
			continue
		}
		if shown++; shown > 3 {
			b.WriteString("\n(more keys left out)")
			break
		}
		slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		fmt.Fprintf(&b, "\nkey %s: %s, %d operations (times in µs from the load's start):", ops[0].Input.(regOp).key, res, len(ops))
		for _, op := range ops[max(0, len(ops)-80):] {
			ret := "∞"
			if op.Return != math.MaxInt64 {
				ret = fmt.Sprint(op.Return / 1000)
			}
			fmt.Fprintf(&b, "\n  client %d [%d, %s] %s", op.ClientId, op.Call/1000, ret, register.DescribeOperation(op.Input, op.Output))
		}
	}
	return b.String()
}

// TestRegisterModel checks the checker: a read of a value overwritten
// before it began, a DEL counting a key deleted before it, and a read of a
// deleted key's value are illegal; overlapping ones may go either way.
func TestRegisterModel(t *testing.T) {
	set := func(v string, call, ret int64) porcupine.Operation {
		return porcupine.Operation{Input: regOp{key: "k", value: v, set: true}, Call: call, Return: ret}
	}
	get := func(v string, exists bool, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: 1, Input: regOp{key: "k"}, Output: regOut{value: v, exists: exists}, Call: call, Return: ret}
	}
	unknownSet := func(v string, call int64) porcupine.Operation {
		return porcupine.Operation{ClientId: 3, Input: regOp{key: "k", value: v, set: true}, Output: regOut{unknown: true}, Call: call, Return: math.MaxInt64}
	}
	del := func(deleted bool, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: 2, Input: regOp{key: "k", del: true}, Output: regOut{deleted: deleted}, Call: call, Return: ret}
	}
	for _, tc := range []struct {
		name    string
		history []porcupine.Operation
		legal   bool
	}{
		{"read of the last write", []porcupine.Operation{set("a", 0, 1), set("b", 2, 3), get("b", true, 4, 5)}, true},
		{"read of an overwritten value", []porcupine.Operation{set("a", 0, 1), set("b", 2, 3), get("a", true, 4, 5)}, false},
		{"read overlapping the overwrite", []porcupine.Operation{set("a", 0, 1), set("b", 2, 5), get("a", true, 3, 4)}, true},
		{"absent before any write", []porcupine.Operation{get("", false, 0, 1), set("a", 2, 3)}, true},
		{"delete then read nil", []porcupine.Operation{set("a", 0, 1), del(true, 2, 3), get("", false, 4, 5)}, true},
		{"read after a delete", []porcupine.Operation{set("a", 0, 1), del(true, 2, 3), get("a", true, 4, 5)}, false},
		{"delete of an absent key counting one", []porcupine.Operation{del(true, 0, 1)}, false},
		{"second delete counting one", []porcupine.Operation{set("a", 0, 1), del(true, 2, 3), del(true, 4, 5)}, false},
		{"a write of unknown outcome read later", []porcupine.Operation{set("a", 0, 1), unknownSet("b", 2), get("b", true, 4, 5)}, true},
		{"a write of unknown outcome never seen", []porcupine.Operation{set("a", 0, 1), unknownSet("b", 2), get("a", true, 4, 5)}, true},
		{"a value nobody wrote", []porcupine.Operation{set("a", 0, 1), unknownSet("b", 2), get("c", true, 4, 5)}, false},
	} {
		if got := porcupine.CheckOperations(register, tc.history); got != tc.legal {
			t.Errorf("%s: linearizable = %v, want %v", tc.name, got, tc.legal)
		}
	}
}
