package simcluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server/resp"
)

// The hash commands (issue 28) on every scheme: the Redis 7 documentation's
// examples, its error texts, bad input that changes nothing, the hash
// keeping its key's scheme and expiry, and WRONGTYPE between strings and
// hashes both ways.
func TestHashCommandsOnEveryScheme(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range everyScheme {
		t.Run(spec, func(t *testing.T) {
			h := newHashSession(t, c, spec)
			h.documentationExamples()
			h.errorsChangeNothing()
			h.typesAndLifecycle()
		})
	}
}

// hashSession runs one scheme's checks with onScheme's key, do and check:
// every key is in the scheme's own hash-tag slot.
type hashSession struct {
	t     *testing.T
	c     *simcluster.Cluster
	spec  string
	key   func(name string) string
	do    func(args ...string) string
	check func(what, got, want string)
}

func newHashSession(t *testing.T, c *simcluster.Cluster, spec string) hashSession {
	key, do, check := onScheme(t, c, spec)
	return hashSession{t: t, c: c, spec: spec, key: key, do: do, check: check}
}

// create makes key a hash in the session's scheme: written in the default
// scheme, then moved.
func (h hashSession) create(key string, fieldValues ...string) {
	h.t.Helper()
	h.check("HSET "+key, h.do(append([]string{"HSET", key}, fieldValues...)...), fmt.Sprintf(":%d", len(fieldValues)/2))
	h.do("SCHEME.MOVE", key, h.spec) // 0 when the default is the scheme
	h.check("SCHEME.OF "+key, specOf(h.t, h.c, key), h.spec)
}

func (h hashSession) documentationExamples() {
	k := h.key("myhash")
	h.create(k, "field1", "Hello")
	h.check("HGET", h.do("HGET", k, "field1"), `"Hello"`)
	h.check("HSET two", h.do("HSET", k, "field2", "Hi", "field3", "World"), ":2")
	h.check("HGET field2", h.do("HGET", k, "field2"), `"Hi"`)
	h.check("HGETALL", h.do("HGETALL", k), `["field1" "Hello" "field2" "Hi" "field3" "World"]`)
	h.check("HMGET", h.do("HMGET", k, "field1", "field3", "nofield"), `["Hello" "World" nil]`)
	h.check("HKEYS", h.do("HKEYS", k), `["field1" "field2" "field3"]`)
	h.check("HVALS", h.do("HVALS", k), `["Hello" "Hi" "World"]`)
	h.check("HLEN", h.do("HLEN", k), ":3")
	h.check("HEXISTS", h.do("HEXISTS", k, "field1"), ":1")
	h.check("HEXISTS no", h.do("HEXISTS", k, "nofield"), ":0")
	h.check("HSETNX existing", h.do("HSETNX", k, "field1", "World"), ":0")
	h.check("HSETNX new", h.do("HSETNX", k, "field4", "Hey"), ":1")
	h.check("HDEL", h.do("HDEL", k, "field4", "nofield"), ":1")
	h.check("HDEL none", h.do("HDEL", k, "field4"), ":0")
	h.check("HMSET", h.do("HMSET", k, "field1", "Bonjour", "field5", "x"), "+OK")
	h.check("HGET replaced", h.do("HGET", k, "field1"), `"Bonjour"`)
	h.check("HSCAN", h.do("HSCAN", k, "0", "MATCH", "field[12]"), `["0" ["field1" "Bonjour" "field2" "Hi"]]`)
	h.check("HSCAN COUNT", h.do("HSCAN", k, "0", "COUNT", "1"), `["0" ["field1" "Bonjour" "field2" "Hi" "field3" "World" "field5" "x"]]`)

	n := h.key("counters")
	h.create(n, "field", "5")
	h.check("HINCRBY", h.do("HINCRBY", n, "field", "1"), ":6")
	h.check("HINCRBY -1", h.do("HINCRBY", n, "field", "-1"), ":5")
	h.check("HINCRBY -10", h.do("HINCRBY", n, "field", "-10"), ":-5")
	h.check("HINCRBY new field", h.do("HINCRBY", n, "other", "3"), ":3")
	h.check("HSET float", h.do("HSET", n, "f", "10.50"), ":1")
	h.check("HINCRBYFLOAT", h.do("HINCRBYFLOAT", n, "f", "0.1"), `"10.6"`)
	h.check("HINCRBYFLOAT -5", h.do("HINCRBYFLOAT", n, "f", "-5"), `"5.6"`)
	h.check("HSET exp", h.do("HSET", n, "f", "5.0e3"), ":0")
	h.check("HINCRBYFLOAT exp", h.do("HINCRBYFLOAT", n, "f", "2.0e2"), `"5200"`)
	h.check("HSTRLEN", h.do("HSET", n, "f1", "HelloWorld", "f2", "99", "f3", "-256"), ":3")
	for f, want := range map[string]string{"f1": ":10", "f2": ":2", "f3": ":4", "nofield": ":0"} {
		h.check("HSTRLEN "+f, h.do("HSTRLEN", n, f), want)
	}

	coin := h.key("coin")
	h.create(coin, "heads", "obverse", "tails", "reverse", "edge", "null")
	faces := []string{`"heads"`, `"tails"`, `"edge"`}
	if got := h.do("HRANDFIELD", coin); !slices.Contains(faces, got) {
		h.t.Fatalf("%s: HRANDFIELD = %s", h.spec, got)
	}
	if got := h.c.Do(h.c.AnyLive(), "HRANDFIELD", coin, "-5", "WITHVALUES").Items(); len(got) != 10 {
		h.t.Fatalf("%s: HRANDFIELD -5 WITHVALUES gave %d items, want 10", h.spec, len(got))
	}
	distinct := h.c.Do(h.c.AnyLive(), "HRANDFIELD", coin, "5").Items()
	names := map[string]bool{}
	for _, r := range distinct {
		names[r.Text()] = true
	}
	if len(distinct) != 3 || len(names) != 3 {
		h.t.Fatalf("%s: HRANDFIELD 5 = %v, want the 3 fields once each", h.spec, distinct)
	}
	h.check("HRANDFIELD 0", h.do("HRANDFIELD", coin, "0"), "[]")
	h.check("HRANDFIELD missing", h.do("HRANDFIELD", h.key("nokey")), "nil")
	h.check("HRANDFIELD missing count", h.do("HRANDFIELD", h.key("nokey"), "2"), "[]")
}

