package resp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// redisGolden is testdata/redis-commands.json, what a real Redis says of
// the commands memgest serves (scripts/redis-command-golden.sh writes it).
type redisGolden struct {
	RedisVersion string                    `json:"redis_version"`
	CommandList  []string                  `json:"command_list"` // every command and subcommand Redis has
	Info         map[string][]any          `json:"info"`         // COMMAND INFO, by top-level name
	Docs         map[string]map[string]any `json:"docs"`         // COMMAND DOCS without arguments, likewise
}

func loadRedisGolden(t *testing.T) *redisGolden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "redis-commands.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g redisGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// info is the COMMAND INFO entry of a command or subcommand, or nil.
func (g *redisGolden) info(name string) []any {
	parent, _, isSub := strings.Cut(name, "|")
	top := g.Info[parent]
	if !isSub || top == nil {
		return top
	}
	for _, s := range top[9].([]any) {
		if sub := s.([]any); sub[0] == name {
			return sub
		}
	}
	return nil
}

// docs is the COMMAND DOCS entry of a command or subcommand, or nil.
func (g *redisGolden) docs(name string) map[string]any {
	parent, _, isSub := strings.Cut(name, "|")
	top := g.Docs[parent]
	if !isSub || top == nil {
		return top
	}
	subs, _ := top["subcommands"].(map[string]any)
	d, _ := subs[name].(map[string]any)
	return d
}

// memgestDiffers are the deliberate differences of memgest's table from
// Redis's, by command and field: memgest extends these commands.
var memgestDiffers = map[string]string{
	"dbsize": "arity", // DBSIZE [CLUSTER] (decision 0004); Redis: 1
}

// TestCommandTableAgainstRedis compares every command memgest serves with
// what a real Redis says of it (testdata/redis-commands.json, written by
// scripts/redis-command-golden.sh): COMMAND INFO's arity, flags, key
// range, ACL categories, tips, key specs and subcommands, and COMMAND
// DOCS' group, since, doc flags, deprecation, summary, complexity and
// history, but for the fields Redis 7.2 changed (redis72Changes) and
// memgest's deliberate differences (memgestDiffers). A command Redis has
// that the file lacks fails, naming it; memgest's own (SCHEME) and the
// commands Redis 7.2 added (redis72Only) are not compared. Argument
// descriptions are not compared: memgest's COMMAND DOCS has none.
func TestCommandTableAgainstRedis(t *testing.T) {
	g := loadRedisGolden(t)
	var walk func([]*CommandSpec)
	walk = func(specs []*CommandSpec) {
		for _, s := range specs {
			if s.Group != "memgest" {
				t.Run(s.Name, func(t *testing.T) { compareWithRedis(t, g, s) })
			}
			walk(s.Subcommands)
		}
	}
	walk(Commands())
}

func compareWithRedis(t *testing.T, g *redisGolden, s *CommandSpec) {
	want := g.info(s.Name)
	if want == nil {
		if slices.Contains(g.CommandList, s.Name) {
			t.Fatalf("%s: Redis %s has it, but testdata/redis-commands.json does not: add it to NAMES in "+
				"scripts/redis-command-golden.sh and run the script", s.Name, g.RedisVersion)
		}
		if _, newer := redis72Only[s.Name]; !newer {
			t.Fatalf("%s: Redis %s has no such command; if Redis 7.2 added it, list it in redis72Only", s.Name, g.RedisVersion)
		}
		return
	}
	got := generic(CommandInfo(s)).([]any)
	fields := []string{"name", "arity", "flags", "first_key", "last_key", "step", "acl_categories", "tips", "key_specs"}
	for i, f := range fields {
		compareField(t, g, s.Name, f, got[i], want[i])
	}
	redisSubs := map[string]bool{}
	for _, sub := range want[9].([]any) {
		redisSubs[sub.([]any)[0].(string)] = true
	}
	for _, sub := range s.Subcommands {
		if _, newer := redis72Only[sub.Name]; !redisSubs[sub.Name] && !newer {
			t.Errorf("%s: subcommand %s unknown to Redis %s", s.Name, sub.Name, g.RedisVersion)
		}
	}
	compareDocs(t, g, s)
}

