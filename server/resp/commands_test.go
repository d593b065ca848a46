package resp

import (
	"slices"
	"strings"
	"testing"
)

// redisTable is what Redis 7.2's COMMAND INFO reports for each command:
// arity, first key, last key, step and flags.
var redisTable = []struct {
	name                  string
	arity, first, last, s int
	flags                 string
}{
	{"get", 2, 1, 1, 1, "readonly fast"},
	{"set", -3, 1, 1, 1, "write denyoom"},
	{"getdel", 2, 1, 1, 1, "write fast"},
	{"getex", -2, 1, 1, 1, "write fast"},
	{"del", -2, 1, -1, 1, "write"},
	{"unlink", -2, 1, -1, 1, "write fast"},
	{"exists", -2, 1, -1, 1, "readonly fast"},
	{"mget", -2, 1, -1, 1, "readonly fast"},
	{"mset", -3, 1, -1, 2, "write denyoom"},
	{"msetnx", -3, 1, -1, 2, "write denyoom"},
	{"incr", 2, 1, 1, 1, "write denyoom fast"},
	{"incrby", 3, 1, 1, 1, "write denyoom fast"},
	{"decr", 2, 1, 1, 1, "write denyoom fast"},
	{"decrby", 3, 1, 1, 1, "write denyoom fast"},
	{"append", 3, 1, 1, 1, "write denyoom fast"},
	{"strlen", 2, 1, 1, 1, "readonly fast"},
	{"setnx", 3, 1, 1, 1, "write denyoom fast"},
	{"setex", 4, 1, 1, 1, "write denyoom"},
	{"psetex", 4, 1, 1, 1, "write denyoom"},
	{"getset", 3, 1, 1, 1, "write denyoom fast"},
	{"getrange", 4, 1, 1, 1, "readonly"},
	{"substr", 4, 1, 1, 1, "readonly"},
	{"hset", -4, 1, 1, 1, "write denyoom fast"},
	{"hmset", -4, 1, 1, 1, "write denyoom fast"},
	{"hsetnx", 4, 1, 1, 1, "write denyoom fast"},
	{"hget", 3, 1, 1, 1, "readonly fast"},
	{"hmget", -3, 1, 1, 1, "readonly fast"},
	{"hgetall", 2, 1, 1, 1, "readonly"},
	{"hkeys", 2, 1, 1, 1, "readonly"},
	{"hvals", 2, 1, 1, 1, "readonly"},
	{"hdel", -3, 1, 1, 1, "write fast"},
	{"hexists", 3, 1, 1, 1, "readonly fast"},
	{"hlen", 2, 1, 1, 1, "readonly fast"},
	{"hstrlen", 3, 1, 1, 1, "readonly fast"},
	{"hincrby", 4, 1, 1, 1, "write denyoom fast"},
	{"hincrbyfloat", 4, 1, 1, 1, "write denyoom fast"},
	{"hscan", -3, 1, 1, 1, "readonly"},
	{"hrandfield", -2, 1, 1, 1, "readonly"},
	{"setrange", 4, 1, 1, 1, "write denyoom"},
	{"incrbyfloat", 3, 1, 1, 1, "write denyoom fast"},
	{"lcs", -3, 1, 2, 1, "readonly"},
	{"expire", -3, 1, 1, 1, "write fast"},
	{"pexpire", -3, 1, 1, 1, "write fast"},
	{"expireat", -3, 1, 1, 1, "write fast"},
	{"pexpireat", -3, 1, 1, 1, "write fast"},
	{"ttl", 2, 1, 1, 1, "readonly fast"},
	{"pttl", 2, 1, 1, 1, "readonly fast"},
	{"persist", 2, 1, 1, 1, "write fast"},
	{"type", 2, 1, 1, 1, "readonly fast"},
	{"scan", -2, 0, 0, 0, "readonly"},
	{"rename", 3, 1, 2, 1, "write"},
	{"renamenx", 3, 1, 2, 1, "write fast"},
	{"copy", -3, 1, 2, 1, "write denyoom"},
	{"keys", -2, 0, 0, 0, "readonly"}, // Redis: 2; memgest adds KEYS pattern CLUSTER (decision 0004)
	{"randomkey", 1, 0, 0, 0, "readonly"},
	{"touch", -2, 1, -1, 1, "readonly fast"},
	{"expiretime", 2, 1, 1, 1, "readonly fast"},
	{"pexpiretime", 2, 1, 1, 1, "readonly fast"},
	{"wait", 3, 0, 0, 0, ""},
	{"object", -2, 0, 0, 0, ""},
	{"object|encoding", 3, 2, 2, 1, "readonly"},
	{"object|freq", 3, 2, 2, 1, "readonly"},
	{"object|idletime", 3, 2, 2, 1, "readonly"},
	{"object|refcount", 3, 2, 2, 1, "readonly"},
	{"object|help", 2, 0, 0, 0, "loading stale"},
	{"memory", -2, 0, 0, 0, ""},
	{"memory|usage", -3, 2, 2, 1, "readonly"},
	{"memory|help", 2, 0, 0, 0, "loading stale"},
	{"time", 1, 0, 0, 0, "loading stale fast"},
	{"dbsize", -1, 0, 0, 0, "readonly fast"}, // Redis: 1; memgest adds DBSIZE CLUSTER (decision 0004)
	{"flushall", -1, 0, 0, 0, "write"},
	{"flushdb", -1, 0, 0, 0, "write"},
	{"ping", -1, 0, 0, 0, "fast"},
	{"echo", 2, 0, 0, 0, "loading stale fast"},
	{"hello", -1, 0, 0, 0, "noscript loading stale fast no_auth allow_busy"},
	{"auth", -2, 0, 0, 0, "noscript loading stale fast no_auth allow_busy"},
	{"select", 2, 0, 0, 0, "loading stale fast"},
	{"client", -2, 0, 0, 0, ""},
	{"command", -1, 0, 0, 0, "loading stale"},
	{"debug", -2, 0, 0, 0, "admin noscript loading stale"},
	{"config", -2, 0, 0, 0, ""},
	{"info", -1, 0, 0, 0, "loading stale"},
	{"quit", -1, 0, 0, 0, "noscript loading stale fast no_auth allow_busy"},
	{"cluster", -2, 0, 0, 0, ""},
	{"readonly", 1, 0, 0, 0, "loading stale fast"},
	{"readwrite", 1, 0, 0, 0, "loading stale fast"},
	{"client|list", -2, 0, 0, 0, "admin noscript loading stale"},
	{"client|setinfo", 4, 0, 0, 0, "noscript loading stale"},
	{"config|get", -3, 0, 0, 0, "admin noscript loading stale"},
	{"cluster|slots", 2, 0, 0, 0, "loading stale"},
	{"cluster|keyslot", 3, 0, 0, 0, "stale"},
	{"command|info", -2, 0, 0, 0, "loading stale"},
	// Pub/Sub (Redis 7.2's COMMAND INFO) and RESET.
	{"subscribe", -2, 0, 0, 0, "pubsub noscript loading stale"},
	{"unsubscribe", -1, 0, 0, 0, "pubsub noscript loading stale"},
	{"psubscribe", -2, 0, 0, 0, "pubsub noscript loading stale"},
	{"punsubscribe", -1, 0, 0, 0, "pubsub noscript loading stale"},
	{"publish", 3, 0, 0, 0, "pubsub loading stale fast"},
	{"spublish", 3, 1, 1, 1, "pubsub loading stale fast"},
	{"ssubscribe", -2, 1, -1, 1, "pubsub noscript loading stale"},
	{"sunsubscribe", -1, 1, -1, 1, "pubsub noscript loading stale"},
	{"pubsub", -2, 0, 0, 0, ""},
	{"pubsub|channels", -2, 0, 0, 0, "pubsub loading stale"},
	{"pubsub|numsub", -2, 0, 0, 0, "pubsub loading stale"},
	{"pubsub|numpat", 2, 0, 0, 0, "pubsub loading stale"},
	{"pubsub|shardchannels", -2, 0, 0, 0, "pubsub loading stale"},
	{"pubsub|shardnumsub", -2, 0, 0, 0, "pubsub loading stale"},
	{"pubsub|help", 2, 0, 0, 0, "loading stale"},
	{"reset", 1, 0, 0, 0, "noscript loading stale fast no_auth allow_busy"},
	{"multi", 1, 0, 0, 0, "noscript loading stale fast allow_busy"},
	{"exec", 1, 0, 0, 0, "noscript loading stale skip_slowlog"},
	{"discard", 1, 0, 0, 0, "noscript loading stale fast allow_busy"},
	{"watch", -2, 1, -1, 1, "noscript loading stale fast allow_busy"},
	{"unwatch", 1, 0, 0, 0, "noscript loading stale fast allow_busy"},
	// memgest's own.
	{"scheme", -2, 0, 0, 0, ""},
	{"scheme|create", 4, 0, 0, 0, "write noscript"},
	{"scheme|list", 2, 0, 0, 0, "readonly loading stale"},
	{"scheme|info", 3, 0, 0, 0, "readonly loading stale"},
	{"scheme|drop", 3, 0, 0, 0, "write noscript"},
	{"scheme|default", -2, 0, 0, 0, "write noscript"},
	{"scheme|of", 3, 2, 2, 1, "readonly fast"},
	{"scheme|move", 4, 2, 2, 1, "write denyoom"},
	{"scheme|policy", -2, 0, 0, 0, "write noscript"},
	{"scheme.create", 3, 0, 0, 0, "write noscript"},
	{"scheme.list", 1, 0, 0, 0, "readonly loading stale"},
	{"scheme.info", 2, 0, 0, 0, "readonly loading stale"},
	{"scheme.drop", 2, 0, 0, 0, "write noscript"},
	{"scheme.default", -1, 0, 0, 0, "write noscript"},
	{"scheme.of", 2, 1, 1, 1, "readonly fast"},
	{"scheme.verify", 2, 1, 1, 1, "readonly"},
	{"scheme.move", 3, 1, 1, 1, "write denyoom"},
	{"scheme.policy", -1, 0, 0, 0, "write noscript"},
	{"rebalance", -1, 0, 0, 0, "write noscript"},
	{"node.promote", 2, 0, 0, 0, "write noscript"},
	{"node.drain", -2, 0, 0, 0, "write noscript"},
}