// errorsChangeNothing sends bad input of every kind and checks the hash
// afterwards.
func (h hashSession) errorsChangeNothing() {
	k := h.key("guarded")
	h.create(k, "int", "7", "text", "abc", "big", "9223372036854775807")
	before := h.do("HGETALL", k)
	for _, tc := range [][]string{
		{"-ERR wrong number of arguments for 'hset' command", "HSET", k, "a", "1", "b"},
		{"-ERR wrong number of arguments for 'hset' command", "HSET", k, "a"},
		{"-ERR wrong number of arguments for 'hmset' command", "HMSET", k, "a", "1", "b"},
		{"-ERR wrong number of arguments for 'hget' command", "HGET", k},
		{"-ERR wrong number of arguments for 'hdel' command", "HDEL", k},
		{"-ERR value is not an integer or out of range", "HINCRBY", k, "int", "x"},
		{"-ERR hash value is not an integer", "HINCRBY", k, "text", "1"},
		{"-ERR increment or decrement would overflow", "HINCRBY", k, "big", "1"},
		{"-ERR value is not a valid float", "HINCRBYFLOAT", k, "int", "1.5x"},
		{"-ERR value is NaN or Infinity", "HINCRBYFLOAT", k, "int", "inf"},
		{"-ERR hash value is not a float", "HINCRBYFLOAT", k, "text", "1"},
		{"-ERR invalid cursor", "HSCAN", k, "x"},
		{"-ERR syntax error", "HSCAN", k, "0", "COUNT", "0"},
		{"-ERR syntax error", "HSCAN", k, "0", "TYPE", "hash"},
		{"-ERR syntax error", "HRANDFIELD", k, "2", "WITHSCORES"},
		{"-ERR value is not an integer or out of range", "HRANDFIELD", k, "two"},
	} {
		h.check(strings.Join(tc[1:], " "), h.do(tc[1:]...), tc[0])
	}
	h.check("HGETALL after the errors", h.do("HGETALL", k), before)
}