// compareDocs compares COMMAND DOCS entries.
func compareDocs(t *testing.T, g *redisGolden, s *CommandSpec) {
	want := g.docs(s.Name)
	if want == nil {
		t.Fatalf("%s: no COMMAND DOCS entry in the file", s.Name)
	}
	got := generic(commandDoc(s)).(map[string]any)
	for _, f := range []string{"group", "since", "doc_flags", "deprecated_since", "replaced_by", "summary", "complexity", "history"} {
		compareField(t, g, s.Name, f, got[f], want[f])
	}
	var subs []string
	for _, sub := range s.Subcommands {
		subs = append(subs, sub.Name)
	}
	redisSubs, _ := want["subcommands"].(map[string]any)
	for _, name := range subs {
		if _, ok := redisSubs[name]; !ok {
			if _, newer := redis72Only[name]; !newer {
				t.Errorf("%s: docs of subcommand %s missing from Redis %s", s.Name, name, g.RedisVersion)
			}
		}
	}
}

// compareField compares field f of command name, memgest's got with
// Redis's want, unless memgest deliberately differs; where Redis 7.2
// changed the field since the file's Redis (redis72Changes), it requires
// a difference, so that the list stays true.
func compareField(t *testing.T, g *redisGolden, name, f string, got, want any) {
	t.Helper()
	if memgestDiffers[name] == f {
		return
	}
	if slices.Contains(redis72Changes[name], f) {
		if sameValue(got, want) {
			t.Errorf("%s %s: listed in redis72Changes, but memgest's agrees with Redis %s: %#v", name, f, g.RedisVersion, got)
		}
		return
	}
	if !sameValue(got, want) {
		t.Errorf("%s %s: memgest %#v, Redis %s %#v", name, f, got, g.RedisVersion, want)
	}
}

// generic turns a reply into what encoding/json gives for the same RESP3
// reply printed by redis-cli --json: arrays and sets as []any, maps as
// map[string]any, numbers as float64, nil as nil.
func generic(r Reply) any {
	switch r.Kind() {
	case KindArray, KindSet, KindPush:
		out := make([]any, 0, len(r.Items()))
		for _, it := range r.Items() {
			out = append(out, generic(it))
		}
		return out
	case KindMap:
		out := map[string]any{}
		items := r.Items()
		for i := 0; i+1 < len(items); i += 2 {
			out[items[i].Text()] = generic(items[i+1])
		}
		return out
	case KindInt:
		return float64(r.Int())
	case KindNil, KindNilArray:
		return nil
	}
	return r.Text()
}

