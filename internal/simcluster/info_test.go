package simcluster_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memgest/memgest/internal/simcluster"
	"github.com/memgest/memgest/server"
)

// INFO (issue 28, item 6): Redis 7's sections in its order, and fields
// that measure what the node did: commandstats counts the commands sent,
// rejected and failed; errorstats the error replies by code; the keyspace
// hits, misses, expiring keys and their mean TTL; the instantaneous
// operations per second rise under a load.
func TestInfoMeasuresTheNode(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 1})
	info := func(args ...string) string { return c.DoQuiet(0, append([]string{"INFO"}, args...)...).Text() }

	everything := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
		"Modules", "Commandstats", "Errorstats", "Cluster", "Keyspace", "Memgest"}
	if got := sectionNames(info("everything")); strings.Join(got, " ") != strings.Join(everything, " ") {
		t.Fatalf("INFO everything sections %v, want %v", got, everything)
	}
	if got := sectionNames(info()); strings.Contains(strings.Join(got, " "), "Commandstats") || len(got) != len(everything)-1 {
		t.Fatalf("INFO sections %v: want all but Commandstats", got)
	}
	if got := sectionNames(info("cpu", "SERVER")); strings.Join(got, " ") != "Server CPU" {
		t.Fatalf("INFO cpu SERVER sections %v", got)
	}

	before := infoInt(t, info("stats"), "total_commands_processed")
	for range 5 {
		c.Do(0, "SET", "k", "v")
	}
	c.Do(0, "SET", "ttl", "v", "EX", "100")
	for range 3 {
		c.Do(0, "GET", "k")
	}
	c.Do(0, "GET", "missing")
	c.Do(0, "GET", "missing")
	c.Do(0, "INCR", "k")        // runs, fails: not an integer
	c.Do(0, "HGET", "k", "f")   // runs, fails: WRONGTYPE
	c.Do(0, "GET")              // rejected: arity
	c.Do(0, "NOSUCH", "x")      // unknown: no command to count it under
	c.Do(0, "CLIENT", "NOSUCH") // unknown subcommand likewise
	c.Do(0, "CONFIG", "GET")    // rejected: arity of config|get
	stats := info("commandstats")
	for cmd, want := range map[string]string{
		"set":        "calls=6,rejected_calls=0,failed_calls=0",
		"get":        "calls=5,rejected_calls=1,failed_calls=0",
		"incr":       "calls=1,rejected_calls=0,failed_calls=1",
		"hget":       "calls=1,rejected_calls=0,failed_calls=1",
		"config|get": "calls=0,rejected_calls=1,failed_calls=0",
	} {
		if got := cmdstat(t, stats, cmd); got != want {
			t.Errorf("cmdstat_%s %s, want %s", cmd, got, want)
		}
	}
	if strings.Contains(stats, "cmdstat_nosuch") || strings.Contains(stats, "cmdstat_client") {
		t.Errorf("unknown commands counted:\n%s", stats)
	}
	errs := info("errorstats")
	for _, want := range []string{"errorstat_ERR:count=5", "errorstat_WRONGTYPE:count=1"} {
		if !strings.Contains(errs, want+"\r\n") {
			t.Errorf("errorstats lacks %s:\n%s", want, errs)
		}
	}
	st := info("stats")
	// 6 SETs, 5 GETs, INCR, HGET, and the INFO stats before them and the
	// INFO commandstats and errorstats after; rejected commands never ran.
	if got := infoInt(t, st, "total_commands_processed") - before; got != 16 {
		t.Errorf("total_commands_processed rose by %d, want 16", got)
	}
	if got := infoInt(t, st, "total_error_replies"); got != 6 {
		t.Errorf("total_error_replies %d, want 6", got)
	}
	// GET k ×3 and HGET k found the key; GET missing ×2 did not.
	if hits, misses := infoInt(t, st, "keyspace_hits"), infoInt(t, st, "keyspace_misses"); hits != 4 || misses != 2 {
		t.Errorf("keyspace_hits %d, keyspace_misses %d; want 4 and 2", hits, misses)
	}

	ks := field(t, info("keyspace"), "db0")
	m := regexp.MustCompile(`^keys=2,expires=1,avg_ttl=(\d+)$`).FindStringSubmatch(ks)
	if m == nil {
		t.Fatalf("db0:%s", ks)
	}
	if ttl, _ := strconv.Atoi(m[1]); ttl <= 90_000 || ttl > 100_000 {
		t.Errorf("avg_ttl %d ms for one key set EX 100", ttl)
	}

	// Under a load the sampler (every 100 ms, mean of 16) reads a rate.
	deadline := time.Now().Add(10 * time.Second)
	for infoInt(t, info("stats"), "instantaneous_ops_per_sec") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("instantaneous_ops_per_sec stayed 0 under a load")
		}
		for range 500 {
			c.DoQuiet(0, "GET", "k")
		}
	}

	// CONFIG RESETSTAT zeroes the counters, as Redis's does.
	c.Do(0, "CONFIG", "RESETSTAT")
	st = info("stats", "commandstats", "errorstats")
	for _, name := range []string{"keyspace_hits", "keyspace_misses", "total_error_replies"} {
		if v := infoInt(t, st, name); v != 0 {
			t.Errorf("%s %d after CONFIG RESETSTAT", name, v)
		}
	}
	if strings.Contains(st, "cmdstat_get:") || strings.Contains(st, "errorstat_") {
		t.Errorf("CONFIG RESETSTAT kept command or error counts:\n%s", st)
	}

	all := info("everything")
	for _, want := range []string{"role:master", "connected_slaves:0", "aof_enabled:0", "loading:0",
		"rdb_changes_since_last_save:0", "evicted_keys:0", "maxmemory_policy:noeviction", "cluster_enabled:1"} {
		if !strings.Contains(all, "\r\n"+want+"\r\n") {
			t.Errorf("INFO everything lacks %s", want)
		}
	}
	for _, name := range []string{"run_id", "master_replid"} {
		if v := field(t, all, name); !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(v) {
			t.Errorf("%s:%s", name, v)
		}
	}
	if user, err := strconv.ParseFloat(field(t, all, "used_cpu_user"), 64); err != nil || user <= 0 {
		t.Errorf("used_cpu_user:%s", field(t, all, "used_cpu_user"))
	}
	if used, peak := infoInt(t, all, "used_memory"), infoInt(t, all, "used_memory_peak"); used <= 0 || peak < used {
		t.Errorf("used_memory %d, used_memory_peak %d", used, peak)
	}
}

