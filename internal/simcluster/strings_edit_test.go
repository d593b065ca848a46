package simcluster_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/object"
)

// everyScheme is the scheme specs the command tests run on.
var everyScheme = []string{"none", "rep:3", "split:4+2", "stripe:4+2", "hybrid:4+2", "stripe:4+2@batch"}

// onScheme is how a command test on one scheme names its keys (one
// slot per scheme), runs commands on any live node and checks replies.
func onScheme(t *testing.T, c *simcluster.Cluster, spec string) (key func(string) string, do func(...string) string, check func(what, got, want string)) {
	key = func(name string) string { return fmt.Sprintf("%s:{%s}", name, spec) }
	do = func(args ...string) string { return simcluster.Render(c.Do(c.AnyLive(), args...)) }
	check = func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("%s = %s, want %s", what, got, want)
		}
	}
	return key, do, check
}

// setHash stores a hash value under key in spec through key's coordinator,
// as HSET would: the string commands must answer WRONGTYPE for it.
func setHash(t *testing.T, c *simcluster.Cluster, key, spec string, fields ...string) {
	t.Helper()
	n := c.Node(c.Coordinator(key))
	e, err := n.ResolveScheme(context.Background(), spec)
	if err == nil {
		err = n.Set(context.Background(), []byte(key), mustHash(fields...), 0, false, &e)
	}
	if err != nil {
		t.Fatalf("storing hash %s: %v", key, err)
	}
}

