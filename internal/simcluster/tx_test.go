package simcluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server"
	"github.com/memgest/memgest/server/resp"
)

// MULTI, EXEC, DISCARD, WATCH and UNWATCH (issue 28) on every scheme, from
// a session on the keys' coordinator and from one on another node (whose
// transaction runs on the coordinator as one Tx request): the Redis
// documentation's examples (redis.io/docs/interact/transactions), its
// error texts, WATCH's aborts and CROSSSLOT as Redis Cluster answers it.
func TestTransactionsOnEveryScheme(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range []string{"none", "rep:3", "split:4+2", "stripe:4+2", "hybrid:4+2", "stripe:4+2@batch"} {
		for _, where := range []string{"coordinator", "elsewhere"} {
			t.Run(spec+"/"+where, func(t *testing.T) {
				tag := "{" + spec + where + "}"
				key := func(name string) string { return name + tag }
				node := c.Coordinator(key("foo"))
				if where == "elsewhere" {
					node = (node + 1) % c.Len()
				}
				s := c.Session(node)
				other := c.Session((node + 2) % c.Len())
				transactionScenarios(t, s, other, key, spec)
			})
		}
	}
}

// transactionScenarios runs the scenarios in session s, with other as a
// second client; key names a key of the test's slot.
func transactionScenarios(t *testing.T, s, other *simcluster.Session, key func(string) string, spec string) {
	do := func(what string, args []string, want string) {
		t.Helper()
		expect(t, what, s.Do(args...), want)
	}
	foo, bar := key("foo"), key("bar")
	for _, k := range []string{foo, bar} {
		expect(t, "SET", other.Do("SET", k, "0", "SCHEME", spec), "+OK")
	}

	// The documentation's first example: both increments, atomically.
	do("MULTI", []string{"MULTI"}, "+OK")
	do("INCR foo", []string{"INCR", foo}, "+QUEUED")
	do("INCR bar", []string{"INCR", bar}, "+QUEUED")
	do("EXEC", []string{"EXEC"}, "[:1 :1]")
	expectValue(t, "GET foo", other.Do("GET", foo), "1")

	// Errors after EXEC: each command's own, nothing rolled back.
	a := key("a")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET a abc", []string{"SET", a, "abc", "SCHEME", spec}, "+QUEUED")
	do("INCR a", []string{"INCR", a}, "+QUEUED")
	do("SET a abd", []string{"SET", a, "abd"}, "+QUEUED")
	do("EXEC", []string{"EXEC"}, "[+OK -ERR value is not an integer or out of range +OK]")
	expectValue(t, "GET a", other.Do("GET", a), "abd")

	// Errors while queuing: EXECABORT, and nothing runs.
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET", []string{"SET", a, "x"}, "+QUEUED")
	do("INCR arity", []string{"INCR", a, "b"}, "-ERR wrong number of arguments for 'incr' command")
	do("SET", []string{"SET", a, "y"}, "+QUEUED")
	do("EXEC", []string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("unknown", []string{"NOSUCHCOMMAND", a}, "-ERR unknown command 'NOSUCHCOMMAND', with args beginning with: '"+a+"' ")
	do("EXEC", []string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.")
	expectValue(t, "GET a after EXECABORT", other.Do("GET", a), "abd")

	// DISCARD, and the commands out of place.
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET", []string{"SET", a, "discarded"}, "+QUEUED")
	do("DISCARD", []string{"DISCARD"}, "+OK")
	expectValue(t, "GET a after DISCARD", other.Do("GET", a), "abd")
	// Subscriptions are refused inside MULTI (memgest's rule: their
	// confirmations are pushed, not returned), which aborts it.
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SUBSCRIBE", []string{"SUBSCRIBE", "ch"}, "-ERR Command not allowed inside a transaction")
	do("EXEC after SUBSCRIBE", []string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.")
	// RESET runs at once inside MULTI and discards it, as Redis's does.
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET", []string{"SET", a, "reset"}, "+QUEUED")
	do("RESET", []string{"RESET"}, "+RESET")
	do("EXEC after RESET", []string{"EXEC"}, "-ERR EXEC without MULTI")
	expectValue(t, "GET a after RESET", other.Do("GET", a), "abd")
	do("DISCARD without MULTI", []string{"DISCARD"}, "-ERR DISCARD without MULTI")
	do("EXEC without MULTI", []string{"EXEC"}, "-ERR EXEC without MULTI")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("nested MULTI", []string{"MULTI"}, "-ERR MULTI calls can not be nested")
	do("WATCH in MULTI", []string{"WATCH", a}, "-ERR WATCH inside MULTI is not allowed")
	do("GET", []string{"GET", a}, "+QUEUED")
	do("EXEC after them: not aborted", []string{"EXEC"}, `["abd"]`)
	do("empty transaction", []string{"MULTI"}, "+OK")
	do("EXEC", []string{"EXEC"}, "[]")

	// WATCH: another client's write between WATCH and EXEC aborts EXEC
	// with a null array; the write stands.
	do("WATCH", []string{"WATCH", a}, "+OK")
	expect(t, "SET from another client", other.Do("SET", a, "theirs"), "+OK")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET", []string{"SET", a, "mine"}, "+QUEUED")
	expectNullArray(t, "EXEC after a watched write", s.Do("EXEC"))
	expectValue(t, "GET a", other.Do("GET", a), "theirs")
	// The documentation's check-and-set, unchallenged: it commits, and
	// EXEC unwatched the key.
	do("WATCH", []string{"WATCH", foo}, "+OK")
	v := s.Do("GET", foo).Text()
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET foo", []string{"SET", foo, v + "1"}, "+QUEUED")
	do("EXEC", []string{"EXEC"}, "[+OK]")
	expect(t, "SET after EXEC", other.Do("SET", foo, "2"), "+OK")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("GET", []string{"GET", foo}, "+QUEUED")
	do("EXEC, unwatched", []string{"EXEC"}, `["2"]`)
	// UNWATCH forgets; DISCARD unwatches.
	do("WATCH", []string{"WATCH", foo, bar}, "+OK")
	expect(t, "SET", other.Do("SET", bar, "5"), "+OK")
	do("UNWATCH", []string{"UNWATCH"}, "+OK")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("INCR bar", []string{"INCR", bar}, "+QUEUED")
	do("EXEC after UNWATCH", []string{"EXEC"}, "[:6]")
	do("WATCH", []string{"WATCH", foo}, "+OK")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("DISCARD", []string{"DISCARD"}, "+OK")
	expect(t, "SET", other.Do("SET", foo, "3"), "+OK")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("GET", []string{"GET", foo}, "+QUEUED")
	do("EXEC after DISCARD", []string{"EXEC"}, `["3"]`)
	// A deletion, and a key created and deleted while watched absent.
	do("WATCH", []string{"WATCH", foo}, "+OK")
	expect(t, "DEL", other.Do("DEL", foo), ":1")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET", []string{"SET", foo, "x"}, "+QUEUED")
	expectNullArray(t, "EXEC after a watched deletion", s.Do("EXEC"))
	do("WATCH absent", []string{"WATCH", foo}, "+OK")
	expect(t, "SET", other.Do("SET", foo, "brief", "SCHEME", spec), "+OK")
	expect(t, "DEL", other.Do("DEL", foo), ":1")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET", []string{"SET", foo, "x"}, "+QUEUED")
	expectNullArray(t, "EXEC after a create and delete", s.Do("EXEC"))
	// An expiry is a change too.
	expect(t, "SET PX", other.Do("SET", foo, "short", "PX", "30", "SCHEME", spec), "+OK")
	do("WATCH", []string{"WATCH", foo}, "+OK")
	time.Sleep(60 * time.Millisecond)
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET", []string{"SET", foo, "x"}, "+QUEUED")
	expectNullArray(t, "EXEC after the watched key expired", s.Do("EXEC"))
	// A read of a watched key changes nothing.
	do("WATCH", []string{"WATCH", a}, "+OK")
	expectValue(t, "GET", other.Do("GET", a), "theirs")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("GET", []string{"GET", a}, "+QUEUED")
	do("EXEC", []string{"EXEC"}, `["theirs"]`)

	// CROSSSLOT: keys of two slots, in one command or across commands
	// (Redis Cluster refuses those at EXEC), and watched keys likewise.
	x, y := "x"+key(""), "y{elsewhere-"+spec+"}"
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET x", []string{"SET", x, "1"}, "+QUEUED")
	do("SET y", []string{"SET", y, "1"}, "+QUEUED")
	do("EXEC", []string{"EXEC"}, "-CROSSSLOT Keys in request don't hash to the same slot")
	expect(t, "EXISTS x", other.Do("EXISTS", x), ":0")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("MSET x y", []string{"MSET", x, "1", y, "1"}, "-CROSSSLOT Keys in request don't hash to the same slot")
	do("EXEC", []string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.")
	do("WATCH x y", []string{"WATCH", x, y}, "-CROSSSLOT Keys in request don't hash to the same slot")
	do("WATCH x", []string{"WATCH", x}, "+OK")
	do("WATCH y", []string{"WATCH", y}, "-CROSSSLOT Keys in request don't hash to the same slot")
	do("MULTI", []string{"MULTI"}, "+OK")
	do("SET y", []string{"SET", y, "1"}, "+QUEUED")
	do("EXEC, watched elsewhere", []string{"EXEC"}, "-CROSSSLOT Keys in request don't hash to the same slot")
	expect(t, "EXISTS y", other.Do("EXISTS", y), ":0")

	// A pipelined transaction, as redis-py's pipeline() sends it.
	got := s.Pipeline([]string{"MULTI"}, []string{"SET", a, "p"}, []string{"APPEND", a, "q"},
		[]string{"GET", a}, []string{"EXEC"})
	want := []string{"+OK", "+QUEUED", "+QUEUED", "+QUEUED", `[+OK :2 "pq"]`}
	for i, r := range got {
		expect(t, fmt.Sprintf("pipelined reply %d", i), r, want[i])
	}
}

// expectNullArray fails the test unless r is the null array an aborted
// EXEC answers (RESP2 *-1, RESP3 _).
func expectNullArray(t *testing.T, what string, r resp.Reply) {
	t.Helper()
	if r.Kind() != resp.KindNilArray {
		t.Fatalf("%s = %s, want a null array", what, simcluster.Render(r))
	}
	if got2, got3 := string(r.AppendTo(nil, 2)), string(r.AppendTo(nil, 3)); got2 != "*-1\r\n" || got3 != "_\r\n" {
		t.Fatalf("%s renders %q and %q", what, got2, got3)
	}
}

// With redirects (--redirect), a transaction runs where its slot is
// coordinated, as in Redis Cluster: a queued command of a key coordinated
// elsewhere gets -MOVED and fails the transaction, and WATCH of such a
// key gets -MOVED.
func TestTransactionsWithRedirects(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 3,
		Configure: func(i int, cfg *server.Config) { cfg.Redirect = true }})
	here, there := c.KeyOn(0, "here"), c.KeyOn(1, "there")
	s := c.Session(0)
	expect(t, "MULTI", s.Do("MULTI"), "+OK")
	expect(t, "SET here", s.Do("SET", here, "1"), "+QUEUED")
	r := s.Do("SET", there, "1")
	if r.Kind() != resp.KindError || r.Text()[:6] != "MOVED " {
		t.Fatalf("SET of a key coordinated elsewhere = %s, want -MOVED", simcluster.Render(r))
	}
	expect(t, "EXEC", s.Do("EXEC"), "-EXECABORT Transaction discarded because of previous errors.")
	if r := s.Do("WATCH", there); r.Kind() != resp.KindError || r.Text()[:6] != "MOVED " {
		t.Fatalf("WATCH of a key coordinated elsewhere = %s, want -MOVED", simcluster.Render(r))
	}
	expect(t, "WATCH here", s.Do("WATCH", here), "+OK")
	expect(t, "MULTI", s.Do("MULTI"), "+OK")
	expect(t, "INCR here", s.Do("INCR", here), "+QUEUED")
	expect(t, "EXEC", s.Do("EXEC"), "[:1]")
}