// sectionNames lists an INFO text's section titles in order.
func sectionNames(info string) []string {
	var out []string
	for line := range strings.SplitSeq(info, "\r\n") {
		if name, ok := strings.CutPrefix(line, "# "); ok {
			out = append(out, name)
		}
	}
	return out
}

// field is the value of an INFO text's field name.
func field(t *testing.T, info, name string) string {
	t.Helper()
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO has no %s", name)
	return ""
}

// cmdstat is a command's counts from INFO commandstats, without its
// times: "calls=..,rejected_calls=..,failed_calls=..".
func cmdstat(t *testing.T, info, cmd string) string {
	t.Helper()
	v := field(t, info, "cmdstat_"+cmd)
	m := regexp.MustCompile(`^calls=(\d+),usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=(\d+),failed_calls=(\d+)$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("cmdstat_%s:%s", cmd, v)
	}
	return "calls=" + m[1] + ",rejected_calls=" + m[2] + ",failed_calls=" + m[3]
}

// With --rebuild-rate 0 (no bound) and no rebuild measured yet, SCHEME.INFO
// still models its scheme, from an assumed rate (it answered no nines:
// the rebuild time came out infinite).
func TestSchemeNinesWithoutARebuildBound(t *testing.T) {
	c := simcluster.Start(t, simcluster.Seed(t), simcluster.Options{Nodes: 6,
		Configure: func(_ int, cfg *server.Config) { cfg.RebuildRate = 0 }})
	f := simcluster.Fields(c.Do(c.AnyLive(), "SCHEME.INFO", "none"))
	if f["model_rebuild_rate_source"].Text() != "assumed" || f["nines_per_year"].IsZero() {
		t.Fatalf("SCHEME.INFO none without a rebuild bound: %s", simcluster.Render(c.Do(c.AnyLive(), "SCHEME.INFO", "none")))
	}
}
