package tests

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/memgest/memgest/internal/faults"
	"github.com/redis/go-redis/v9"
)

// The robustness suite (issue 5, docs/robustness.md): seeded scenarios,
// each a fresh cluster of robNodes nodes and a spare, robClients clients
// running GET, SET (plain, NX, XX), APPEND, INCR, DEL and SCHEME.MOVE on a
// bounded key set, and one nemesis (nemesis_test.go) injected mid-way.
// After the fault heals the runner waits for recovery and rebuild, reads
// every key back, checks each key's history with porcupine, checks every
// piece against its key's committed version (SCHEME.VERIFY), and checks
// that the pieces the nodes hold are exactly those of live keys
// (SCHEME.INFO), so memory is back to each scheme's formula.
//
//	go test ./tests -run '^TestRobustness$'                        # the short suite (make test)
//	go test ./tests -run '^TestRobustness$' -robustness.runs=120   # make robustness
//	go test ./tests -run '^TestRobustness$' -robustness.seed=17    # make robustness SEED=17
var (
	robRunsFlag      = flag.Int("robustness.runs", 0, "scenarios to run, seeds 1..N (0: one per nemesis, the short suite)")
	robSeedFlag      = flag.Int64("robustness.seed", 0, "run only the scenario of this seed")
	robReportFlag    = flag.String("robustness.report", "", "write the report (markdown) to this file")
	robArtifactsFlag = flag.String("robustness.artifacts", "", "directory for the histories of failed runs (default: a temporary one)")
	// robCheckTimeFlag bounds porcupine's search on one key's history. A
	// key it cannot decide is reported, not failed on, and one that is
	// decidable takes milliseconds: the short suite gives up after 3 s
	// (each undecided key cost its whole budget, 10 to 20 s of CI's time
	// a run), `make robustness` searches 10 s.
	robCheckTimeFlag = flag.Duration("robustness.checktime", 3*time.Second, "how long porcupine may search one key's history before calling it inconclusive")
)

const (
	robNodes   = 5 // data nodes; node robNodes is the spare
	robClients = 8
	robWarmup  = 700 * time.Millisecond
	robTail    = 1500 * time.Millisecond // workload after the fault heals
	// robSettle bounds the wait for recovery and rebuild after the load.
	robSettle = 45 * time.Second
	// robSweepWait bounds the wait for the sweep to drop the garbage pieces
	// a run left (server/repair_sweep.go), after which stray pieces are failures.
	robSweepWait = 20 * time.Second
)

// robDefaultScheme is the scheme of keys that INCR or APPEND create.
const robDefaultScheme = "rep:3"

// robFlags are every scenario node's flags: a short failure timeout, so a
// run is short, and the DEBUG command for the nemeses.
var robFlags = []string{"--failure-timeout", "1s", "--heartbeat-interval", "100ms", "--enable-debug-command"}

// keyGroup is a set of keys of one tolerance class: their writes pick a
// scheme among the group's, so a MOVE never changes how many failures a key
// survives.
type keyGroup struct {
	prefix    string
	tolerance int
	schemes   []string
	keys      int
}

var robGroups = []keyGroup{
	{"a", 1, []string{"rep:2", "split:2+1", "stripe:2+1/256", "stripe:2+1/256@batch"}, 40},
	{"b", 2, []string{"rep:3", "split:3+2", "stripe:3+2/256", "hybrid:3+2/256", "stripe:3+2/256@batch", "hybrid:3+2/256@auto"}, 40},
	{"n", 0, []string{"none"}, 20},
}

// robKeys is the key set; robHot the first robHotPerGroup keys of each
// group, which get a quarter of all operations. robKeys[0] is the hottest.
var robKeys, robHot = robKeySet()

const robHotPerGroup = 2

func robKeySet() (all, hot []string) {
	for _, g := range robGroups {
		for i := 0; i < g.keys; i++ {
			k := fmt.Sprintf("%s%02d", g.prefix, i)
			all = append(all, k)
			if i < robHotPerGroup {
				hot = append(hot, k)
			}
		}
	}
	return all, hot
}

func groupOf(key string) keyGroup {
	for _, g := range robGroups {
		if strings.HasPrefix(key, g.prefix) {
			return g
		}
	}
	panic("no group for key " + key)
}

// robInput is a client's next operation: on a hot key a quarter of the
// time. (Hotter keys make histories porcupine cannot decide in time.)
func robInput(rng *rand.Rand, id, i int) kvInput {
	key := robKeys[rng.Intn(len(robKeys))]
	if rng.Intn(4) == 0 {
		key = robHot[rng.Intn(len(robHot))]
	}
	return randomInput(rng, []string{key}, groupOf(key).schemes, id, i)
}

