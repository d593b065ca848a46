// The failure benchmark (make bench-failure, TestFailureBenchmarkReport).
//
// For each scheme under test (rep:3 and split:4+2 by default, one run each)
// it starts a 6-node memgest cluster with one spare, loads keys in that
// scheme, and runs a steady closed-loop workload: 16 clients, half GET and
// half SET of random existing keys, every value read checked against the
// CRC32C it carries. At t = 20 s it kills (SIGKILL) a node that coordinates
// keys and is not a Raft voter, and records, second by second, throughput
// and latency percentiles through detection, failover, degraded service and
// the spare's rebuild, with the timeline of those events as the cluster
// reports them. A probe client meanwhile reads and writes keys of the other
// nodes, one attempt each, to show whether they stay served while the
// workload's clients wait on the killed node's keys. Before the clusters
// start, it copies bytes through a loopback TCP socket, so that the rebuild
// rate can be read against what this machine can move at all.
//
// Nodes run with the production defaults for failure detection
// (--failure-timeout 1.5s, --heartbeat-interval 200ms) and, by default, an
// unbounded rebuild (--rebuild-rate 0 --rebuild-share 1), so the rebuild
// rate is the server's own; -failbench.pacing=default keeps the server's
// default pacing instead, to show what clients see.
// Timing is reported, never asserted: only wrong values fail the test (the
// report is written all the same).
//
//	scripts/bench-failure.sh        # what make bench-failure runs

package tests

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	failbenchReport   = flag.String("failbench.report", "", "run TestFailureBenchmarkReport and write its Markdown report to this file (absolute path; the CSVs are written beside it)")
	failbenchKeys     = flag.Int("failbench.keys", 50000, "keys loaded for each scheme")
	failbenchValue    = flag.Int("failbench.value", 4096, "bytes per value (at least 64)")
	failbenchClients  = flag.Int("failbench.clients", 16, "closed-loop client goroutines")
	failbenchKillAt   = flag.Duration("failbench.kill", 20*time.Second, "when, after the workload starts, a node is killed")
	failbenchDuration = flag.Duration("failbench.duration", 50*time.Second, "shortest workload run")
	failbenchAfter    = flag.Duration("failbench.after", 10*time.Second, "how long the workload keeps running once the rebuild is done")
	failbenchMaxWait  = flag.Duration("failbench.maxwait", 3*time.Minute, "longest run after the kill when the rebuild does not finish")
	failbenchSchemes  = flag.String("failbench.schemes", "rep:3,split:4+2", "comma-separated scheme specs, one run each")
	failbenchPacing   = flag.String("failbench.pacing", "unbounded", "rebuild pacing: unbounded (--rebuild-rate 0 --rebuild-share 1) or default (the server's defaults)")
	failbenchLoopback = flag.Int64("failbench.loopback", 2<<30, "bytes copied through a loopback TCP socket to measure the copy rate")
)

const (
	fbNodes       = 6                         // nodes that coordinate keys
	fbSpares      = 1                         // spares waiting for a failure
	fbWarmup      = 2 * time.Second           // first seconds left out of "normal"
	fbRetrySleep  = 20 * time.Millisecond     // a client's pause before retrying an error
	fbGiveUp      = 30 * time.Second          // a client abandons an operation after retrying this long
	fbPoll        = 25 * time.Millisecond     // how often the cluster's state is polled after the kill
	fbBuffer      = 64 << 10                  // loopback copy buffer
	fbMB          = 1e6                       // MB in MB/s, and GB = 1000 MB
	fbP99Factor   = 3.0                       // target: degraded GET p99 ≤ 3 × normal
	fbNever       = time.Duration(-1)         // an event not observed
	fbLoadBatch   = 64                        // SETs per pipeline while loading
	fbOpTimeout   = 10 * time.Second          // client read/write timeout
	fbLoadTimeout = 10 * time.Minute          // bound on loading the keys
	fbLoadConns   = 8                         // loading goroutines
	fbProbePause  = 10 * time.Millisecond     // the probe's pause between operations
	fbSecond      = float64(time.Second)      // for rates
	fbMillis      = float64(time.Millisecond) // for latencies in ms
)

// fbNodeFlags are the server flags of the benchmark's nodes. They come after
// the harness's own "--failure-timeout 5s", and the last value of a flag
// wins: production defaults for detection, and the rebuild paced as
// -failbench.pacing says: "unbounded" to measure its rate, "default" for
// what clients see with the server's default pacing.
func fbNodeFlags() []string {
	flags := []string{"--failure-timeout", "1.5s", "--heartbeat-interval", "200ms"}
	if *failbenchPacing == "unbounded" {
		flags = append(flags, "--rebuild-rate", "0", "--rebuild-share", "1")
	}
	return flags
}

// fbRebuildTargetMBps is the rebuild rate the issue asks of a scheme, in MB/s.
func fbRebuildTargetMBps(spec string) float64 {
	if strings.HasPrefix(spec, "rep:") {
		return 1000
	}
	return 500
}

// TestFailureBenchmarkReport runs the failure benchmark and writes its report
// to -failbench.report, the per-second series beside it (.csv) and the
// timeline events (-events.csv). It runs only when that flag is set; the
// nodes must be built without -race (MEMGEST_TEST_NORACE=1, which
// scripts/bench-failure.sh sets).
func TestFailureBenchmarkReport(t *testing.T) {
	if *failbenchReport == "" {
		t.Skip("set -failbench.report=FILE to run the failure benchmark (make bench-failure)")
	}
	if os.Getenv("MEMGEST_TEST_NORACE") == "" {
		t.Fatal("set MEMGEST_TEST_NORACE=1: race-built nodes would measure the race detector")
	}
	if *failbenchValue < 64 || *failbenchKeys < 1 || *failbenchClients < 1 {
		t.Fatal("-failbench.value must be ≥ 64, -failbench.keys and -failbench.clients ≥ 1")
	}
	if *failbenchPacing != "unbounded" && *failbenchPacing != "default" {
		t.Fatalf("-failbench.pacing must be unbounded or default, not %q", *failbenchPacing)
	}
	loop := measureLoopback(t, *failbenchLoopback)
	t.Logf("loopback TCP copy: %.0f MB/s", loop.mbps())
	var runs []*fbRun
	for _, spec := range strings.Split(*failbenchSchemes, ",") {
		t.Run(spec, func(t *testing.T) { runs = append(runs, runFailbench(t, strings.TrimSpace(spec))) })
	}
	if len(runs) == 0 {
		return
	}
	writeFailbenchFiles(t, *failbenchReport, loop, runs)
}

// fbLoopback is the result of the loopback copy.
type fbLoopback struct {
	bytes int64
	took  time.Duration
}

