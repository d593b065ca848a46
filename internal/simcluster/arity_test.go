package simcluster_test

import (
	"strings"
	"testing"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server/resp"
)

// Every command and subcommand with one argument too few, and the fixed-
// arity ones with one too many, answers Redis's arity error naming it
// (issue 28: "PING a b c" is an error in Redis); the commands of variable
// arity that Redis checks further in their bodies answer as Redis 7.2 does
// (each reply below was compared with a redis-server's).
func TestArityErrorsOfEveryCommand(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 3})
	arity := func(name string) string { return "-ERR wrong number of arguments for '" + name + "' command" }
	check := func(args []string, want string) {
		t.Helper()
		if got := simcluster.Render(c.DoQuiet(0, args...)); got != want {
			t.Errorf("%s = %s, want %s", strings.Join(args, " "), got, want)
		}
	}
	filled := func(base []string, n int) []string {
		out := append([]string(nil), base...)
		for len(out) < n {
			out = append(out, "x")
		}
		return out
	}
	var walk func(specs []*resp.CommandSpec)
	walk = func(specs []*resp.CommandSpec) {
		for _, s := range specs {
			base := strings.Split(s.Name, "|")
			need := max(s.Arity, -s.Arity)
			if need-1 >= len(base) {
				check(filled(base, need-1), arity(s.Name))
			}
			if s.Arity > 0 && s.Name != "quit" {
				check(filled(base, need+1), arity(s.Name))
			}
			walk(s.Subcommands)
		}
	}
	walk(resp.Commands())

	syntax := "-ERR syntax error"
	for _, tc := range []struct {
		line, want string
	}{
		{"PING a b", arity("ping")},
		{"PING a b c", arity("ping")},
		{"SET k v x", syntax},
		{"SET k v EX", syntax},
		{"GETEX k PERSIST x", syntax},
		{"EXPIRE k 1 x", "-ERR Unsupported option x"},
		{"SCAN 0 COUNT", syntax},
		{"HELLO 3 x", "-ERR Syntax error in HELLO option 'x'"},
		{"AUTH a b c", syntax},
		{"CLIENT LIST ID", syntax},
		{"CLIENT KILL x y z", syntax},
		{"COMMAND LIST x", syntax},
		{"CONFIG SET a b c", syntax},
		{"MSET a", arity("mset")},
		{"MSET a 1 b", arity("mset")},
		{"MSETNX a 1 b", arity("msetnx")},
		{"DBSIZE x", arity("dbsize")},
		{"KEYS a b", arity("keys")},
		{"LCS {t}a {t}b MINMATCHLEN", syntax},
		{"COPY {t}a {t}b REPLACE x", syntax},
		{"MEMORY USAGE k SAMPLES", syntax},
		{"FLUSHALL ASYNC SYNC", syntax},
	} {
		check(strings.Fields(tc.line), tc.want)
	}
}
