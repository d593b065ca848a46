package resp

import (
	"math"
	"strings"
	"testing"
)

// argv splits a command line on spaces.
func argv(line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Split(line, " ") {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"123456", 123456, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551615", 0, false},
		{"18446744073709551619", 0, false}, // would wrap uint64 arithmetic
		{"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"00", 0, false}, {"01", 0, false},
		{"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1a", 0, false}, {"0x10", 0, false},
		{"1.0", 0, false}, {"1e3", 0, false}, {"--1", 0, false}, {"000000000000000000001", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseInt([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if _, r := IntArg([]byte("x")); !r.Equal(ErrNotInteger) {
		t.Errorf("IntArg error %v", r)
	}
}

const invalidSet = "ERR invalid expire time in 'set' command"

func TestParseSet(t *testing.T) {
	cases := []struct {
		line string
		want SetArgs
		err  string
	}{
		{"SET k v", SetArgs{}, ""},
		{"set k v nx", SetArgs{NX: true}, ""},
		{"SET k v XX GET", SetArgs{XX: true, Get: true}, ""},
		{"SET k v NX GET", SetArgs{NX: true, Get: true}, ""},
		{"SET k v NX NX", SetArgs{NX: true}, ""},
		{"SET k v EX 10", SetArgs{ExpireMode: ExpireEX, ExpireValue: 10}, ""},
		{"SET k v px 1500", SetArgs{ExpireMode: ExpirePX, ExpireValue: 1500}, ""},
		{"SET k v EXAT 1700000000", SetArgs{ExpireMode: ExpireEXAT, ExpireValue: 1700000000}, ""},
		{"SET k v PXAT 1700000000000", SetArgs{ExpireMode: ExpirePXAT, ExpireValue: 1700000000000}, ""},
		{"SET k v EX 10 EX 20", SetArgs{ExpireMode: ExpireEX, ExpireValue: 20}, ""},
		{"SET k v KEEPTTL", SetArgs{KeepTTL: true}, ""},
		{"SET k v KEEPTTL KEEPTTL XX", SetArgs{KeepTTL: true, XX: true}, ""},
		{"SET k v SCHEME rep3", SetArgs{Scheme: "rep3"}, ""},
		{"SET k v scheme a EX 5 SCHEME b", SetArgs{Scheme: "b", ExpireMode: ExpireEX, ExpireValue: 5}, ""},
		{"SET k v EX 9223372036854775", SetArgs{ExpireMode: ExpireEX, ExpireValue: 9223372036854775}, ""},
		{"SET k v PX 9223372036854775807", SetArgs{ExpireMode: ExpirePX, ExpireValue: math.MaxInt64}, ""},
		// Syntax errors.
		{"SET k v NX XX", SetArgs{}, "ERR syntax error"},
		{"SET k v XX NX", SetArgs{}, "ERR syntax error"},
		{"SET k v EX 10 PX 10", SetArgs{}, "ERR syntax error"},
		{"SET k v EXAT 10 PXAT 10", SetArgs{}, "ERR syntax error"},
		{"SET k v EX 10 KEEPTTL", SetArgs{}, "ERR syntax error"},
		{"SET k v KEEPTTL PX 10", SetArgs{}, "ERR syntax error"},
		{"SET k v EX", SetArgs{}, "ERR syntax error"},
		{"SET k v SCHEME", SetArgs{}, "ERR syntax error"},
		{"SET k v PERSIST", SetArgs{}, "ERR syntax error"},
		{"SET k v FOO", SetArgs{}, "ERR syntax error"},
		{"SET k v EX abc FOO", SetArgs{}, "ERR syntax error"}, // syntax is checked before the value
		// Value errors.
		{"SET k v EX abc", SetArgs{}, "ERR value is not an integer or out of range"},
		{"SET k v EX NX", SetArgs{}, "ERR value is not an integer or out of range"},
		{"SET k v PX 1.5", SetArgs{}, "ERR value is not an integer or out of range"},
		{"SET k v EX 0", SetArgs{}, invalidSet},
		{"SET k v PX -5", SetArgs{}, invalidSet},
		{"SET k v EXAT 0", SetArgs{}, invalidSet},
		{"SET k v EX 9223372036854776", SetArgs{}, invalidSet},
		{"SET k v EXAT 9223372036854776", SetArgs{}, invalidSet},
		{"SET k", SetArgs{}, "ERR wrong number of arguments for 'set' command"},
	}
	for _, c := range cases {
		got, r := ParseSet(argv(c.line))
		if r.Text() != c.err || got != c.want {
			t.Errorf("%s: %+v %q; want %+v %q", c.line, got, r.Text(), c.want, c.err)
		}
		if c.err != "" && !r.IsError() {
			t.Errorf("%s: reply is not an error", c.line)
		}
	}
}

func TestSetExpireAt(t *testing.T) {
	const now = 1_700_000_000_000
	cases := []struct {
		a    SetArgs
		want int64
		ok   bool
	}{
		{SetArgs{}, 0, true},
		{SetArgs{KeepTTL: true}, 0, true},
		{SetArgs{ExpireMode: ExpireEX, ExpireValue: 10}, now + 10_000, true},
		{SetArgs{ExpireMode: ExpirePX, ExpireValue: 10}, now + 10, true},
		{SetArgs{ExpireMode: ExpireEXAT, ExpireValue: 5}, 5000, true},
		{SetArgs{ExpireMode: ExpirePXAT, ExpireValue: 5}, 5, true},
		{SetArgs{ExpireMode: ExpirePX, ExpireValue: math.MaxInt64 - now}, math.MaxInt64, true},
		{SetArgs{ExpireMode: ExpirePX, ExpireValue: math.MaxInt64 - now + 1}, 0, false},
		{SetArgs{ExpireMode: ExpireEX, ExpireValue: math.MaxInt64 / 1000}, 0, false},
		{SetArgs{ExpireMode: ExpirePXAT, ExpireValue: math.MaxInt64}, math.MaxInt64, true},
	}
	for _, c := range cases {
		got, ok := c.a.ExpireAt(now)
		if got != c.want || ok != c.ok {
			t.Errorf("%+v: %d %v, want %d %v", c.a, got, ok, c.want, c.ok)
		}
	}
}

func TestParseGetEx(t *testing.T) {
	const now = 1_000_000
	cases := []struct {
		line      string
		mode      ExpireMode
		persist   bool
		syntaxErr string
		at        int64
		valueErr  string
	}{
		{"GETEX k", ExpireNone, false, "", 0, ""},
		{"GETEX k PERSIST", ExpireNone, true, "", 0, ""},
		{"getex k persist PERSIST", ExpireNone, true, "", 0, ""},
		{"GETEX k EX 10", ExpireEX, false, "", now + 10_000, ""},
		{"GETEX k PX 10", ExpirePX, false, "", now + 10, ""},
		{"GETEX k EXAT 10", ExpireEXAT, false, "", 10_000, ""},
		{"GETEX k PXAT 10", ExpirePXAT, false, "", 10, ""},
		{"GETEX k PX 5 PX 7", ExpirePX, false, "", now + 7, ""},
		{"GETEX k EX 10 PERSIST", 0, false, "ERR syntax error", 0, ""},
		{"GETEX k PERSIST EX 10", 0, false, "ERR syntax error", 0, ""},
		{"GETEX k EX 1 PX 1", 0, false, "ERR syntax error", 0, ""},
		{"GETEX k EX", 0, false, "ERR syntax error", 0, ""},
		{"GETEX k NX", 0, false, "ERR syntax error", 0, ""},
		{"GETEX k KEEPTTL", 0, false, "ERR syntax error", 0, ""},
		{"GETEX k GET", 0, false, "ERR syntax error", 0, ""},
		// Value errors come later, from ExpireAt.
		{"GETEX k EX x", ExpireEX, false, "", 0, "ERR value is not an integer or out of range"},
		{"GETEX k EX 0", ExpireEX, false, "", 0, "ERR invalid expire time in 'getex' command"},
		{"GETEX k EXAT -1", ExpireEXAT, false, "", 0, "ERR invalid expire time in 'getex' command"},
		{"GETEX k EX 9223372036854776", ExpireEX, false, "", 0, "ERR invalid expire time in 'getex' command"},
		{"GETEX k PX 9223372036854775807", ExpirePX, false, "", 0, "ERR invalid expire time in 'getex' command"},
	}
	for _, c := range cases {
		a, r := ParseGetEx(argv(c.line))
		if r.Text() != c.syntaxErr || a.ExpireMode != c.mode || a.Persist != c.persist {
			t.Errorf("%s: %+v %q; want mode %v persist %v %q", c.line, a, r.Text(), c.mode, c.persist, c.syntaxErr)
			continue
		}
		if r.IsError() {
			continue
		}
		at, r := a.ExpireAt(now)
		if at != c.at || r.Text() != c.valueErr {
			t.Errorf("%s: ExpireAt %d %q; want %d %q", c.line, at, r.Text(), c.at, c.valueErr)
		}
	}
}

func TestParseExpire(t *testing.T) {
	const now = 1_000_000
	incompatible := "ERR NX and XX, GT or LT options at the same time are not compatible"
	cases := []struct {
		line string
		want ExpireArgs
		err  string
	}{
		{"EXPIRE k 10", ExpireArgs{At: now + 10_000}, ""},
		{"expire k -10", ExpireArgs{At: now - 10_000}, ""},
		{"PEXPIRE k 10", ExpireArgs{At: now + 10}, ""},
		{"EXPIREAT k 10", ExpireArgs{At: 10_000}, ""},
		{"PEXPIREAT k 10", ExpireArgs{At: 10}, ""},
		{"PEXPIREAT k -9223372036854775808", ExpireArgs{At: math.MinInt64}, ""},
		{"EXPIRE k 10 NX", ExpireArgs{NX: true, At: now + 10_000}, ""},
		{"EXPIRE k 10 xx gt", ExpireArgs{XX: true, GT: true, At: now + 10_000}, ""},
		{"EXPIRE k 10 XX LT", ExpireArgs{XX: true, LT: true, At: now + 10_000}, ""},
		{"EXPIRE k 10 GT GT", ExpireArgs{GT: true, At: now + 10_000}, ""},
		{"EXPIRE k 10 NX XX", ExpireArgs{}, incompatible},
		{"EXPIRE k 10 NX GT", ExpireArgs{}, incompatible},
		{"EXPIRE k 10 LT NX", ExpireArgs{}, incompatible},
		{"EXPIRE k 10 GT LT", ExpireArgs{}, "ERR GT and LT options at the same time are not compatible"},
		{"EXPIRE k 10 FOO", ExpireArgs{}, "ERR Unsupported option FOO"},
		{"EXPIRE k 10 NX foo XX", ExpireArgs{}, "ERR Unsupported option foo"},
		{"EXPIRE k abc FOO", ExpireArgs{}, "ERR Unsupported option FOO"}, // options before the value
		{"EXPIRE k abc", ExpireArgs{}, "ERR value is not an integer or out of range"},
		{"EXPIRE k 9223372036854776", ExpireArgs{}, "ERR invalid expire time in 'expire' command"},
		{"EXPIREAT k -9223372036854776", ExpireArgs{}, "ERR invalid expire time in 'expireat' command"},
		{"PEXPIRE k 9223372036854775807", ExpireArgs{}, "ERR invalid expire time in 'pexpire' command"},
		{"PEXPIREAT k 9223372036854775807", ExpireArgs{At: math.MaxInt64}, ""},
		{"EXPIRE k", ExpireArgs{}, "ERR wrong number of arguments for 'expire' command"},
		{"TOUCH k 1", ExpireArgs{}, "ERR unknown command 'TOUCH', with args beginning with: 'k' '1' "},
	}
	for _, c := range cases {
		got, r := ParseExpire(argv(c.line), now)
		if got != c.want || r.Text() != c.err {
			t.Errorf("%s: %+v %q; want %+v %q", c.line, got, r.Text(), c.want, c.err)
		}
	}
}

func TestParseScan(t *testing.T) {
	cases := []struct {
		line  string
		want  ScanArgs
		match string
		err   string
	}{
		{"SCAN 0", ScanArgs{Count: 10}, "", ""},
		{"SCAN 17 MATCH user:* COUNT 100 TYPE string", ScanArgs{Cursor: 17, Count: 100, Type: "string"}, "user:*", ""},
		{"scan 0 match * count 5", ScanArgs{Count: 5}, "", ""},
		{"SCAN 0 MATCH a MATCH *", ScanArgs{Count: 10}, "", ""},
		{"SCAN 0 MATCH * MATCH a", ScanArgs{Count: 10}, "a", ""},
		{"SCAN 0 COUNT 1 COUNT 7", ScanArgs{Count: 7}, "", ""},
		{"SCAN 18446744073709551615", ScanArgs{Cursor: math.MaxUint64, Count: 10}, "", ""},
		{"SCAN +5", ScanArgs{Cursor: 5, Count: 10}, "", ""},
		{"SCAN 007", ScanArgs{Cursor: 7, Count: 10}, "", ""},
		{"SCAN -1", ScanArgs{Cursor: math.MaxUint64, Count: 10}, "", ""},
		{"SCAN -18446744073709551615", ScanArgs{Cursor: 1, Count: 10}, "", ""},
		{"SCAN ", ScanArgs{Count: 10}, "", ""},
		{"SCAN 5\x00junk", ScanArgs{Cursor: 5, Count: 10}, "", ""},
		{"SCAN 18446744073709551616", ScanArgs{}, "", "ERR invalid cursor"},
		{"SCAN abc", ScanArgs{}, "", "ERR invalid cursor"},
		{"SCAN 5a", ScanArgs{}, "", "ERR invalid cursor"},
		{"SCAN 0x10", ScanArgs{}, "", "ERR invalid cursor"},
		{"SCAN -", ScanArgs{}, "", "ERR invalid cursor"},
		{"SCAN \t5", ScanArgs{}, "", "ERR invalid cursor"},
		{"SCAN 1.5", ScanArgs{}, "", "ERR invalid cursor"},
		{"SCAN 0 COUNT 0", ScanArgs{}, "", "ERR syntax error"},
		{"SCAN 0 COUNT -1", ScanArgs{}, "", "ERR syntax error"},
		{"SCAN 0 COUNT x", ScanArgs{}, "", "ERR value is not an integer or out of range"},
		{"SCAN 0 COUNT", ScanArgs{}, "", "ERR syntax error"},
		{"SCAN 0 MATCH", ScanArgs{}, "", "ERR syntax error"},
		{"SCAN 0 FOO bar", ScanArgs{}, "", "ERR syntax error"},
		{"SCAN x COUNT 0", ScanArgs{}, "", "ERR invalid cursor"}, // the cursor is checked first
		{"SCAN 3 CLUSTER", ScanArgs{Cursor: 3, Count: 10, Cluster: true}, "", ""},
		{"SCAN 0 cluster MATCH a* COUNT 5", ScanArgs{Count: 5, Cluster: true}, "a*", ""},
		{"SCAN 0 MATCH a* CLUSTER COUNT 5", ScanArgs{Count: 5, Cluster: true}, "a*", ""},
		{"SCAN 0 TYPE string CLUSTER", ScanArgs{Count: 10, Type: "string", Cluster: true}, "", ""},
		{"SCAN 0 MATCH CLUSTER", ScanArgs{Count: 10}, "CLUSTER", ""}, // a pattern, not the option
		{"SCAN 0 TYPE CLUSTER", ScanArgs{Count: 10, Type: "CLUSTER"}, "", ""},
		{"SCAN 0 CLUSTER COUNT", ScanArgs{}, "", "ERR syntax error"},
		{"SCAN 0 CLUSTERS", ScanArgs{}, "", "ERR syntax error"},
	}
	for _, c := range cases {
		args := argv(c.line)
		if c.line == "SCAN \t5" {
			args = [][]byte{[]byte("SCAN"), []byte("\t5")}
		}
		got, r := ParseScan(args)
		if got.Cursor != c.want.Cursor || got.Count != c.want.Count || got.Type != c.want.Type ||
			got.Cluster != c.want.Cluster || string(got.Match) != c.match || r.Text() != c.err {
			t.Errorf("%q: %+v match %q %q; want %+v match %q %q", c.line, got, got.Match, r.Text(), c.want, c.match, c.err)
		}
		if c.match == "" && got.Match != nil {
			t.Errorf("%q: Match should be nil", c.line)
		}
	}
}

func TestParseKeyspaceCluster(t *testing.T) {
	cases := []struct {
		line    string
		cluster bool
		err     string
	}{
		{"DBSIZE", false, ""},
		{"DBSIZE CLUSTER", true, ""},
		{"dbsize cluster", true, ""},
		{"DBSIZE CLUSTER CLUSTER", false, "ERR wrong number of arguments for 'dbsize' command"},
		{"DBSIZE ASYNC", false, "ERR wrong number of arguments for 'dbsize' command"},
		{"FLUSHALL", false, ""},
		{"FLUSHALL ASYNC", false, ""},
		{"FLUSHALL sync", false, ""},
		{"FLUSHALL CLUSTER", true, ""},
		{"FLUSHDB ASYNC CLUSTER", true, ""},
		{"FLUSHALL cluster SYNC", true, ""},
		{"FLUSHALL ASYNC SYNC", false, "ERR syntax error"},
		{"FLUSHALL CLUSTER CLUSTER", false, "ERR syntax error"},
		{"FLUSHALL NOW", false, "ERR syntax error"},
	}
	for _, c := range cases {
		args := argv(c.line)
		parse := ParseFlush
		if equalFold(args[0], "dbsize") {
			parse = ParseDBSize
		}
		cluster, r := parse(args)
		if cluster != c.cluster || r.Text() != c.err {
			t.Errorf("%q: cluster %v %q; want %v %q", c.line, cluster, r.Text(), c.cluster, c.err)
		}
	}
}