// mbps is the copy rate in MB/s.
func (l fbLoopback) mbps() float64 { return float64(l.bytes) / fbMB / l.took.Seconds() }

// measureLoopback copies total bytes from one goroutine to another through
// a TCP connection on 127.0.0.1 with 64 KiB writes and reads, timed from the
// first write to the last byte read.
func measureLoopback(t *testing.T, total int64) fbLoopback {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	received := make(chan int64, 1)
	go func() { received <- drainOne(l) }()
	conn, err := net.Dial("tcp", l.Addr().String())
	must(t, err)
	buf := make([]byte, fbBuffer)
	start := time.Now()
	for sent := int64(0); sent < total; {
		n, err := conn.Write(buf[:min(int64(len(buf)), total-sent)])
		must(t, err)
		sent += int64(n)
	}
	must(t, conn.Close())
	got := <-received
	if got != total {
		t.Fatalf("loopback copy received %d of %d bytes", got, total)
	}
	return fbLoopback{bytes: got, took: time.Since(start)}
}

// drainOne accepts one connection on l and reads it to the end with 64 KiB
// reads, returning the bytes read.
func drainOne(l net.Listener) int64 {
	conn, err := l.Accept()
	if err != nil {
		return 0
	}
	defer conn.Close()
	buf := make([]byte, fbBuffer)
	var n int64
	for {
		m, err := conn.Read(buf)
		n += int64(m)
		if err != nil {
			return n
		}
	}
}

// fbKey is a key of the workload and whether the killed node coordinated it.
type fbKey struct {
	name   string
	victim bool
}

// fbOp is the kind of a workload operation.
type fbOp uint8

const (
	fbGet fbOp = iota
	fbSet
)

// fbSample is an operation that succeeded: when it completed (since the
// workload started) and how long it took from its first attempt, retries
// included.
type fbSample struct {
	at, latency time.Duration
	op          fbOp
	victim      bool
}

// fbError is one failed attempt of an operation.
type fbError struct {
	at     time.Duration
	victim bool
	kind   string
	msg    string
}

// fbTimeline is when (since the workload started) the failure's events were
// seen, and the rebuild's totals; fbNever marks an event not seen.
type fbTimeline struct {
	kill, failed, recovered, rebuildStart, rebuildDone time.Duration
	rebuildBytes, rebuildKeys                          int64
}

// fbSeries is what a group of clients recorded.
type fbSeries struct {
	samples []fbSample // sorted by completion
	issued  []fbSample // the same, sorted by issue
	errs    []fbError  // sorted by time
}

// fbRun is everything one scheme's run measured.
type fbRun struct {
	spec       string
	loadAvg    [2]string // /proc/loadavg when the workload started and stopped
	foreign    fbForeign // other memgest processes seen meanwhile
	victimAddr string
	victimKeys int
	loadTook   time.Duration
	end        time.Duration // when the workload stopped
	load       fbSeries      // the closed-loop workload
	probe      fbSeries      // the probe of keys the victim did not coordinate
	wrong      []string      // wrong values read
	abandoned  int           // operations given up after fbGiveUp
	tl         fbTimeline
}

// runFailbench runs the benchmark for one scheme spec.
func runFailbench(t *testing.T, spec string) *fbRun {
	c := startCluster(t, fbNodes, clusterOptions{spares: fbSpares, extra: fbNodeFlags()})
	victim, watcher := fbPickNodes(t, c)
	run := &fbRun{spec: spec, victimAddr: c.nodes[victim].addr()}
	keys := fbLoad(t, c, run, victim)
	t.Logf("%s: %d keys of %d bytes loaded in %s; killing %s (coordinator of %d of them) at t=%s",
		spec, len(keys), *failbenchValue, run.loadTook.Round(time.Millisecond), run.victimAddr, run.victimKeys, *failbenchKillAt)
	run.measure(t, c, keys, victim, watcher)
	t.Logf("%s: failed +%s, recovered +%s, rebuild %s → %s (%d bytes), %d wrong values, %d errors",
		spec, fbSince(run.tl.failed, run.tl.kill), fbSince(run.tl.recovered, run.tl.kill),
		fbAt(run.tl.rebuildStart), fbAt(run.tl.rebuildDone), run.tl.rebuildBytes, len(run.wrong), len(run.load.errs))
	if len(run.wrong) > 0 {
		t.Errorf("%s: %d wrong values read, first: %s", spec, len(run.wrong), run.wrong[0])
	}
	return run
}

// measure runs the workload, the probe and the monitor, kills the victim
// at -failbench.kill, stops once the monitor says the run may end, and
// collects what the clients recorded.
func (r *fbRun) measure(t *testing.T, c *testCluster, keys []fbKey, victim, watcher int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.loadAvg[0] = fbLoadAvg()
	start := time.Now()
	workers, wg := fbStartWorkers(ctx, t, c, keys, victim, start)
	probe := fbStartProbe(ctx, t, c, keys, watcher, start, wg)
	foreign := fbWatchForeign(ctx, wg)
	mon := newFbMonitor(t, c, victim, watcher, start)
	time.Sleep(time.Until(start.Add(*failbenchKillAt)))
	must(t, c.nodes[victim].cmd.Process.Kill())
	mon.tl.kill = time.Since(start)
	mon.watch(ctx)
	r.end, r.tl = time.Since(start), mon.tl
	cancel()
	wg.Wait()
	r.collect(workers, probe)
	r.loadAvg[1], r.foreign = fbLoadAvg(), *foreign
}

// fbPickNodes chooses the node to kill, the last non-voter that
// coordinates keys (so never the Raft leader), and the first voter, to
// watch the cluster from.
func fbPickNodes(t *testing.T, c *testCluster) (victim, watcher int) {
	t.Helper()
	victim, watcher = -1, -1
	nonVoters := c.nonVoters()
	for i := range fbNodes {
		switch {
		case slices.Contains(nonVoters, i):
			victim = i
		case watcher < 0:
			watcher = i
		}
	}
	if victim < 0 || watcher < 0 {
		t.Fatalf("want a voter and a non-voter among the first %d nodes; non-voters: %v", fbNodes, nonVoters)
	}
	return victim, watcher
}

// fbKeyName is the name of the workload's key i.
func fbKeyName(i int) string { return fmt.Sprintf("fb:%07d", i) }

// fbLoad writes -failbench.keys keys in spec and says which of them the
// victim coordinates.
func fbLoad(t *testing.T, c *testCluster, run *fbRun, victim int) []fbKey {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fbLoadTimeout)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, fbLoadConns)
	for g := range fbLoadConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = fbLoadShare(ctx, c.plainClient(g%fbNodes, 2), run.spec, g)
		}()
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	run.loadTook = time.Since(start)
	return fbClassify(t, c, victim, run)
}