func TestCommandTable(t *testing.T) {
	for _, w := range redisTable {
		s, ok := lookupFullName(w.name)
		if !ok {
			t.Errorf("%s missing", w.name)
			continue
		}
		if s.Arity != w.arity || s.FirstKey != w.first || s.LastKey != w.last || s.Step != w.s {
			t.Errorf("%s: arity %d keys %d,%d,%d; want %d %d,%d,%d", w.name,
				s.Arity, s.FirstKey, s.LastKey, s.Step, w.arity, w.first, w.last, w.s)
		}
		if got := strings.Join(s.Flags, " "); got != w.flags {
			t.Errorf("%s: flags %q, want %q", w.name, got, w.flags)
		}
	}
	// And the other way: every command served has its row above.
	listed := map[string]bool{}
	for _, w := range redisTable {
		listed[w.name] = true
	}
	for _, c := range Commands() {
		if !listed[c.Name] {
			t.Errorf("%s: served but has no row in redisTable", c.Name)
		}
	}
}

func TestACLCategories(t *testing.T) {
	want := map[string]string{
		"get":          "@read @string @fast",
		"set":          "@write @string @slow",
		"del":          "@keyspace @write @slow",
		"exists":       "@keyspace @read @fast",
		"scan":         "@keyspace @read @slow",
		"flushall":     "@keyspace @write @slow @dangerous",
		"info":         "@slow @dangerous",
		"auth":         "@fast @connection",
		"command":      "@slow @connection",
		"client":       "@slow",
		"config|get":   "@admin @slow @dangerous",
		"client|kill":  "@admin @slow @dangerous @connection",
		"scheme|of":    "@read @fast",
		"subscribe":    "@pubsub @slow",
		"publish":      "@pubsub @fast",
		"pubsub|help":  "@slow",
		"reset":        "@fast @connection",
		"keys":         "@keyspace @read @slow @dangerous",
		"wait":         "@slow @connection",
		"time":         "@fast",
		"memory|usage": "@read @slow",
		"object|help":  "@keyspace @slow",
		"incrbyfloat":  "@write @string @fast",
		"rename":       "@keyspace @write @slow",
		"watch":        "@fast @transaction",
		"exec":         "@slow @transaction",
	}
	for name, cats := range want {
		s, _ := lookupFullName(name)
		if got := strings.Join(s.ACLCategories, " "); got != cats {
			t.Errorf("%s: %q, want %q", name, got, cats)
		}
	}
}

