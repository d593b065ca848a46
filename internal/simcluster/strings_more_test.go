package simcluster_test

import (
	"fmt"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
)

// SETNX, SETEX, PSETEX, GETSET, GETRANGE and SUBSTR (issue 28) on every
// scheme: the replies and error texts of the Redis 7 documentation's
// examples, and bad input that changes nothing.
func TestStringFamilyCommandsOnEveryScheme(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6})
	for _, spec := range everyScheme {
		t.Run(spec, func(t *testing.T) {
			key, do, check := onScheme(t, c, spec)
			// GETRANGE: the documentation's example.
			k := key("mykey")
			check("SET", do("SET", k, "This is a string", "SCHEME", spec), "+OK")
			for _, tc := range [][3]string{{"0", "3", `"This"`}, {"-3", "-1", `"ing"`}, {"0", "-1", `"This is a string"`},
				{"10", "100", `"string"`}, {"5", "3", `""`}, {"-1", "-5", `""`}, {"-100", "2", `"Thi"`}} {
				check("GETRANGE "+tc[0]+" "+tc[1], do("GETRANGE", k, tc[0], tc[1]), tc[2])
				check("SUBSTR "+tc[0]+" "+tc[1], do("SUBSTR", k, tc[0], tc[1]), tc[2])
			}
			check("GETRANGE of a missing key", do("GETRANGE", key("nokey"), "0", "-1"), `""`)
			check("GETRANGE x", do("GETRANGE", k, "x", "1"), "-ERR value is not an integer or out of range")

			// SETNX: the documentation's example; the key keeps its scheme.
			nx := key("nx")
			check("SET", do("SET", nx, "old", "SCHEME", spec), "+OK")
			check("SETNX existing", do("SETNX", nx, "World"), ":0")
			check("GET", do("GET", nx), `"old"`)
			check("SETNX new", do("SETNX", key("nx2"), "Hello"), ":1")
			check("GET", do("GET", key("nx2")), `"Hello"`)

			// GETSET: the old value, then nil for a new key.
			check("GETSET", do("GETSET", nx, "new"), `"old"`)
			check("GET", do("GET", nx), `"new"`)
			check("GETSET missing", do("GETSET", key("gs"), "v"), "nil")
			check("SCHEME.OF keeps the scheme", fmt.Sprint(c.Do(c.AnyLive(), "SCHEME.OF", nx).Items()[3].Text()), spec)

			// SETEX / PSETEX, and their refusals, which change nothing.
			ex := key("ex")
			check("SET", do("SET", ex, "before", "SCHEME", spec), "+OK")
			check("SETEX", do("SETEX", ex, "10", "Hello"), "+OK")
			check("TTL", do("TTL", ex), ":10")
			check("GET", do("GET", ex), `"Hello"`)
			check("SETEX 0", do("SETEX", ex, "0", "x"), "-ERR invalid expire time in 'setex' command")
			check("SETEX -1", do("SETEX", ex, "-1", "x"), "-ERR invalid expire time in 'setex' command")
			check("SETEX huge", do("SETEX", ex, "9223372036854775807", "x"), "-ERR invalid expire time in 'setex' command")
			check("SETEX x", do("SETEX", ex, "ten", "x"), "-ERR value is not an integer or out of range")
			check("PSETEX 0", do("PSETEX", ex, "0", "x"), "-ERR invalid expire time in 'psetex' command")
			check("GET after refusals", do("GET", ex), `"Hello"`)
			check("PSETEX", do("PSETEX", ex, "100000", "Hi"), "+OK")
			check("TTL", do("TTL", ex), ":100")
			check("GET", do("GET", ex), `"Hi"`)

			// Arity, as Redis words it.
			check("SETNX k", do("SETNX", k), "-ERR wrong number of arguments for 'setnx' command")
			check("GETRANGE k 0", do("GETRANGE", k, "0"), "-ERR wrong number of arguments for 'getrange' command")
			check("SETEX k 1", do("SETEX", k, "1"), "-ERR wrong number of arguments for 'setex' command")
		})
	}
}