// robRun is one scenario in progress.
type robRun struct {
	t       *testing.T
	c       *testCluster
	seed    int64
	rng     *rand.Rand
	start   time.Time
	victims []int // nodes killed or crashed
	touched []int // nodes paused, cut off or slowed (alive after)
	reached int   // failpoints reached
	// committed is each live key's "scheme version", as SCHEME.VERIFY last
	// reported it.
	committed map[string]string
	mu        sync.Mutex
	events    []string
	admins    map[int]*redis.Client
	// unknowns counts the writes whose outcome is unknown; the first
	// maxUnknownEvents are events, with their errors.
	unknowns atomic.Int64
}

// maxUnknownEvents is how many writes of unknown outcome a run names.
const maxUnknownEvents = 3

func (r *robRun) event(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%5.2fs %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...)))
}

// admin is a client on node i for the runner's own commands.
func (r *robRun) admin(i int) *redis.Client {
	if r.admins[i] == nil {
		r.admins[i] = redis.NewClient(&redis.Options{Addr: r.c.nodes[i].addr(), Protocol: 2, DisableIdentity: true,
			ReadTimeout: 10 * time.Second, MaxRetries: -1})
		r.t.Cleanup(func() { r.admins[i].Close() })
	}
	return r.admins[i]
}

// robResult is what one scenario found.
type robResult struct {
	seed          int64
	nemesis       string
	ops           int
	indeterminate int
	illegal       []string // keys whose history is not linearizable
	inconclusive  []string // keys porcupine could not decide within -robustness.checktime
	lostAcked     int      // acknowledged writes a final read did not see, on keys within tolerance
	mismatches    []string // SCHEME.VERIFY disagreements
	stray         int      // pieces held beyond those of live keys' committed versions (or missing)
	reached       int
	lostKeys      int           // keys beyond their scheme's tolerance, -LOST at the end (lossy keys only)
	longestGap    time.Duration // longest a hot key went without a successful operation
	harness       string        // the run could not complete: why
	artifacts     string
	events        []string
}

// failed says whether the run broke a promise (or could not be run). An
// inconclusive check is reported, not failed on.
func (res robResult) failed() bool {
	return len(res.illegal) > 0 || res.lostAcked > 0 || len(res.mismatches) > 0 || res.stray != 0 || res.harness != ""
}

// robOptions change a scenario, for the tests of the suite itself.
type robOptions struct {
	nemesis *nemesis // instead of the seed's
	bug     string   // a failpoint armed "on" on every node (an injected bug)
}

// quietLogger drops go-redis's own log lines (a dial to a killed node,
// retried): the clients' errors are in the histories.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func TestRobustness(t *testing.T) {
	redis.SetLogger(quietLogger{})
	seeds := robSeeds()
	began, code := time.Now(), fbCodeState() // the code the nodes are built from, before anyone commits during the run
	var results []robResult
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			res := robResult{seed: seed, nemesis: nemeses[seed%int64(len(nemeses))].name}
			defer func() {
				if t.Failed() && res.harness == "" && !res.failed() {
					res.harness = "the run stopped early (see the test log)"
				}
				results = append(results, res)
			}()
			runScenario(t, seed, robOptions{}, &res)
			t.Logf("seed %d (%s): %d operations, %d indeterminate; events:\n%s", seed, res.nemesis, res.ops, res.indeterminate, strings.Join(res.events, "\n"))
			if res.failed() {
				t.Errorf("seed %d (%s) broke a promise: illegal keys %v, %d lost acknowledged writes, mismatches %v, %d stray pieces%s; replay: make robustness SEED=%d\nevents:\n%s",
					seed, res.nemesis, res.illegal, res.lostAcked, res.mismatches, res.stray, artifactNote(res), seed, strings.Join(res.events, "\n"))
			}
		})
	}
	report := robReport(results)
	t.Log("\n" + report)
	if *robReportFlag != "" {
		header := fmt.Sprintf("# Robustness report\n\nWritten by `make robustness` (tests/robustness_test.go; what the columns mean: docs/robustness.md).\n\n"+
			"- %d runs, seeds %d–%d, in %s, %s\n- %s, %d CPUs, %s, %s; nodes built without the race detector\n- %s\n\n",
			len(results), seeds[0], seeds[len(seeds)-1], time.Since(began).Round(time.Second), began.UTC().Format("2006-01-02 15:04 UTC"),
			fbCPUModel(), runtime.NumCPU(), fbKernel(), runtime.Version(), code)
		must(t, os.WriteFile(*robReportFlag, []byte(header+report), 0o644))
	}
}

func artifactNote(res robResult) string {
	if res.artifacts == "" {
		return ""
	}
	return "; history and visualisation in " + res.artifacts
}