// Every spec, subcommands included, is internally consistent.
func TestCommandSpecsConsistent(t *testing.T) {
	var check func(specs []*CommandSpec, parent *CommandSpec)
	check = func(specs []*CommandSpec, parent *CommandSpec) {
		if !slices.IsSortedFunc(specs, func(a, b *CommandSpec) int { return strings.Compare(a.Name, b.Name) }) {
			t.Errorf("specs under %v not sorted", parent)
		}
		for _, s := range specs {
			checkSpec(t, s, parent)
			check(s.Subcommands, s)
		}
	}
	check(Commands(), nil)
}

func checkSpec(t *testing.T, s *CommandSpec, parent *CommandSpec) {
	t.Helper()
	if s.Parent != parent {
		t.Errorf("%s: wrong parent", s.Name)
	}
	if parent != nil && !strings.HasPrefix(s.Name, parent.Name+"|") {
		t.Errorf("%s: not named after %s", s.Name, parent.Name)
	}
	if s.Name != strings.ToLower(s.Name) || s.Summary == "" || s.Since == "" || s.Group == "" {
		t.Errorf("%s: name case or documentation missing", s.Name)
	}
	if s.Arity == 0 || (parent != nil && s.Arity > 0 && s.Arity < 2) {
		t.Errorf("%s: arity %d", s.Name, s.Arity)
	}
	// The legacy range is the key specs seen the legacy way: one spec, or
	// single keys at consecutive positions (RENAME, COPY), which Redis's
	// populateCommandLegacyRangeSpec merges into one range.
	switch len(s.KeySpecs) {
	case 0:
		if s.FirstKey != 0 || s.LastKey != 0 || s.Step != 0 {
			t.Errorf("%s: key range without key specs", s.Name)
		}
	case 1:
		k := s.KeySpecs[0]
		last := k.LastKey
		if last >= 0 {
			last += k.BeginIndex
		}
		if s.FirstKey != k.BeginIndex || s.LastKey != last || s.Step != k.KeyStep {
			t.Errorf("%s: range %d,%d,%d disagrees with key spec %+v", s.Name, s.FirstKey, s.LastKey, s.Step, k)
		}
	default:
		for i, k := range s.KeySpecs {
			if k.LastKey != 0 || k.BeginIndex != s.FirstKey+i {
				t.Errorf("%s: key spec %+v is not a single key after the one before", s.Name, k)
			}
		}
		if s.LastKey != s.FirstKey+len(s.KeySpecs)-1 || s.Step != 1 {
			t.Errorf("%s: range %d,%d,%d disagrees with its key specs", s.Name, s.FirstKey, s.LastKey, s.Step)
		}
	}
	// Shard channels are not_key specs: neither read nor written; WATCH is
	// keyed but neither, as in Redis: it reads nothing a client sees.
	if s.Has(FlagWrite) == s.Has(FlagReadOnly) && len(s.KeySpecs) > 0 && !slices.Contains(s.KeySpecs[0].Flags, "not_key") && s.Name != "watch" {
		t.Errorf("%s: a keyed command must be exactly one of write and readonly", s.Name)
	}
	cats := strings.Join(s.ACLCategories, " ")
	if s.Has(FlagFast) == strings.Contains(cats, "@slow") || !strings.Contains(cats, "@fast") && !strings.Contains(cats, "@slow") {
		t.Errorf("%s: fast flag and categories %q disagree", s.Name, cats)
	}
	if s.Has(FlagWrite) != strings.Contains(cats, "@write") || s.Has(FlagReadOnly) != strings.Contains(cats, "@read") {
		t.Errorf("%s: write/readonly flags and categories %q disagree", s.Name, cats)
	}
	if (s.DeprecatedSince != "") != slices.Contains(s.DocFlags, "deprecated") {
		t.Errorf("%s: deprecation fields disagree", s.Name)
	}
	for _, f := range s.Flags {
		if !s.HasFlag(f) {
			t.Errorf("%s: HasFlag(%q) false", s.Name, f)
		}
	}
}