// sameValue compares generic values, lists of strings as sets (flags,
// ACL categories, tips and key spec flags are sets in RESP3, whose order
// carries nothing).
func sameValue(a, b any) bool {
	la, aok := a.([]any)
	lb, bok := b.([]any)
	if aok && bok && allStrings(la) && allStrings(lb) {
		return reflect.DeepEqual(sortedStrings(la), sortedStrings(lb))
	}
	if aok && bok {
		if len(la) != len(lb) {
			return false
		}
		for i := range la {
			if !sameValue(la[i], lb[i]) {
				return false
			}
		}
		return true
	}
	ma, aok := a.(map[string]any)
	mb, bok := b.(map[string]any)
	if aok && bok {
		if len(ma) != len(mb) {
			return false
		}
		for k, v := range ma {
			if w, ok := mb[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func allStrings(l []any) bool {
	for _, v := range l {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

func sortedStrings(l []any) []string {
	out := make([]string, len(l))
	for i, v := range l {
		out[i] = v.(string)
	}
	sort.Strings(out)
	return out
}

// redis72Only are the commands memgest serves that Redis 7.2 added, after
// the file's Redis 7.0.
var redis72Only = map[string]struct{}{
	"client|setinfo":    {}, // CLIENT SETINFO, 7.2.0
	"cluster|myshardid": {}, // CLUSTER MYSHARDID, 7.2.0
}

// redis72Changes are the fields of COMMAND INFO and COMMAND DOCS in which
// Redis 7.2.6's src/commands/*.json, which the table transcribes, differ
// from the file's Redis 7.0.15, checked one by one against both. Redis 7.2
// rewrote nearly every summary ("Get the value of a key" became "Returns
// the string value of a key."), hence the many "summary" entries; the
// other changes are commented.
var redis72Changes = map[string][]string{
	"append":                  {"summary"},
	"auth":                    {"summary"},
	"client":                  {"summary"},
	"client|getname":          {"summary"},
	"client|help":             {"summary"},
	"client|id":               {"summary"},
	"client|info":             {"summary"},
	"client|kill":             {"summary"},
	"client|list":             {"summary"},
	"client|setname":          {"summary", "tips"}, // tips: added in a 7.2 patch release
	"cluster":                 {"summary"},
	"cluster|countkeysinslot": {"summary"},
	"cluster|getkeysinslot":   {"complexity", "summary"},
	"cluster|help":            {"summary"},
	"cluster|info":            {"summary"},
	"cluster|keyslot":         {"summary"},
	"cluster|myid":            {"summary"},
	"cluster|nodes":           {"summary"},
	"cluster|shards":          {"flags", "summary"}, // flags: 7.2 added loading
	"cluster|slots":           {"flags", "summary"}, // flags: 7.2 added loading
	"command":                 {"summary"},
	"command|count":           {"summary"},
	"command|docs":            {"summary"},
	"command|getkeys":         {"arity", "summary"}, // arity: 7.2 takes a command without arguments
	"command|getkeysandflags": {"arity", "summary"}, // arity: likewise
	"command|help":            {"summary"},
	"command|info":            {"summary"},
	"command|list":            {"summary"},
	"config":                  {"summary"},
	"config|get":              {"summary"},
	"config|help":             {"summary"},
	"config|resetstat":        {"summary", "tips"}, // tips: 7.2 sends it to every node
	"config|rewrite":          {"summary", "tips"}, // tips: likewise
	"config|set":              {"summary"},
	"dbsize":                  {"summary"},
	"debug":                   {"summary"},
	"decr":                    {"summary"},
	"decrby":                  {"summary"},
	"del":                     {"summary"},
	"echo":                    {"summary"},
	"exists":                  {"summary"},
	"expire":                  {"summary"},
	"expireat":                {"summary"},
	"flushall":                {"summary"},
	"flushdb":                 {"summary"},
	"get":                     {"summary"},
	"getdel":                  {"summary"},
	"getex":                   {"summary"},
	"getrange":                {"summary"},
	"getset":                  {"summary"},
	"hdel":                    {"summary"},
	"hello":                   {"summary"},
	"hexists":                 {"summary"},
	"hget":                    {"summary"},
	"hgetall":                 {"summary"},
	"hincrby":                 {"summary"},
	"hincrbyfloat":            {"summary"},
	"hkeys":                   {"summary"},
	"hlen":                    {"summary"},
	"hmget":                   {"summary"},
	"hmset":                   {"summary"},
	"hrandfield":              {"summary"},
	"hscan":                   {"complexity", "summary"},
	"hset":                    {"summary"},
	"hsetnx":                  {"summary"},
	"hstrlen":                 {"summary"},
	"hvals":                   {"summary"},
	"incr":                    {"summary"},
	"incrby":                  {"summary"},
	"info":                    {"summary"},
	"mget":                    {"summary"},
	"mset":                    {"summary"},
	"msetnx":                  {"summary", "tips"}, // tips: 7.2 dropped multi_shard (MSETNX cannot be split)
	"persist":                 {"summary"},
	"pexpire":                 {"summary"},
	"pexpireat":               {"summary"},
	"ping":                    {"summary"},
	"psetex":                  {"deprecated_since", "doc_flags", "replaced_by", "summary"}, // 7.2 documents the deprecation
	"pttl":                    {"summary"},
	"quit":                    {"deprecated_since", "doc_flags", "replaced_by", "summary"}, // deprecated in 7.2.0
	"readonly":                {"summary"},
	"readwrite":               {"summary"},
	"scan":                    {"summary", "tips"}, // tips: 7.2 added response_policy:special
	"select":                  {"summary"},
	"set":                     {"summary"},
	"setex":                   {"deprecated_since", "doc_flags", "replaced_by", "summary"}, // likewise
	"setnx":                   {"deprecated_since", "doc_flags", "replaced_by", "summary"}, // likewise
	"strlen":                  {"summary"},
	"substr":                  {"summary"},
	"ttl":                     {"summary"},
	"type":                    {"summary"},
	"unlink":                  {"summary"},
}