// SETRANGE, INCRBYFLOAT, LCS and APPEND (issue 28) on every scheme: the
// Redis 7 documentation's examples, Redis's error texts, the key's scheme
// and TTL kept, and refusals that change nothing.
func TestStringEditCommandsOnEveryScheme(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range everyScheme {
		t.Run(spec, func(t *testing.T) {
			key, do, check := onScheme(t, c, spec)
			// SETRANGE: the documentation's examples.
			k1, k2 := key("key1"), key("key2")
			check("SET", do("SET", k1, "Hello World", "SCHEME", spec, "EX", "100"), "+OK")
			check("SETRANGE", do("SETRANGE", k1, "6", "Redis"), ":11")
			check("GET", do("GET", k1), `"Hello Redis"`)
			check("SETRANGE pads", do("SETRANGE", k2, "6", "Redis"), ":11")
			check("GET", do("GET", k2), `"\x00\x00\x00\x00\x00\x00Redis"`)
			check("SETRANGE keeps the TTL", do("TTL", k1), ":100")
			check("SETRANGE keeps the scheme", specOf(t, c, k1), spec)
			check("SETRANGE empty on existing", do("SETRANGE", k1, "100", ""), ":11")
			check("SETRANGE empty on missing", do("SETRANGE", key("none"), "5", ""), ":0")
			check("EXISTS after empty SETRANGE", do("EXISTS", key("none")), ":0")
			check("SETRANGE -1", do("SETRANGE", k1, "-1", "x"), "-ERR offset is out of range")
			check("SETRANGE x", do("SETRANGE", k1, "x", "x"), "-ERR value is not an integer or out of range")
			check("SETRANGE too far", do("SETRANGE", k1, "536870911", "xy"), "-ERR string exceeds maximum allowed size (proto-max-bulk-len)")
			check("SETRANGE reserved", do("SETRANGE", key("res"), "0", "\x00\xffmgo\x01\x00\x01"), "-ERR memgest: a string value may not begin with the 8 bytes memgest reserves for typed values (\\x00\\xffmgo)")
			check("GET after refusals", do("GET", k1), `"Hello Redis"`)
			check("EXISTS after refusals", do("EXISTS", key("res")), ":0")

			// APPEND: the documentation's example, on a key of the scheme.
			ap := key("ap")
			check("SET", do("SET", ap, "Hello", "SCHEME", spec), "+OK")
			check("APPEND", do("APPEND", ap, " World"), ":11")
			check("GET", do("GET", ap), `"Hello World"`)
			check("APPEND keeps the scheme", specOf(t, c, ap), spec)

			// INCRBYFLOAT: the documentation's example.
			f := key("f")
			check("SET", do("SET", f, "10.50", "SCHEME", spec), "+OK")
			check("INCRBYFLOAT 0.1", do("INCRBYFLOAT", f, "0.1"), `"10.6"`)
			check("INCRBYFLOAT -5", do("INCRBYFLOAT", f, "-5"), `"5.6"`)
			check("SET", do("SET", f, "5.0e3"), "+OK")
			check("INCRBYFLOAT 2.0e2", do("INCRBYFLOAT", f, "2.0e2"), `"5200"`)
			check("INCRBYFLOAT keeps the scheme", specOf(t, c, f), spec)
			check("INCRBYFLOAT x", do("INCRBYFLOAT", f, "x"), "-ERR value is not a valid float")
			check("INCRBYFLOAT inf", do("INCRBYFLOAT", f, "inf"), "-ERR increment would produce NaN or Infinity")
			check("SET", do("SET", f, "1.18e4932"), "+OK")
			check("INCRBYFLOAT overflow", do("INCRBYFLOAT", f, "1.18e4932"), "-ERR increment would produce NaN or Infinity")
			check("GET after refusals", do("GET", f), `"1.18e4932"`)
			check("INCRBYFLOAT on a non-number", do("INCRBYFLOAT", ap, "1"), "-ERR value is not a valid float")
			check("INCRBYFLOAT new", do("INCRBYFLOAT", key("f2"), "-0.25"), `"-0.25"`)

			// LCS: the documentation's examples, on keys of one slot.
			l1, l2 := key("lcs1"), key("lcs2")
			check("SET", do("SET", l1, "ohmytext", "SCHEME", spec), "+OK")
			check("SET", do("SET", l2, "mynewtext", "SCHEME", spec), "+OK")
			check("LCS", do("LCS", l1, l2), `"mytext"`)
			check("LCS LEN", do("LCS", l1, l2, "LEN"), ":6")
			check("LCS IDX", do("LCS", l1, l2, "IDX"), `["matches" [[[:4 :7] [:5 :8]] [[:2 :3] [:0 :1]]] "len" :6]`)
			check("LCS IDX MINMATCHLEN 4 WITHMATCHLEN", do("LCS", l1, l2, "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"),
				`["matches" [[[:4 :7] [:5 :8] :4]] "len" :6]`)
			check("LCS with a missing key", do("LCS", l1, key("nolcs")), `""`)
			check("LCS LEN IDX", do("LCS", l1, l2, "LEN", "IDX"), "-ERR If you want both the length and indexes, please just use IDX.")
			check("LCS MINMATCHLEN x", do("LCS", l1, l2, "IDX", "MINMATCHLEN", "x"), "-ERR value is not an integer or out of range")
			check("LCS bogus", do("LCS", l1, l2, "FOO"), "-ERR syntax error")
			check("LCS across slots", do("LCS", l1, "other"), "-CROSSSLOT Keys in request don't hash to the same slot")

			// WRONGTYPE for a hash, which stays as it was.
			h := key("hash")
			setHash(t, c, h, spec, "f", "v")
			for _, args := range [][]string{{"SETRANGE", h, "0", "x"}, {"APPEND", h, "x"}, {"INCRBYFLOAT", h, "1"}} {
				check(args[0]+" on a hash", do(args...), "-WRONGTYPE Operation against a key holding the wrong kind of value")
			}
			check("LCS with a hash", do("LCS", h, l1), "-ERR The specified keys must contain string values")
			check("the hash after refusals", rawValue(t, c, h), string(mustHash("f", "v")))
		})
	}
}

// mustHash is the encoding of a hash of the given fields.
func mustHash(fields ...string) []byte {
	var h object.HashObject
	for i := 0; i+1 < len(fields); i += 2 {
		h.Set([]byte(fields[i]), []byte(fields[i+1]))
	}
	return h.Encode()
}

// rawValue is key's value as its coordinator reads it, whatever its type.
func rawValue(t *testing.T, c *simcluster.Cluster, key string) string {
	t.Helper()
	cur, err := c.Node(c.Coordinator(key)).Get(context.Background(), []byte(key))
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return string(cur.Value)
}