// The dotted SCHEME commands are the subcommands one position earlier.
func TestDottedSchemeCommands(t *testing.T) {
	scheme, _ := Lookup([]byte("scheme"))
	for _, sub := range scheme.Subcommands {
		short := strings.TrimPrefix(sub.Name, "scheme|")
		d, ok := Lookup([]byte("scheme." + short))
		if short == "help" {
			if ok {
				t.Error("scheme.help should not exist")
			}
			continue
		}
		if !ok {
			t.Errorf("scheme.%s missing", short)
			continue
		}
		wantArity := sub.Arity - 1
		if sub.Arity < 0 {
			wantArity = sub.Arity + 1
		}
		if d.Arity != wantArity || !slices.Equal(d.Flags, sub.Flags) || d.Summary != sub.Summary {
			t.Errorf("%s disagrees with %s", d.Name, sub.Name)
		}
		args := argv("scheme." + short + " k x y")
		full := argv("scheme " + short + " k x y")
		if !slices.EqualFunc(d.Keys(args), sub.Keys(full), func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Errorf("%s: keys %q vs %q", d.Name, d.Keys(args), sub.Keys(full))
		}
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"get", "GET", "GeT", "scheme.OF", "CLIENT"} {
		if s, ok := Lookup([]byte(name)); !ok || s.Name != strings.ToLower(name) {
			t.Errorf("Lookup(%q) = %v, %v", name, s, ok)
		}
	}
	for _, name := range []string{"", "nosuch", "client|list", "list", strings.Repeat("g", 100)} {
		if _, ok := Lookup([]byte(name)); ok {
			t.Errorf("Lookup(%q) found something", name)
		}
	}
	name := []byte("MGET")
	if allocs := testing.AllocsPerRun(100, func() { Lookup(name) }); allocs != 0 {
		t.Errorf("Lookup allocates %v times", allocs)
	}
	vec := argv("CLIENT SETNAME app")
	if allocs := testing.AllocsPerRun(100, func() { Resolve(vec) }); allocs != 0 {
		t.Errorf("Resolve allocates %v times", allocs)
	}
	client, _ := Lookup([]byte("client"))
	if s, ok := client.Subcommand([]byte("SetName")); !ok || s.Name != "client|setname" {
		t.Errorf("Subcommand: %v %v", s, ok)
	}
	get, _ := Lookup([]byte("get"))
	if _, ok := get.Subcommand([]byte("x")); ok {
		t.Error("GET has no subcommands")
	}
}

