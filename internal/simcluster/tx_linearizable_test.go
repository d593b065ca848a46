package simcluster_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server/resp"
)

// TestTransactionsLinearizable (issue 28): clients on four nodes mix
// transactions on two keys of one slot — MULTI INCR a INCR b EXEC, MULTI
// GET a GET b EXEC, and the documentation's check-and-set (WATCH a, GET
// a, MULTI, SET a, EXEC) — with plain INCR, GET and SET and pipelined
// SETs of both keys (a set group), and porcupine checks the history with
// a model in which a transaction is one operation on the pair (txModel).
// A transaction whose commands interleaved with another client's, or a
// check-and-set that committed over a change, makes it illegal.
func TestTransactionsLinearizable(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range []string{"rep:3", "stripe:4+2@batch"} {
		t.Run(spec, func(t *testing.T) {
			keys := [2]string{"a{lin-" + spec + "}", "b{lin-" + spec + "}"}
			for _, k := range keys {
				expect(t, "SET", c.Do(0, "SET", k, "0", "SCHEME", spec), "+OK")
			}
			coord := c.Coordinator(keys[0])
			var mu sync.Mutex
			var history []porcupine.Operation
			var failures []string
			start := time.Now()
			var wg sync.WaitGroup
			for client := range 4 {
				node := (coord + client) % c.Len() // the coordinator and three others
				s := c.Session(node)
				rng := rand.New(rand.NewPCG(c.Seed(), uint64(client)))
				wg.Go(func() {
					for i := range 40 {
						call := time.Since(start).Nanoseconds()
						ops, bad := runTxOp(s, keys, txKind(rng.IntN(int(kindCount))), int64(1000*client+i))
						ret := time.Since(start).Nanoseconds()
						mu.Lock()
						if bad != "" {
							failures = append(failures, bad)
						}
						for _, op := range ops {
							history = append(history, porcupine.Operation{ClientId: client, Input: op.in, Call: call, Output: op.out, Return: ret})
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if len(failures) > 0 {
				t.Fatalf("%d operations failed, the first: %s", len(failures), failures[0])
			}
			res := porcupine.CheckOperationsTimeout(txModel, history, time.Minute)
			if res != porcupine.Ok {
				t.Fatalf("the history of %d operations is %v", len(history), res)
			}
			// The model accepts any aborted check-and-set: a WATCH that
			// aborted every EXEC would pass it, so some must commit.
			committed := 0
			for _, op := range history {
				if op.Input.(txIn).kind == kindCAS && op.Output.(txOut).ok {
					committed++
				}
			}
			if committed == 0 {
				t.Fatalf("no check-and-set of %d operations committed", len(history))
			}
		})
	}
}

// txKind is one operation of the test's clients.
type txKind int

const (
	kindGet      txKind = iota // GET key
	kindIncr                   // INCR key
	kindSet                    // SET key value
	kindIncrBoth               // MULTI INCR a INCR b EXEC
	kindGetBoth                // MULTI GET a GET b EXEC
	kindCAS                    // WATCH a, GET a, MULTI, SET a (+100), EXEC
	kindSetBoth                // SET a, SET b pipelined: two operations, not one
	kindCount
)

// txIn is an operation's input; txOut its output: the values it saw (a,
// b: key's for one-key reads), and whether a check-and-set committed.
type txIn struct {
	kind  txKind
	key   int
	value int64
}

type txOut struct {
	a, b int64
	ok   bool
}

type txOp struct {
	in  txIn
	out txOut
}

// runTxOp runs one operation of kind in session s and returns the
// operations it makes for the history, or what went wrong.
func runTxOp(s *simcluster.Session, keys [2]string, kind txKind, value int64) ([]txOp, string) {
	key := int(value % 2)
	num := func(r resp.Reply) (int64, bool) {
		if r.Kind() == resp.KindInt {
			return r.Int(), true
		}
		v, err := strconv.ParseInt(r.Text(), 10, 64)
		return v, err == nil && r.Kind() == resp.KindBulk
	}
	fail := func(what string, r resp.Reply) ([]txOp, string) {
		return nil, fmt.Sprintf("%s → %s", what, simcluster.Render(r))
	}
	switch kind {
	case kindGet, kindIncr:
		cmd := map[txKind]string{kindGet: "GET", kindIncr: "INCR"}[kind]
		r := s.DoQuiet(cmd, keys[key])
		v, ok := num(r)
		if !ok {
			return fail(cmd, r)
		}
		return []txOp{{txIn{kind: kind, key: key}, txOut{a: v}}}, ""
	case kindSet:
		if r := s.DoQuiet("SET", keys[key], strconv.FormatInt(value, 10)); r.Text() != "OK" {
			return fail("SET", r)
		}
		return []txOp{{txIn{kind: kind, key: key, value: value}, txOut{}}}, ""
	case kindSetBoth:
		v := strconv.FormatInt(value, 10)
		rs := s.PipelineQuiet([]string{"SET", keys[0], v}, []string{"SET", keys[1], v})
		for _, r := range rs {
			if r.Text() != "OK" {
				return fail("pipelined SET", r)
			}
		}
		return []txOp{{txIn{kind: kindSet, key: 0, value: value}, txOut{}}, {txIn{kind: kindSet, key: 1, value: value}, txOut{}}}, ""
	case kindIncrBoth, kindGetBoth:
		cmd := map[txKind]string{kindIncrBoth: "INCR", kindGetBoth: "GET"}[kind]
		rs := s.PipelineQuiet([]string{"MULTI"}, []string{cmd, keys[0]}, []string{cmd, keys[1]}, []string{"EXEC"})
		items := rs[3].Items()
		if len(items) != 2 {
			return fail("MULTI "+cmd+" "+cmd+" EXEC", rs[3])
		}
		a, okA := num(items[0])
		b, okB := num(items[1])
		if !okA || !okB {
			return fail("MULTI "+cmd+" "+cmd+" EXEC", rs[3])
		}
		return []txOp{{txIn{kind: kind}, txOut{a: a, b: b}}}, ""
	case kindCAS:
		if r := s.DoQuiet("WATCH", keys[0]); r.Text() != "OK" {
			return fail("WATCH", r)
		}
		r := s.DoQuiet("GET", keys[0])
		v, ok := num(r)
		if !ok {
			return fail("GET", r)
		}
		rs := s.PipelineQuiet([]string{"MULTI"}, []string{"SET", keys[0], strconv.FormatInt(v+100, 10)}, []string{"EXEC"})
		switch {
		case rs[2].Kind() == resp.KindNilArray:
			return []txOp{{txIn{kind: kind}, txOut{a: v}}}, ""
		case simcluster.Render(rs[2]) == "[+OK]":
			return []txOp{{txIn{kind: kind}, txOut{a: v, ok: true}}}, ""
		}
		return fail("check-and-set EXEC", rs[2])
	}
	panic("unreachable")
}

// txModel is porcupine's model of the two keys (a, b): a transaction is
// one operation on both; a check-and-set that committed read a = v and
// wrote v+100 at one instant, and one that aborted read a = v.
var txModel = porcupine.Model{
	Init: func() any { return [2]int64{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.([2]int64), input.(txIn), output.(txOut)
		switch in.kind {
		case kindGet:
			return out.a == s[in.key], s
		case kindIncr:
			s[in.key]++
			return out.a == s[in.key], s
		case kindSet:
			s[in.key] = in.value
			return true, s
		case kindIncrBoth:
			s[0]++
			s[1]++
			return out.a == s[0] && out.b == s[1], s
		case kindGetBoth:
			return out.a == s[0] && out.b == s[1], s
		case kindCAS:
			if out.a != s[0] {
				return false, s
			}
			if out.ok {
				s[0] += 100
			}
			return true, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(txIn), output.(txOut)
		return fmt.Sprintf("%d key %d value %d → %d %d %v", in.kind, in.key, in.value, out.a, out.b, out.ok)
	},
}