// fbLoadShare writes every fbLoadConns-th key from the g-th, in pipelines.
func fbLoadShare(ctx context.Context, rdb *redis.Client, spec string, g int) error {
	rng := rand.New(rand.NewPCG(uint64(g), 1))
	for first := g * fbLoadBatch; first < *failbenchKeys; first += fbLoadConns * fbLoadBatch {
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := first; i < min(first+fbLoadBatch, *failbenchKeys); i++ {
				v := fbValue(make([]byte, *failbenchValue), fbKeyName(i), rng)
				p.Do(ctx, "SET", fbKeyName(i), v, "SCHEME", spec)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("loading %s: %w (%d commands)", spec, err, len(cmds))
		}
	}
	return nil
}

// fbClassify lists the keys, marking those the victim coordinates (as the
// cluster's slot map routes them).
func fbClassify(t *testing.T, c *testCluster, victim int, run *fbRun) []fbKey {
	t.Helper()
	ctx := ctxT(t)
	rdb := c.clusterClient()
	keys := make([]fbKey, *failbenchKeys)
	for i := range keys {
		cl, err := rdb.MasterForKey(ctx, fbKeyName(i))
		must(t, err)
		keys[i] = fbKey{name: fbKeyName(i), victim: cl.Options().Addr == c.nodes[victim].addr()}
		if keys[i].victim {
			run.victimKeys++
		}
	}
	return keys
}

// fbValue fills buf with a value for key and returns it: 8 hex digits of
// the CRC32C of the rest, then the key, ':', and random bytes.
func fbValue(buf []byte, key string, rng *rand.Rand) []byte {
	body := buf[8:]
	n := copy(body, key)
	body[n] = ':'
	for i := n + 1; i < len(body); i += 8 {
		u := rng.Uint64()
		for j := i; j < min(i+8, len(body)); j++ {
			body[j], u = byte(u), u>>8
		}
	}
	copy(buf[:8], fbChecksum(body))
	return buf
}

// fbChecksum is the CRC32C of b in 8 hex digits.
func fbChecksum(b []byte) string { return fmt.Sprintf("%08x", crc32.Checksum(b, fbCRC)) }

// fbCRC is the CRC32C table of the values' checksums.
var fbCRC = crc32.MakeTable(crc32.Castagnoli)

// fbCheckValue says what is wrong with v as a value of key, or "".
func fbCheckValue(v []byte, key string) string {
	switch {
	case len(v) != *failbenchValue:
		return fmt.Sprintf("%d bytes, want %d", len(v), *failbenchValue)
	case !strings.HasPrefix(string(v[8:]), key+":"):
		return fmt.Sprintf("value of another key (%.40q)", v[8:])
	}
	if fbChecksum(v[8:]) != string(v[:8]) {
		return "checksum mismatch"
	}
	return ""
}

// fbWorker is one closed-loop client of the workload. Its results are read
// only after it stops.
type fbWorker struct {
	rdb       *redis.Client
	keys      []fbKey
	rng       *rand.Rand
	start     time.Time
	buf       []byte
	retry     bool          // retry a failed operation (the workload) or move on (the probe)
	pause     time.Duration // between operations
	samples   []fbSample
	errs      []fbError
	wrong     []string
	abandoned int
}

// fbStartWorkers starts -failbench.clients workers, spread over every node
// but the victim and the spare, each with its own connection: the nodes
// forward what they do not coordinate.
func fbStartWorkers(ctx context.Context, t *testing.T, c *testCluster, keys []fbKey, victim int, start time.Time) ([]*fbWorker, *sync.WaitGroup) {
	var entry []int
	for i := range fbNodes {
		if i != victim {
			entry = append(entry, i)
		}
	}
	workers := make([]*fbWorker, *failbenchClients)
	wg := &sync.WaitGroup{}
	for id := range workers {
		w := &fbWorker{rdb: fbClient(t, c.nodes[entry[id%len(entry)]].addr()), keys: keys,
			rng: rand.New(rand.NewPCG(uint64(id), 2)), start: start, buf: make([]byte, *failbenchValue), retry: true}
		workers[id] = w
		wg.Add(1)
		go func() { defer wg.Done(); w.run(ctx) }()
	}
	return workers, wg
}

// fbStartProbe starts the probe: one client on node at that GETs and SETs,
// in turn, random keys the victim does not coordinate, one attempt each and
// fbProbePause apart, to show whether the other nodes' keys are served
// while the workload's clients wait on the victim's.
func fbStartProbe(ctx context.Context, t *testing.T, c *testCluster, keys []fbKey, at int, start time.Time, wg *sync.WaitGroup) *fbWorker {
	var others []fbKey
	for _, k := range keys {
		if !k.victim {
			others = append(others, k)
		}
	}
	w := &fbWorker{rdb: fbClient(t, c.nodes[at].addr()), keys: others, rng: rand.New(rand.NewPCG(0, 3)),
		start: start, buf: make([]byte, *failbenchValue), pause: fbProbePause}
	wg.Add(1)
	go func() { defer wg.Done(); w.run(ctx) }()
	return w
}

// fbClient is a single-connection client that never retries by itself, so
// that every error reaches the benchmark.
func fbClient(t *testing.T, addr string) *redis.Client {
	cl := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, PoolSize: 1,
		MaxRetries: -1, ReadTimeout: fbOpTimeout, WriteTimeout: fbOpTimeout})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// run issues operations until ctx ends: GET or SET, evenly, of random keys.
func (w *fbWorker) run(ctx context.Context) {
	for ctx.Err() == nil {
		k := w.keys[w.rng.IntN(len(w.keys))]
		op := fbOp(w.rng.IntN(2))
		w.do(ctx, op, k)
		time.Sleep(w.pause)
	}
}

// do runs one operation, retrying errors after a short sleep as a client
// would (unless w.retry is false), and records its outcome.
func (w *fbWorker) do(ctx context.Context, op fbOp, k fbKey) {
	begin := time.Now()
	if op == fbSet {
		fbValue(w.buf, k.name, w.rng)
	}
	for {
		wrong, err := w.attempt(ctx, op, k.name)
		end := time.Now()
		switch {
		case ctx.Err() != nil:
			return // stopped mid-operation: not counted
		case wrong != "":
			w.wrong = append(w.wrong, fmt.Sprintf("GET %s at t=%.2fs: %s", k.name, end.Sub(w.start).Seconds(), wrong))
			return
		case err == nil:
			w.samples = append(w.samples, fbSample{at: end.Sub(w.start), latency: end.Sub(begin), op: op, victim: k.victim})
			return
		}
		w.errs = append(w.errs, fbError{at: end.Sub(w.start), victim: k.victim, kind: fbErrorKind(err), msg: err.Error()})
		if !w.retry {
			return
		}
		if end.Sub(begin) > fbGiveUp {
			w.abandoned++
			return
		}
		time.Sleep(fbRetrySleep)
	}
}