func TestCheckArity(t *testing.T) {
	get, _ := Lookup([]byte("get"))
	mset, _ := Lookup([]byte("mset"))
	cases := []struct {
		s    *CommandSpec
		argc int
		ok   bool
	}{{get, 2, true}, {get, 1, false}, {get, 3, false}, {mset, 3, true}, {mset, 4, true}, {mset, 2, false}}
	for _, c := range cases {
		if CheckArity(c.s, c.argc) != c.ok {
			t.Errorf("%s with %d arguments", c.s.Name, c.argc)
		}
	}
}

func TestKeys(t *testing.T) {
	cases := []struct {
		line string
		keys string
	}{
		{"GET k", "k"},
		{"SET k v EX 10 SCHEME s", "k"},
		{"MGET a b c", "a b c"},
		{"MSET a 1 b 2", "a b"},
		{"MSET a 1 b", "a b"},
		{"DEL a", "a"},
		{"SCAN 0 MATCH x", ""},
		{"PING", ""},
		{"SCHEME OF k", "k"},
		{"SCHEME MOVE k rep3", "k"},
		{"SCHEME LIST", ""},
		{"scheme.of k", "k"},
		{"SCHEME.MOVE k rep3", "k"},
		{"GET", ""}, // malformed: no panic, no keys
		{"SCHEME OF", ""},
	}
	for _, c := range cases {
		args := argv(c.line)
		spec := resolveQuiet(args)
		var got []string
		for _, k := range spec.Keys(args) {
			got = append(got, string(k))
		}
		if strings.Join(got, " ") != c.keys {
			t.Errorf("%q: keys %q, want %q", c.line, got, c.keys)
		}
	}
	mset, _ := Lookup([]byte("mset"))
	args := argv("MSET a 1 b 2")
	buf := make([][]byte, 0, 4)
	if allocs := testing.AllocsPerRun(100, func() { buf = mset.AppendKeys(buf[:0], args) }); allocs != 0 {
		t.Errorf("AppendKeys allocates %v times", allocs)
	}
}

func TestKeylessMultiKey(t *testing.T) {
	cases := []struct {
		name           string
		keyless, multi bool
	}{
		{"get", false, false}, {"mget", false, true}, {"mset", false, true}, {"del", false, true},
		{"scan", true, false}, {"ping", true, false}, {"scheme|of", false, false}, {"scheme|list", true, false},
	}
	for _, c := range cases {
		s, _ := lookupFullName(c.name)
		if s.Keyless() != c.keyless || s.MultiKey() != c.multi {
			t.Errorf("%s: keyless %v multikey %v", c.name, s.Keyless(), s.MultiKey())
		}
	}
}