// robSeeds are the seeds to run: one (SEED=), 1..N, or by default one per
// nemesis.
func robSeeds() []int64 {
	n := *robRunsFlag
	if *robSeedFlag != 0 {
		return []int64{*robSeedFlag}
	}
	if n == 0 {
		n = len(nemeses)
	}
	seeds := make([]int64, n)
	for i := range seeds {
		seeds[i] = int64(i + 1)
	}
	return seeds
}

// runScenario runs the scenario of seed and fills res.
func runScenario(t *testing.T, seed int64, o robOptions, res *robResult) {
	nm := nemeses[seed%int64(len(nemeses))]
	if o.nemesis != nil {
		nm = *o.nemesis
	}
	res.nemesis = nm.name
	r := &robRun{t: t, seed: seed, rng: randomSource(seed), admins: map[int]*redis.Client{}}
	r.c = startCluster(t, robNodes, clusterOptions{spares: 1, extra: robFlags})
	defer func() { res.events = r.events }()
	// INCR and APPEND create a missing key under the default scheme: the
	// strongest one keeps every key at least as safe as its group says.
	must(t, r.admin(0).Do(ctxT(t), "SCHEME.DEFAULT", robDefaultScheme).Err())
	r.c.waitDefault(robDefaultScheme)
	if o.bug != "" {
		for i := range r.c.nodes {
			r.debug(i, "FAILPOINT", o.bug, "on")
		}
	}
	h := &robHistory{}
	r.start = time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var nextID atomic.Int64
	nextID.Store(robClients + 1) // robClients: the final reads
	for id := 0; id < robClients; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			r.client(id, stop, h, &nextID)
		}(id)
	}
	time.Sleep(robWarmup)
	faultAt := time.Since(r.start)
	nm.inject(r)
	time.Sleep(robTail)
	close(stop)
	wg.Wait()
	loadEnd := time.Since(r.start)
	res.reached = r.reached

	r.settle()
	res.lostKeys = r.finalReads(h)
	res.mismatches, res.stray = r.verifyPieces()
	sweepWait := robSweepWait
	if o.bug != "" {
		sweepWait = 0 // a run with a bug injected is judged by its history; what garbage it leaves is moot
	}
	for deadline := time.Now().Add(sweepWait); res.stray != 0 && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond) // the sweep drops garbage a page a second
		res.mismatches, res.stray = r.verifyPieces()
	}
	if res.stray != 0 {
		r.describeStray()
	}
	r.event("final reads and pieces checked (%d stray)", res.stray)
	res.ops, res.indeterminate = len(h.ops), h.indeterminate()
	res.longestGap = h.longestGap(faultAt, loadEnd)
	strict, lossy, markable := h.split(nm.failures, r.lostRanges())
	res.lostAcked = lostAcknowledged(append(slices.Clone(strict), markable...))
	res.illegal, res.inconclusive, res.artifacts = r.check(strict, lossy, markable)
	r.event("histories checked (%d inconclusive keys)", len(res.inconclusive))
}