// attempt sends op once. A GET's answer that is not a valid value of the
// key (nil included: no key is ever deleted) is described in wrong.
func (w *fbWorker) attempt(ctx context.Context, op fbOp, key string) (wrong string, err error) {
	if op == fbSet {
		return "", w.rdb.Set(ctx, key, w.buf, 0).Err()
	}
	v, err := w.rdb.Get(ctx, key).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return "nil", nil
	case err != nil:
		return "", err
	}
	return fbCheckValue(v, key), nil
}

// fbErrorKind names the kind of an error for counting: the reply's error
// code, refined for memgest's ERR replies, or the client-side failure.
func fbErrorKind(err error) string {
	msg := err.Error()
	for _, known := range []string{"forwarding to coordinator", "marked failed", "not acknowledged",
		"no fresh lease", "connection refused", "connection reset", "i/o timeout", "EOF"} {
		if strings.Contains(msg, known) {
			code, _, _ := strings.Cut(msg, " ")
			if strings.ToUpper(code) != code {
				code = "client"
			}
			return code + ": " + known
		}
	}
	code, _, _ := strings.Cut(msg, " ")
	return code
}

// collect merges the workers' and the probe's records into the run.
func (r *fbRun) collect(workers []*fbWorker, probe *fbWorker) {
	r.load = fbMerge(workers)
	r.probe = fbMerge([]*fbWorker{probe})
	for _, w := range append(workers, probe) {
		r.wrong = append(r.wrong, w.wrong...)
		r.abandoned += w.abandoned
	}
}

// fbMerge merges workers' records into one series, sorted by time.
func fbMerge(workers []*fbWorker) fbSeries {
	var s fbSeries
	for _, w := range workers {
		s.samples = append(s.samples, w.samples...)
		s.errs = append(s.errs, w.errs...)
	}
	slices.SortFunc(s.samples, func(a, b fbSample) int { return cmp.Compare(a.at, b.at) })
	s.issued = slices.Clone(s.samples)
	slices.SortFunc(s.issued, func(a, b fbSample) int { return cmp.Compare(a.issuedAt(), b.issuedAt()) })
	slices.SortFunc(s.errs, func(a, b fbError) int { return cmp.Compare(a.at, b.at) })
	return s
}

// fbMonitor polls the cluster after the kill for the failure's timeline.
type fbMonitor struct {
	watcher    *redis.Client   // a voter, for CLUSTER NODES and the map's shard counts
	live       []*redis.Client // every node but the victim, for rebuild progress
	victimAddr string
	start      time.Time
	tl         fbTimeline
}

// newFbMonitor prepares a monitor watching from node watcher.
func newFbMonitor(t *testing.T, c *testCluster, victim, watcher int, start time.Time) *fbMonitor {
	m := &fbMonitor{watcher: fbClient(t, c.nodes[watcher].addr()), victimAddr: c.nodes[victim].addr(), start: start,
		tl: fbTimeline{kill: fbNever, failed: fbNever, recovered: fbNever, rebuildStart: fbNever, rebuildDone: fbNever}}
	for i, nd := range c.nodes {
		if i != victim {
			m.live = append(m.live, fbClient(t, nd.addr()))
		}
	}
	return m
}

// watch polls until the run may end: the shortest duration has passed and
// the rebuild has been done for -failbench.after, or -failbench.maxwait has
// passed since the kill.
func (m *fbMonitor) watch(ctx context.Context) {
	for {
		m.poll(ctx)
		now := time.Since(m.start)
		done := m.tl.rebuildDone != fbNever && now >= m.tl.rebuildDone+*failbenchAfter
		if now >= m.tl.kill+*failbenchMaxWait || (done && now >= *failbenchDuration) {
			return
		}
		time.Sleep(fbPoll)
	}
}

// poll reads the cluster's state once and records the events it shows
// for the first time.
func (m *fbMonitor) poll(ctx context.Context) {
	if m.tl.failed == fbNever && m.victimFailed(ctx) {
		m.tl.failed = time.Since(m.start)
	}
	m.pollRebuildProgress(ctx)
	if m.tl.failed == fbNever {
		return
	}
	info := fbInfo(ctx, m.watcher)
	now := time.Since(m.start)
	if m.tl.recovered == fbNever && info["shards_recovering"] == "0" {
		m.tl.recovered = now
	}
	if m.tl.rebuildDone == fbNever && info["shards_rebuilding"] == "0" {
		m.tl.rebuildDone = now
	}
}

// victimFailed says whether the watcher's CLUSTER NODES flags the victim
// failed (as waitFailed reads it).
func (m *fbMonitor) victimFailed(ctx context.Context) bool {
	out, err := m.watcher.Do(ctx, "CLUSTER", "NODES").Text()
	if err != nil {
		return false
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.HasPrefix(f[1], m.victimAddr+"@") && strings.Contains(f[2], "fail") {
			return true
		}
	}
	return false
}

// pollRebuildProgress sums the live nodes' rebuild counters, and notes when
// a rebuild was first seen under way.
func (m *fbMonitor) pollRebuildProgress(ctx context.Context) {
	var keysTotal, keysDone, bytesDone int64
	for _, cl := range m.live {
		info := fbInfo(ctx, cl)
		keysTotal += fbInt(info["rebuild_keys_total"])
		keysDone += fbInt(info["rebuild_keys_done"])
		bytesDone += fbInt(info["rebuild_bytes_done"])
	}
	if keysTotal > 0 && m.tl.rebuildStart == fbNever {
		m.tl.rebuildStart = time.Since(m.start)
	}
	m.tl.rebuildKeys = max(m.tl.rebuildKeys, keysDone)
	m.tl.rebuildBytes = max(m.tl.rebuildBytes, bytesDone)
}