func TestResolve(t *testing.T) {
	cases := []struct {
		line, spec, err string
	}{
		{"GET k", "get", ""},
		{"get", "", "ERR wrong number of arguments for 'get' command"},
		{"GeT a b", "", "ERR wrong number of arguments for 'get' command"},
		{"FOO a b", "", "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "},
		{"FOO", "", "ERR unknown command 'FOO', with args beginning with: "},
		{"CLIENT", "", "ERR wrong number of arguments for 'client' command"},
		{"CLIENT foo", "", "ERR unknown subcommand 'foo'. Try CLIENT HELP."},
		{"client Foo x", "", "ERR unknown subcommand 'Foo'. Try CLIENT HELP."},
		{"client LIST", "client|list", ""},
		{"CONFIG GET", "", "ERR wrong number of arguments for 'config|get' command"},
		{"config get maxmemory", "config|get", ""},
		{"COMMAND", "command", ""},
		{"COMMAND INFO", "command|info", ""},
		{"COMMAND bogus", "", "ERR unknown subcommand 'bogus'. Try COMMAND HELP."},
		{"SCHEME", "", "ERR wrong number of arguments for 'scheme' command"},
		{"SCHEME OF k", "scheme|of", ""},
		{"scheme of", "", "ERR wrong number of arguments for 'scheme|of' command"},
		{"SCHEME.OF k", "scheme.of", ""},
		{"SCHEME.DEFAULT", "scheme.default", ""},
		{"scheme.default a b", "scheme.default", ""}, // a minimum arity: the body rejects extras
		{"SCHEME DEFAULT", "scheme|default", ""},
	}
	for _, c := range cases {
		spec, r := Resolve(argv(c.line))
		name := ""
		if spec != nil {
			name = spec.Name
		}
		if name != c.spec || r.Text() != c.err {
			t.Errorf("%q: %q %q; want %q %q", c.line, name, r.Text(), c.spec, c.err)
		}
	}
	if _, r := Resolve(nil); !r.IsError() {
		t.Error("empty vector resolved")
	}
}

func TestErrUnknownCommand(t *testing.T) {
	long := strings.Repeat("x", 200)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"foo", nil, "ERR unknown command 'foo', with args beginning with: "},
		{long, nil, "ERR unknown command '" + long[:128] + "', with args beginning with: "},
		{"foo", []string{long, "b"}, "ERR unknown command 'foo', with args beginning with: '" + long[:128] + "' "},
		{"foo", []string{long[:100], long[:50], "c"},
			"ERR unknown command 'foo', with args beginning with: '" + long[:100] + "' '" + long[:25] + "' "},
		{"fo\x00o", []string{"a\x00b", "c\r\nd"}, "ERR unknown command 'fo', with args beginning with: 'a' 'c  d' "},
	}
	for _, c := range cases {
		var args [][]byte
		for _, a := range c.args {
			args = append(args, []byte(a))
		}
		if got := ErrUnknownCommand(c.name, args).Text(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
	if got := ErrWrongArity("GET").Text(); got != "ERR wrong number of arguments for 'get' command" {
		t.Error(got)
	}
	if got := ErrInvalidExpire("SET").Text(); got != "ERR invalid expire time in 'set' command" {
		t.Error(got)
	}
	if got := Moved(3999, "127.0.0.1:7002").Text(); got != "MOVED 3999 127.0.0.1:7002" {
		t.Error(got)
	}
	if got := Ask(1, "h:1").Text(); got != "ASK 1 h:1" {
		t.Error(got)
	}
}

func TestErrorConstants(t *testing.T) {
	want := map[string]Reply{
		"ERR syntax error": ErrSyntax,
		"WRONGTYPE Operation against a key holding the wrong kind of value": ErrWrongType,
		"ERR value is not an integer or out of range":                       ErrNotInteger,
		"ERR increment or decrement would overflow":                         ErrOverflow,
		"ERR string exceeds maximum allowed size (proto-max-bulk-len)":      ErrStringLength,
		"OOM command not allowed when used memory > 'maxmemory'.":           ErrOOM,
		"NOAUTH Authentication required.":                                   ErrNoAuth,
		"WRONGPASS invalid username-password pair or user is disabled.":     ErrWrongPass,
		"ERR DB index is out of range":                                      ErrDBIndex,
		"ERR SELECT is not allowed in cluster mode":                         ErrSelectCluster,
		"NOPROTO unsupported protocol version":                              ErrNoProto,
		"ERR invalid cursor":                                                ErrInvalidCursor,
	}
	for text, r := range want {
		if !r.IsError() || r.Text() != text {
			t.Errorf("%v, want %q", r, text)
		}
	}
}