// typesAndLifecycle: TYPE, WRONGTYPE both ways, MGET's nil, SET over a
// hash, the scheme and TTL kept by field updates, the key deleted with its
// last field, and strings refused when they start like a typed value.
func (h hashSession) typesAndLifecycle() {
	k, s := h.key("typed"), h.key("str")
	h.create(k, "f", "v")
	h.check("SET string", h.do("SET", s, "plain", "SCHEME", h.spec), "+OK")
	h.check("TYPE hash", h.do("TYPE", k), "+hash")
	h.check("TYPE string", h.do("TYPE", s), "+string")
	wrong := "-" + resp.ErrWrongType.Text()
	for _, args := range [][]string{{"GET", k}, {"STRLEN", k}, {"APPEND", k, "x"}, {"INCR", k}, {"GETRANGE", k, "0", "1"},
		{"GETDEL", k}, {"GETEX", k, "EX", "100"}, {"GETSET", k, "x"}, {"SET", k, "x", "GET"},
		{"HGET", s, "f"}, {"HSET", s, "f", "v"}, {"HGETALL", s}, {"HLEN", s}, {"HDEL", s, "f"}, {"HINCRBY", s, "f", "1"},
		{"HEXISTS", s, "f"}, {"HSCAN", s, "0"}, {"HRANDFIELD", s}} {
		h.check(strings.Join(args, " "), h.do(args...), wrong)
	}
	h.check("HGETALL after WRONGTYPE", h.do("HGETALL", k), `["f" "v"]`)
	h.check("GET after WRONGTYPE", h.do("GET", s), `"plain"`)
	h.check("MGET", h.do("MGET", k, s), `[nil "plain"]`)
	if got := h.c.Do(h.c.Coordinator(k), "SCAN", "0", "TYPE", "hash", "COUNT", "1000").Items()[1].Items(); !containsText(got, k) || containsText(got, s) {
		h.t.Fatalf("%s: SCAN TYPE hash on its coordinator = %v", h.spec, got)
	}
	h.check("SCHEME.OF", specOf(h.t, h.c, k), h.spec)
	h.check("EXPIRE", h.do("EXPIRE", k, "100"), ":1")
	h.check("HSET keeps the TTL", h.do("HSET", k, "g", "w"), ":1")
	h.check("TTL", h.do("TTL", k), ":100")
	h.check("SCHEME.OF after HSET", specOf(h.t, h.c, k), h.spec)
	h.check("HDEL all", h.do("HDEL", k, "f", "g"), ":2")
	h.check("EXISTS", h.do("EXISTS", k), ":0")
	h.check("TYPE none", h.do("TYPE", k), "+none")
	h.create(k, "f", "v")
	h.check("SET over a hash", h.do("SET", k, "now a string"), "+OK")
	h.check("TYPE after SET", h.do("TYPE", k), "+string")
	reserved := "\x00\xffmgo\x01\x00\x01rest"
	h.check("SET reserved", h.do("SET", s, reserved), `-ERR memgest: a string value may not begin with the 8 bytes memgest reserves for typed values (\x00\xffmgo)`)
	h.check("GET after the refusal", h.do("GET", s), `"plain"`)
	// Pipelined, a plain SET joins a set group of writes: the same check.
	pipe := h.c.Session(h.c.Coordinator(s)).Pipeline([]string{"SET", s, reserved}, []string{"GET", s})
	h.check("pipelined SET reserved", simcluster.Render(pipe[0]), `-ERR memgest: a string value may not begin with the 8 bytes memgest reserves for typed values (\x00\xffmgo)`)
	h.check("GET after the pipelined refusal", simcluster.Render(pipe[1]), `"plain"`)
}

// containsText says whether replies include a bulk string s.
func containsText(replies []resp.Reply, s string) bool {
	return slices.ContainsFunc(replies, func(r resp.Reply) bool { return r.Text() == s })
}

// Hashes of every redundant scheme outlive two nodes dying at once, their
// coordinators among them: the type travels in the value, so recovery and
// rebuild, which know nothing of hashes, bring back hashes — HGETALL reads
// every field during recovery and after the rebuild, and a field update on
// a recovered hash works.
func TestHashesSurviveFailover(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6, Spares: 2})
	specs := []string{"rep:3", "split:4+2", "stripe:4+2", "hybrid:4+2", "stripe:4+2@batch"}
	want := map[string]string{} // key → its HGETALL
	for _, spec := range specs {
		h := newHashSession(t, c, spec)
		for i := range 12 {
			k := h.key(fmt.Sprint("h", i))
			args := []string{}
			for f := range 1 + i%5 {
				args = append(args, fmt.Sprint("field", f), strings.Repeat(fmt.Sprint(i), 10+40*f))
			}
			h.create(k, args...)
			want[k] = h.do("HGETALL", k)
		}
	}
	victims := rotationWithOneVoter(t, c, []int{0, 1})
	for _, v := range victims {
		c.Kill(v)
	}
	c.FailOver(victims...)
	reader := c.AnyLive()
	check := func(when string) {
		for k, all := range want {
			var r resp.Reply
			c.Until("HGETALL "+k+" answers", func() (bool, string) {
				r = c.DoQuiet(reader, "HGETALL", k)
				return !strings.HasPrefix(r.Text(), "TRYAGAIN"), r.Text()
			})
			if got := simcluster.Render(r); got != all {
				t.Fatalf("HGETALL %s %s = %s, want %s", k, when, got, all)
			}
			if got := simcluster.Render(c.Do(reader, "TYPE", k)); got != "+hash" {
				t.Fatalf("TYPE %s %s = %s", k, when, got)
			}
		}
	}
	check("after the failover")
	c.Settle("rebuilt")
	check("after the rebuild")
	for k := range want {
		if got := simcluster.Render(c.Do(reader, "HINCRBY", k, "counter", "2")); got != ":2" {
			t.Fatalf("HINCRBY %s on the recovered hash = %s", k, got)
		}
	}
}