// fbInfo reads a node's INFO memgest fields; empty if it does not answer.
func fbInfo(ctx context.Context, cl *redis.Client) map[string]string {
	out := map[string]string{}
	text, err := cl.Info(ctx, "memgest").Result()
	if err != nil {
		return out
	}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// fbInt parses an INFO integer, 0 when absent.
func fbInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// fbStats summarises a window of a run: operations completed in it, the
// latencies of operations issued in it, and failed attempts in it.
type fbStats struct {
	from, to       time.Duration
	gets, sets     int
	getLat, setLat []time.Duration // sorted
	errors         int
	victimOK       int
	victimErrors   int
}

// stats summarises the operations in [from, to), keeping only those keep
// accepts (all if nil): the operations completed in the window, and the
// latencies of those issued in it, so that an operation retried through a
// failover counts its wait where the client began it.
func (r fbSeries) stats(from, to time.Duration, keep func(fbSample) bool) fbStats {
	s := fbStats{from: from, to: to}
	for _, x := range fbWindow(r.samples, from, to, fbSample.completed) {
		if keep == nil || keep(x) {
			s.count(x)
		}
	}
	for _, x := range fbWindow(r.issued, from, to, fbSample.issuedAt) {
		if keep == nil || keep(x) {
			s.addLatency(x)
		}
	}
	for _, e := range r.errs {
		if e.at >= from && e.at < to {
			s.errors++
			if e.victim {
				s.victimErrors++
			}
		}
	}
	slices.Sort(s.getLat)
	slices.Sort(s.setLat)
	return s
}

// completed is when the operation completed, since the workload started.
func (x fbSample) completed() time.Duration { return x.at }

// issuedAt is when the operation's first attempt began.
func (x fbSample) issuedAt() time.Duration { return x.at - x.latency }

// fbWindow is the part of samples, sorted by when, with when in [from, to).
func fbWindow(samples []fbSample, from, to time.Duration, when func(fbSample) time.Duration) []fbSample {
	order := func(x fbSample, t time.Duration) int { return cmp.Compare(when(x), t) }
	lo, _ := slices.BinarySearchFunc(samples, from, order)
	hi, _ := slices.BinarySearchFunc(samples, to, order)
	return samples[lo:max(lo, hi)]
}

// count counts one completed operation.
func (s *fbStats) count(x fbSample) {
	if x.op == fbGet {
		s.gets++
	} else {
		s.sets++
	}
	if x.victim {
		s.victimOK++
	}
}

// addLatency adds one issued operation's latency.
func (s *fbStats) addLatency(x fbSample) {
	if x.op == fbGet {
		s.getLat = append(s.getLat, x.latency)
	} else {
		s.setLat = append(s.setLat, x.latency)
	}
}

// seconds is the window's length.
func (s fbStats) seconds() float64 { return float64(s.to-s.from) / fbSecond }

// rate is n operations per second of the window.
func (s fbStats) rate(n int) float64 { return float64(n) / s.seconds() }

// fbPercentile is the nearest-rank p-quantile of sorted latencies, or -1.
func fbPercentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return -1
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// fbPhase is a named window of a run.
type fbPhase struct {
	name     string
	from, to time.Duration
}

// phases cuts the run at the kill, at its shards serving again and at the
// end of the rebuild. A phase whose end was not seen runs to the end.
func (r *fbRun) phases() []fbPhase {
	cuts := []fbPhase{
		{name: "normal (before the kill)", from: fbWarmup},
		{name: "failover (kill → shards served again)", from: r.tl.kill},
		{name: "degraded (served again → rebuild done)", from: r.tl.recovered},
		{name: "after the rebuild", from: r.tl.rebuildDone},
	}
	var out []fbPhase
	for i, p := range cuts {
		if p.from == fbNever {
			break
		}
		p.to = r.end
		if i+1 < len(cuts) && cuts[i+1].from != fbNever {
			p.to = cuts[i+1].from
		}
		if p.to > p.from {
			out = append(out, p)
		}
	}
	return out
}

// secondRows are the per-second statistics of a series that ran until end.
func (r fbSeries) secondRows(end time.Duration) []fbStats {
	var rows []fbStats
	for s := time.Duration(0); s+time.Second <= end; s += time.Second {
		rows = append(rows, r.stats(s, s+time.Second, nil))
	}
	return rows
}

// unavailableStretch is the longest run of whole seconds from the kill's
// second on in which the victim's keys had an error or no operation done,
// as (first second, length in seconds).
func (r *fbRun) unavailableStretch() (first, length int) {
	rows := r.load.secondRows(r.end)
	run := 0
	for s := int(r.tl.kill / time.Second); s < len(rows); s++ {
		if rows[s].victimErrors > 0 || rows[s].victimOK == 0 {
			run++
			if run > length {
				first, length = s-run+1, run
			}
		} else {
			run = 0
		}
	}
	return first, length
}

// longestGap is the longest time after kill, to end, between two
// successive completions of operations keep accepts (from the last before
// the kill), and when it began.
func (r fbSeries) longestGap(kill, end time.Duration, keep func(fbSample) bool) (gap, from time.Duration) {
	prev := time.Duration(0)
	for _, x := range r.samples {
		if !keep(x) {
			continue
		}
		if x.at > kill && x.at-prev > gap {
			gap, from = x.at-prev, prev
		}
		prev = x.at
	}
	if end-prev > gap {
		gap, from = end-prev, prev
	}
	return gap, from
}

// rebuildMBps is the rebuild's rate, bytes rebuilt over the time from its
// first progress to its end, or 0 if it was not seen to end.
func (r *fbRun) rebuildMBps() float64 {
	start := r.tl.rebuildStart
	if start == fbNever {
		start = r.tl.failed
	}
	if r.tl.rebuildDone == fbNever || start == fbNever || r.tl.rebuildDone <= start {
		return 0
	}
	return float64(r.tl.rebuildBytes) / fbMB / (r.tl.rebuildDone - start).Seconds()
}

// degradedGets are the GETs of keys the victim did not coordinate issued
// while the cluster ran without redundancy: from the failure being marked
// to the end of the rebuild (to the run's end if it did not end).
func (r *fbRun) degradedGets() fbStats {
	to := r.tl.rebuildDone
	if to == fbNever {
		to = r.end
	}
	from := r.tl.failed
	if from == fbNever {
		from = r.tl.kill
	}
	return r.load.stats(from, to, func(x fbSample) bool { return x.op == fbGet && !x.victim })
}

// normal is the run's statistics before the kill, after the warm-up.
func (r *fbRun) normal() fbStats { return r.load.stats(fbWarmup, r.tl.kill, nil) }

// fbAt renders a time since the workload started, or "—".
func fbAt(d time.Duration) string {
	if d == fbNever {
		return "—"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// fbSince renders d - ref, or "—" when d was not seen.
func fbSince(d, ref time.Duration) string {
	if d == fbNever || ref == fbNever {
		return "—"
	}
	return fmt.Sprintf("%.2f s", (d - ref).Seconds())
}

// fbMs renders a latency in milliseconds, or "—".
func fbMs(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(d)/fbMillis)
}

// fbCSVMs renders a latency in milliseconds for the CSV, empty if none.
func fbCSVMs(d time.Duration) string {
	if d < 0 {
		return ""
	}
	return fmt.Sprintf("%.3f", float64(d)/fbMillis)
}

// fbMet renders whether a target was met.
func fbMet(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// writeFailbenchFiles writes the report, the per-second CSV and the events
// CSV, and prints the report.
func writeFailbenchFiles(t *testing.T, path string, loop fbLoopback, runs []*fbRun) {
	t.Helper()
	base := strings.TrimSuffix(path, filepath.Ext(path))
	report := fbReport(loop, runs, filepath.Base(base)+".png")
	fmt.Print(report)
	must(t, os.WriteFile(path, []byte(report), 0o644))
	must(t, fbWriteCSV(base+".csv", fbSeriesRecords(runs)))
	must(t, fbWriteCSV(base+"-events.csv", fbEventRecords(runs)))
}

// fbWriteCSV writes records to path.
func fbWriteCSV(path string, records [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(records); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fbSeriesRecords are the per-second series of every run, with a header.
func fbSeriesRecords(runs []*fbRun) [][]string {
	out := [][]string{{"scheme", "t_s", "get_ops", "set_ops", "get_p50_ms", "get_p99_ms", "set_p50_ms", "set_p99_ms",
		"errors", "victim_ok", "victim_errors", "probe_ok", "probe_errors"}}
	for _, r := range runs {
		probe := r.probe.secondRows(r.end)
		for s, row := range r.load.secondRows(r.end) {
			out = append(out, []string{r.spec, strconv.Itoa(s), strconv.Itoa(row.gets), strconv.Itoa(row.sets),
				fbCSVMs(fbPercentile(row.getLat, 0.5)), fbCSVMs(fbPercentile(row.getLat, 0.99)),
				fbCSVMs(fbPercentile(row.setLat, 0.5)), fbCSVMs(fbPercentile(row.setLat, 0.99)),
				strconv.Itoa(row.errors), strconv.Itoa(row.victimOK), strconv.Itoa(row.victimErrors),
				strconv.Itoa(probe[s].gets + probe[s].sets), strconv.Itoa(probe[s].errors)})
		}
	}
	return out
}

// fbEvent is a timeline event of a run.
type fbEvent struct {
	name string
	at   time.Duration // since the workload started, or fbNever
}

// events are a run's timeline events, in order.
func (r *fbRun) events() []fbEvent {
	return []fbEvent{{"kill", r.tl.kill}, {"failed", r.tl.failed}, {"recovered", r.tl.recovered},
		{"rebuild start", r.tl.rebuildStart}, {"rebuild done", r.tl.rebuildDone}}
}

// fbEventRecords are the timeline events of every run, with a header.
func fbEventRecords(runs []*fbRun) [][]string {
	out := [][]string{{"scheme", "event", "t_s"}}
	for _, r := range runs {
		for _, e := range r.events() {
			if e.at != fbNever {
				out = append(out, []string{r.spec, e.name, fmt.Sprintf("%.3f", e.at.Seconds())})
			}
		}
	}
	return out
}

// fbReport renders the Markdown report.
func fbReport(loop fbLoopback, runs []*fbRun, png string) string {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# Failure benchmark: kill -9 under load\n\n")
	fmt.Fprintf(b, "Written by `make bench-failure` (tests/failbench_test.go, scripts/bench-failure.sh) on %s. "+
		"Timing is reported, never asserted; rerun to compare.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fbWriteSetup(b, loop)
	fbWriteTargets(b, loop, runs)
	fmt.Fprintf(b, "![throughput and p99 latency per second](%s)\n\n", png)
	for _, r := range runs {
		fbWriteSummary(b, loop, r)
	}
	for _, r := range runs {
		fbWriteSeries(b, r)
	}
	return b.String()
}

// fbWriteSetup writes the machine and the parameters.
func fbWriteSetup(b *strings.Builder, loop fbLoopback) {
	fmt.Fprintf(b, "## Setup\n\n")
	fmt.Fprintf(b, "- machine: %d CPUs (%s), %s, %s %s/%s\n", runtime.NumCPU(), fbCPUModel(), fbKernel(),
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(b, "- cluster: %d memgest nodes + %d spare on 127.0.0.1, 3 Raft voters, built without -race; node flags `%s`\n",
		fbNodes, fbSpares, strings.Join(fbNodeFlags(), " "))
	fmt.Fprintf(b, "- data: %d keys × %d-byte values per run, written with `SET key value SCHEME spec`\n",
		*failbenchKeys, *failbenchValue)
	fmt.Fprintf(b, "- workload: %d closed-loop clients, 50%% GET / 50%% SET of random existing keys; each client holds one "+
		"connection to one of the %d nodes other than the victim (they forward to the coordinator); every GET's value "+
		"is checked against the CRC32C it carries; an error is retried after %s (each failed attempt counts as an error; "+
		"latency runs from the first attempt to the success), an operation is given up after %s. Throughput counts "+
		"operations in the second (or phase) they complete; latency percentiles are of the operations issued in it, so "+
		"a wait through the failover shows where the client began it. Closed-loop clients that retry soon all wait on "+
		"keys of the killed node, so until those are served again the workload's throughput falls for every key; the "+
		"probe shows whether the other nodes' keys were served meanwhile\n",
		*failbenchClients, fbNodes-1, fbRetrySleep, fbGiveUp)
	fmt.Fprintf(b, "- probe: one more client, on a voter, GETs and SETs in turn random keys the killed node did not "+
		"coordinate, one attempt each, %s apart; it is not counted in the workload's figures\n", fbProbePause)
	fmt.Fprintf(b, "- the fault: at t = %s a non-voter node that coordinates keys is killed with SIGKILL; the run lasts at "+
		"least %s and until %s after the rebuild is done (at most %s after the kill)\n",
		*failbenchKillAt, *failbenchDuration, *failbenchAfter, *failbenchMaxWait)
	fmt.Fprintf(b, "- events, polled every %s: *failed* when a voter's `CLUSTER NODES` flags the victim `fail`; "+
		"*recovered* when its map shows no shard recovering (the victim's keys are served again); *rebuild start* "+
		"when the live nodes' `rebuild_keys_total` first exceeds 0; *rebuild done* when its map shows no shard rebuilding. "+
		"Rebuild bytes are the live nodes' `rebuild_bytes_done` summed (piece bytes sent)\n", fbPoll)
	fmt.Fprintf(b, "- code: %s\n", fbCodeState())
	fmt.Fprintf(b, "- loopback copy, same run: %s through one TCP connection on 127.0.0.1 with 64 KiB writes and reads, "+
		"one goroutine each side: **%.0f MB/s** (MB = 10⁶ bytes, GB = 1000 MB)\n\n", fbBytes(loop.bytes), loop.mbps())
}

// fbBytes renders a byte count in MiB or GiB.
func fbBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// fbCPUModel is the first model name in /proc/cpuinfo.
func fbCPUModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// fbForeign counts memgest processes on the machine that this test did not
// start (another engineer's tests, say), which would disturb the figures.
type fbForeign struct {
	samples, disturbed int // samples taken, and those that saw any
	most               int // the most seen at once
}

// String renders the count for the report.
func (f fbForeign) String() string {
	if f.most == 0 {
		return fmt.Sprintf("none (%d samples)", f.samples)
	}
	return fmt.Sprintf("**up to %d, in %d of %d samples: the figures may be disturbed**", f.most, f.disturbed, f.samples)
}

// fbWatchForeign samples foreign memgest processes every second until ctx
// ends; the result is complete once wg is done.
func fbWatchForeign(ctx context.Context, wg *sync.WaitGroup) *fbForeign {
	f := &fbForeign{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			n := fbCountForeign()
			f.samples++
			if n > 0 {
				f.disturbed++
			}
			f.most = max(f.most, n)
			time.Sleep(time.Second)
		}
	}()
	return f
}

// fbCountForeign counts the processes whose command line names a memgest
// server binary, or a test binary, other than this test's.
func fbCountForeign() int {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	self := os.Getpid()
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		args := strings.Split(string(b), "\x00")
		if err != nil || len(args) < 2 || strings.HasSuffix(p, "/"+strconv.Itoa(self)+"/cmdline") {
			continue
		}
		server := strings.HasSuffix(args[0], "memgest") && args[1] == "server" && args[0] != binary
		if server || strings.HasSuffix(args[0], ".test") {
			n++
		}
	}
	return n
}

// fbLoadAvg is the 1, 5 and 15 minute load averages of /proc/loadavg.
func fbLoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// fbSources are the paths, from tests/, of the code memgest is built from.
var fbSources = []string{"../go.mod", "../cmd", "../server", "../cluster", "../store", "../transport", "../scheme", "../ec", "../internal"}

// fbCodeState names the commit the nodes were built from and counts the
// files changed since, as git reports them.
func fbCodeState() string {
	head, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (no git)"
	}
	out := "commit " + strings.TrimSpace(string(head))
	changed, err := exec.Command("git", append([]string{"status", "--porcelain", "--"}, fbSources...)...).Output()
	if n := strings.Count(string(changed), "\n"); err == nil && n > 0 {
		out += fmt.Sprintf(" with %d of the nodes' source files changed or added in the working tree", n)
	}
	return out
}

// fbKernel is the running Linux kernel's release.
func fbKernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return "Linux " + strings.TrimSpace(string(b))
}

// fbWriteTargets writes the targets table: each figure against its target.
func fbWriteTargets(b *strings.Builder, loop fbLoopback, runs []*fbRun) {
	fmt.Fprintf(b, "## Targets\n\n")
	fmt.Fprintf(b, "| scheme | rebuild MB/s | target | rebuild / target | rebuild / loopback | | degraded GET p99 | normal GET p99 | ratio (target ≤ %.0f×) | |\n", fbP99Factor)
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, r := range runs {
		rate, target := r.rebuildMBps(), fbRebuildTargetMBps(r.spec)
		degraded := r.degradedGets()
		deg, norm := fbPercentile(degraded.getLat, 0.99), fbPercentile(r.normal().getLat, 0.99)
		ratio := float64(deg) / float64(norm)
		fmt.Fprintf(b, "| %s | %.1f | %.0f | %.3f | %.3f | %s | %s ms (%d GETs) | %s ms | %.2f× | %s |\n", r.spec, rate, target,
			rate/target, rate/loop.mbps(), fbMet(rate >= target), fbMs(deg), len(degraded.getLat), fbMs(norm), ratio,
			fbMet(deg >= 0 && ratio <= fbP99Factor))
	}
	fmt.Fprintf(b, "\nRebuild MB/s: bytes rebuilt ÷ (rebuild done − rebuild start). Degraded GET p99: GETs of keys the "+
		"killed node did not coordinate, issued between the failure being marked and the rebuild done; normal: all "+
		"GETs from t = %s to the kill.\n\n", fbWarmup)
}

// fbWriteSummary writes one run's timeline, phase table and errors.
func fbWriteSummary(b *strings.Builder, loop fbLoopback, r *fbRun) {
	tl := r.tl
	fmt.Fprintf(b, "## %s\n\n", r.spec)
	fmt.Fprintf(b, "Killed %s, coordinator of %d of the %d keys (loaded in %s). Wrong values read: **%d**. "+
		"Operations given up: %d. Load average (1, 5, 15 min) at the start: %s; at the end: %s. Memgest servers or "+
		"test binaries not started by this run, seen meanwhile: %s.\n\n", r.victimAddr, r.victimKeys, *failbenchKeys,
		r.loadTook.Round(time.Millisecond), len(r.wrong), r.abandoned, r.loadAvg[0], r.loadAvg[1], r.foreign)
	fmt.Fprintf(b, "| event | t | after the kill |\n|---|---:|---:|\n")
	for _, e := range r.events() {
		fmt.Fprintf(b, "| %s | %s | %s |\n", e.name, fbAt(e.at), fbSince(e.at, tl.kill))
	}
	fbWriteFigures(b, loop, r)
	fbWritePhases(b, r)
	fbWriteErrors(b, r)
}

// fbWriteFigures writes a run's headline figures.
func fbWriteFigures(b *strings.Builder, loop fbLoopback, r *fbRun) {
	tl := r.tl
	first, length := r.unavailableStretch()
	gap, gapFrom := r.load.longestGap(tl.kill, r.end, func(x fbSample) bool { return x.victim })
	getGap, getFrom := r.probe.longestGap(tl.kill, r.end, func(x fbSample) bool { return x.op == fbGet })
	setGap, setFrom := r.probe.longestGap(tl.kill, r.end, func(x fbSample) bool { return x.op == fbSet })
	fmt.Fprintf(b, "\n| figure | value |\n|---|---:|\n")
	fmt.Fprintf(b, "| detection (kill → marked failed) | %s |\n", fbSince(tl.failed, tl.kill))
	fmt.Fprintf(b, "| kill → killed node's shards served again (map) | %s |\n", fbSince(tl.recovered, tl.kill))
	fmt.Fprintf(b, "| unavailability, killed node's keys: longest stretch of seconds with an error or no op done | %d s (seconds %d–%d) |\n",
		length, first, first+length-1)
	fmt.Fprintf(b, "| longest time with no op done on the killed node's keys | %.2f s (from t = %.2f s) |\n", gap.Seconds(), gapFrom.Seconds())
	fmt.Fprintf(b, "| probe, other nodes' keys: longest time with no GET done | %.2f s (from t = %.2f s) |\n", getGap.Seconds(), getFrom.Seconds())
	fmt.Fprintf(b, "| probe, other nodes' keys: longest time with no SET done | %.2f s (from t = %.2f s) |\n", setGap.Seconds(), setFrom.Seconds())
	fmt.Fprintf(b, "| probe, other nodes' keys after the kill: done / failed | %d / %d |\n",
		len(fbWindow(r.probe.samples, tl.kill, r.end, fbSample.completed)), len(r.probe.errs))
	fmt.Fprintf(b, "| rebuild: keys, bytes | %d keys, %s |\n", tl.rebuildKeys, fbBytes(tl.rebuildBytes))
	fmt.Fprintf(b, "| rebuild duration (start → done); failed → done | %s; %s |\n",
		fbSince(tl.rebuildDone, tl.rebuildStart), fbSince(tl.rebuildDone, tl.failed))
	fmt.Fprintf(b, "| rebuild rate vs loopback copy | %.1f MB/s vs %.0f MB/s (%.3f) |\n", r.rebuildMBps(), loop.mbps(), r.rebuildMBps()/loop.mbps())
	fmt.Fprintf(b, "| rebuild rate vs target | %.1f MB/s vs %.0f MB/s (%.3f): %s |\n\n", r.rebuildMBps(),
		fbRebuildTargetMBps(r.spec), r.rebuildMBps()/fbRebuildTargetMBps(r.spec), fbMet(r.rebuildMBps() >= fbRebuildTargetMBps(r.spec)))
}

// fbWritePhases writes the throughput and latency of each phase of a run,
// over all keys and then over the killed node's keys alone: in the
// degraded phase those are served from recovered or restored pieces (for
// a packed scheme, a chunk restored when one of its keys is first used,
// decision 0003, copied from a hybrid list's replica, decision 0008).
func fbWritePhases(b *strings.Builder, r *fbRun) {
	for _, keys := range []struct {
		name string
		keep func(fbSample) bool
	}{{"all keys", nil}, {"killed node's keys", func(x fbSample) bool { return x.victim }}} {
		fmt.Fprintf(b, "| phase (%s) | window | GET/s | SET/s | GET p50 ms | GET p99 ms | SET p50 ms | SET p99 ms | errors |\n", keys.name)
		fmt.Fprintf(b, "|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, p := range r.phases() {
			s := r.load.stats(p.from, p.to, keys.keep)
			errors := s.errors
			if keys.keep != nil {
				errors = s.victimErrors
			}
			fmt.Fprintf(b, "| %s | %.2f–%.2f s | %.0f | %.0f | %s | %s | %s | %s | %d |\n", p.name, p.from.Seconds(), p.to.Seconds(),
				s.rate(s.gets), s.rate(s.sets), fbMs(fbPercentile(s.getLat, 0.5)), fbMs(fbPercentile(s.getLat, 0.99)),
				fbMs(fbPercentile(s.setLat, 0.5)), fbMs(fbPercentile(s.setLat, 0.99)), errors)
		}
		fmt.Fprintln(b)
	}
}

// fbWriteErrors writes the failed attempts of the workload and of the
// probe by kind, with an example each, and the wrong values read.
func fbWriteErrors(b *strings.Builder, r *fbRun) {
	if len(r.load.errs)+len(r.probe.errs)+len(r.wrong) == 0 {
		fmt.Fprintf(b, "No errors and no wrong values.\n\n")
		return
	}
	fmt.Fprintf(b, "| client | error kind | attempts | first at | first message |\n|---|---|---:|---:|---|\n")
	fbWriteErrorKinds(b, "workload", r.load.errs)
	fbWriteErrorKinds(b, "probe", r.probe.errs)
	for i, w := range r.wrong {
		if i == 10 {
			fmt.Fprintf(b, "- … %d more wrong values\n", len(r.wrong)-i)
			break
		}
		fmt.Fprintf(b, "- wrong value: %s\n", w)
	}
	fmt.Fprintln(b)
}

// fbWriteErrorKinds writes the rows of the errors table for one client group.
func fbWriteErrorKinds(b *strings.Builder, client string, errs []fbError) {
	count, example := map[string]int{}, map[string]fbError{}
	var kinds []string
	for _, e := range errs {
		if count[e.kind] == 0 {
			kinds = append(kinds, e.kind)
			example[e.kind] = e
		}
		count[e.kind]++
	}
	for _, k := range kinds {
		e := example[k]
		fmt.Fprintf(b, "| %s | %s | %d | %.2f s | `%s` |\n", client, k, count[k], e.at.Seconds(), fbTruncate(e.msg, 160))
	}
}

// fbTruncate cuts s to n bytes, on a rune boundary, without backquotes or
// pipes (it goes into a table cell).
func fbTruncate(s string, n int) string {
	s = strings.NewReplacer("`", "'", "|", "/", "\n", " ").Replace(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// isRuneStart says whether byte c begins a UTF-8 sequence.
func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// fbWriteSeries writes a run's per-second table with the events marked.
func fbWriteSeries(b *strings.Builder, r *fbRun) {
	fmt.Fprintf(b, "## Per second: %s\n\n", r.spec)
	fmt.Fprintf(b, "Operations are counted in the second they complete; latency percentiles are of those issued in it. "+
		"Killed node's keys: the workload's operations done / failed attempts on them. Probe: operations done / failed "+
		"on other nodes' keys.\n\n")
	fmt.Fprintf(b, "| t (s) | GET/s | SET/s | GET p50 ms | GET p99 ms | SET p50 ms | SET p99 ms | errors | killed node's keys | probe | events |\n")
	fmt.Fprintf(b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	probe := r.probe.secondRows(r.end)
	for s, row := range r.load.secondRows(r.end) {
		var marks []string
		for _, e := range r.events() {
			if e.at != fbNever && int(e.at/time.Second) == s {
				marks = append(marks, fmt.Sprintf("%s (%.2f s)", e.name, e.at.Seconds()))
			}
		}
		fmt.Fprintf(b, "| %d | %d | %d | %s | %s | %s | %s | %d | %d / %d | %d / %d | %s |\n", s, row.gets, row.sets,
			fbMs(fbPercentile(row.getLat, 0.5)), fbMs(fbPercentile(row.getLat, 0.99)),
			fbMs(fbPercentile(row.setLat, 0.5)), fbMs(fbPercentile(row.setLat, 0.99)),
			row.errors, row.victimOK, row.victimErrors, probe[s].gets+probe[s].sets, probe[s].errors, strings.Join(marks, ", "))
	}
	fmt.Fprintln(b)
}