// client runs one client until stop: it starts on node id mod the cluster
// size and moves to the next node after any error that is not a refusal
// (its node may be dead or cut off). A write whose outcome is unknown is
// pending forever and the client goes on under a new id (etcd's
// robustness tests do the same).
func (r *robRun) client(id int, stop chan struct{}, h *robHistory, nextID *atomic.Int64) {
	rng := rand.New(rand.NewSource(r.seed*1000 + int64(id)))
	at := id % len(r.c.nodes)
	dial := func() *redis.Client {
		return redis.NewClient(&redis.Options{Addr: r.c.nodes[at].addr(), Protocol: 2, DisableIdentity: true,
			MaxRetries: -1, DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second})
	}
	cl := dial()
	defer func() { cl.Close() }()
	ctx := ctxT(r.t)
	cid := id
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		in := robInput(rng, id, i)
		call := time.Since(r.start).Nanoseconds()
		out, err := runInput(ctx, cl, in)
		ret := time.Since(r.start).Nanoseconds()
		if err != nil && strings.HasPrefix(err.Error(), "LOST") {
			out, err = kvOutput{lost: true}, nil // refused: the key is lost
		}
		if err == nil {
			h.add(porcupine.Operation{ClientId: cid, Input: in, Call: call, Output: out, Return: ret})
			continue
		}
		if in.op != "get" && !refused(err) {
			h.add(porcupine.Operation{ClientId: cid, Input: in, Call: call, Output: unknownOutcome, Return: math.MaxInt64})
			cid = int(nextID.Add(1) - 1)
			if r.unknowns.Add(1) <= maxUnknownEvents {
				r.event("client %d: %s %s outcome unknown: %v", id, in.op, in.key, err)
			}
		}
		if !refused(err) {
			cl.Close()
			at = (at + 1) % len(r.c.nodes)
			cl = dial()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// live are the nodes whose process runs.
func (r *robRun) live() []int {
	var out []int
	for i, nd := range r.c.nodes {
		select {
		case <-nd.done:
		default:
			out = append(out, i)
		}
	}
	return out
}

// settle waits until the cluster has noticed every victim and every live
// node serves with nothing left to recover or rebuild.
func (r *robRun) settle() {
	deadline := time.Now().Add(robSettle)
	for {
		why := r.unsettled()
		if why == "" {
			r.event("settled")
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the cluster did not settle in %s: %s", robSettle, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unsettled says what the cluster is still doing, or "".
func (r *robRun) unsettled() string {
	st, err := r.c.status(r.watcher())
	if err != nil {
		return err.Error()
	}
	for _, v := range r.victims {
		for _, n := range st.Nodes {
			if n.ClientAddr == r.c.nodes[v].addr() && n.State != "failed" {
				return fmt.Sprintf("node %d (down) is %s", v, n.State)
			}
		}
	}
	if !st.serving() {
		return "a node serves without a fresh lease"
	}
	for _, i := range r.live() {
		info, err := r.admin(i).Info(ctxT(r.t), "memgest").Result()
		if err != nil {
			return fmt.Sprintf("node %d: %v", i, err)
		}
		for _, want := range []string{"shards_recovering:0", "shards_rebuilding:0"} {
			if !strings.Contains(info, want) {
				return fmt.Sprintf("node %d lacks %s", i, want)
			}
		}
		// A node fenced by a pause or a partition rejoins as a spare.
		if !strings.Contains(info, "node_state:up") && !strings.Contains(info, "node_state:spare") {
			return fmt.Sprintf("node %d is neither up nor a spare", i)
		}
	}
	return ""
}

// finalReads reads every key through the watcher, after the faults healed,
// into the history, and deletes the keys that answer -LOST (beyond their
// scheme's tolerance), so that their surviving pieces become garbage the
// sweep must collect. It returns how many there were.
func (r *robRun) finalReads(h *robHistory) (lost int) {
	cl := r.admin(r.watcher())
	ctx := ctxT(r.t)
	for _, k := range robKeys {
		in := kvInput{key: k, op: "get"}
		call := time.Since(r.start).Nanoseconds()
		out, err := runInput(ctx, cl, in)
		for deadline := time.Now().Add(10 * time.Second); err != nil && refused(err) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			out, err = runInput(ctx, cl, in)
		}
		if err != nil && strings.HasPrefix(err.Error(), "LOST") {
			out, err = kvOutput{lost: true}, nil
		}
		if err != nil {
			r.t.Fatalf("final GET %s: %v", k, err)
		}
		h.add(porcupine.Operation{ClientId: robClients, Input: in, Call: call, Output: out, Return: time.Since(r.start).Nanoseconds()})
		if out.lost {
			lost++
			if err := cl.Del(ctx, k).Err(); err != nil {
				r.t.Fatalf("DEL of lost key %s: %v", k, err)
			}
		}
	}
	return lost
}

// TestRobustnessCatchesAnInjectedBug proves the suite can fail: with
// faults.BugEarlyAck on, coordinators acknowledge writes before their
// redundancy is stored, and killing the hot keys' coordinator must then
// show up as lost acknowledged writes or a history porcupine refuses.
func TestRobustnessCatchesAnInjectedBug(t *testing.T) {
	nm := nemeses[1] // kill the hot keys' coordinator
	var res robResult
	runScenario(t, 1001, robOptions{nemesis: &nm, bug: faults.BugEarlyAck}, &res)
	if len(res.illegal) == 0 && res.lostAcked == 0 {
		t.Fatalf("with acknowledgements before redundancy and the coordinator killed, the suite found nothing: %+v", res)
	}
	t.Logf("the injected bug was caught: illegal keys %v, %d lost acknowledged writes, %d operations", res.illegal, res.lostAcked, res.ops)
	checkArtifactsMarkIllegal(t, res)
}

// checkArtifactsMarkIllegal checks that the histories a run kept name each
// key porcupine refused.
func checkArtifactsMarkIllegal(t *testing.T, res robResult) {
	t.Helper()
	if len(res.illegal) == 0 {
		return
	}
	var kept strings.Builder
	for _, what := range []string{"strict", "lossy"} {
		b, _ := os.ReadFile(filepath.Join(res.artifacts, what+"-history.txt"))
		kept.Write(b)
	}
	for _, k := range res.illegal {
		if !strings.Contains(kept.String(), "# not linearizable: key "+k+"\n") {
			t.Errorf("the histories in %s do not mark key %s, which porcupine refused", res.artifacts, k)
		}
	}
}
