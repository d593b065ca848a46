package tests

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The batch coding benchmark (issue 26, decision 0009): on six real
// nodes, each scheme in turn takes inserts of new keys, then updates of
// those keys drawn from a Zipf distribution (BCStore's evaluation
// workload), from closed-loop clients; and @auto takes a load that ramps
// from 100 writes/s to saturation and back. The report gives, per scheme
// and workload, SETs per second, p50/p99/max latency, the peer bytes each
// logical byte written cost, the garbage ratio and the nodes' CPU µs per
// SET; and the ramp's phases with the nodes batching in each.

var (
	batchbenchReport   = flag.String("batchbench.report", "", "run TestBatchBenchmarkReport and write its Markdown report to this file (absolute path; CSVs beside it)")
	batchbenchSchemes  = flag.String("batchbench.schemes", "stripe:4+2,stripe:4+2@batch,stripe:4+2@auto,hybrid:4+2,hybrid:4+2@batch,hybrid:4+2@auto", "comma-separated scheme specs, one cluster each")
	batchbenchClients  = flag.Int("batchbench.clients", 64, "closed-loop client goroutines")
	batchbenchDuration = flag.Duration("batchbench.duration", 10*time.Second, "length of the insert and of the update phase")
	batchbenchValue    = flag.Int("batchbench.value", 100, "bytes per value")
	batchbenchZipf     = flag.Float64("batchbench.zipf", 1.1, "the updates' Zipf exponent s (> 1; YCSB's zipfian is about 0.99)")
	batchbenchRamp     = flag.Duration("batchbench.ramp", 3*time.Second, "length of each phase of the @auto ramp")
)

// bbRow is one scheme's figures for one workload.
type bbRow struct {
	spec, workload       string
	ops                  int64
	secs                 float64
	p50, p99, max        time.Duration
	wire, cpuUs, garbage float64
	errors               int64
}

// bbRamp is one phase of the @auto ramp.
type bbRamp struct {
	spec          string
	rate          int // offered writes/s; 0 is saturation
	done          int64
	secs          float64
	p50, p99, max time.Duration
	batching      []int64 // SCHEME.INFO batching_nodes, sampled
}

func TestBatchBenchmarkReport(t *testing.T) {
	if *batchbenchReport == "" {
		t.Skip("a benchmark: run with -batchbench.report=FILE (make bench-batch)")
	}
	var rows []bbRow
	var ramps []bbRamp
	var series []string // spec,workload,second,garbage ratio
	for _, spec := range strings.Split(*batchbenchSchemes, ",") {
		r, rp, s := runBatchbench(t, spec)
		rows, ramps, series = append(rows, r...), append(ramps, rp...), append(series, s...)
	}
	writeBatchbenchReport(t, rows, ramps, series)
}

// runBatchbench measures one scheme on a fresh six-node cluster.
func runBatchbench(t *testing.T, spec string) ([]bbRow, []bbRamp, []string) {
	c := startCluster(t, 6, clusterOptions{})
	defer c.stop()
	ctx := ctxT(t)
	must(t, c.plainClient(0, 2).Do(ctx, "SCHEME.DEFAULT", spec).Err())
	c.waitDefault(spec)
	rdb := c.clusterClientWith(func(o *redis.ClusterOptions) { o.PoolSize = *batchbenchClients })
	value := strings.Repeat("v", *batchbenchValue)
	var next atomic.Int64
	insert := func(_ *rand.Rand) string { return fmt.Sprintf("bb:%09d", next.Add(1)) }
	var series []string
	ins := bbPhase(t, c, rdb, spec, "insert", value, insert, &series)
	keys := next.Load()
	upd := bbPhase(t, c, rdb, spec, "zipf update", value, func(rng *rand.Rand) string {
		return fmt.Sprintf("bb:%09d", 1+bbZipf(rng, keys))
	}, &series)
	var ramps []bbRamp
	if strings.Contains(spec, "@auto") {
		ramps = bbRampRun(t, c, rdb, spec, value, keys)
	}
	return []bbRow{ins, upd}, ramps, series
}

// bbZipf draws a key index in [0, n) from a Zipf distribution of
// exponent *batchbenchZipf, hot keys spread over the key space.
func bbZipf(rng *rand.Rand, n int64) int64 {
	z := rand.NewZipf(rng, *batchbenchZipf, 1, uint64(n-1))
	return int64(z.Uint64()*2654435761) % n
}

// bbPhase runs closed-loop SETs of keys drawn by key for the phase's
// duration and measures it.
func bbPhase(t *testing.T, c *testCluster, rdb *redis.ClusterClient, spec, workload, value string, key func(*rand.Rand) string, series *[]string) bbRow {
	ctx, cancel := context.WithTimeout(ctxT(t), *batchbenchDuration)
	defer cancel()
	before := bbSnapshot(t, c, spec)
	start := time.Now()
	lat := make([][]time.Duration, *batchbenchClients)
	var errs atomic.Int64
	var wg sync.WaitGroup
	for i := range *batchbenchClients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 26))
			for ctx.Err() == nil {
				k := key(rng)
				t0 := time.Now()
				if err := rdb.Set(ctx, k, value, 0).Err(); err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		for tick := time.NewTicker(500 * time.Millisecond); ; {
			select {
			case <-ctx.Done():
				tick.Stop()
				return
			case <-tick.C:
				g := bbGarbage(c, spec)
				*series = append(*series, fmt.Sprintf("%s,%s,%.1f,%.4f", spec, workload, time.Since(start).Seconds(), g))
			}
		}
	}()
	wg.Wait()
	<-sampleDone
	secs := time.Since(start).Seconds()
	after := bbSnapshot(t, c, spec)
	all := slices.Concat(lat...)
	slices.Sort(all)
	row := bbRow{spec: spec, workload: workload, ops: int64(len(all)), secs: secs, errors: errs.Load(), garbage: bbGarbage(c, spec)}
	if n := len(all); n > 0 {
		row.p50, row.p99, row.max = all[n/2], all[n*99/100], all[n-1]
		row.cpuUs = float64(after.cpuTicks-before.cpuTicks) / bbTicksPerSec * 1e6 / float64(n)
	}
	if w := after.written - before.written; w > 0 {
		row.wire = (after.peer - before.peer) / w
	}
	t.Logf("%s %s: %.0f SET/s p50 %v p99 %v, %.3f peer B/logical B, %.1f CPU µs/SET, garbage %.3f, %d errors",
		spec, workload, float64(row.ops)/secs, row.p50, row.p99, row.wire, row.cpuUs, row.garbage, row.errors)
	return row
}

// bbTicksPerSec is the kernel's clock ticks per second (/proc stat
// fields), 100 on Linux everywhere we run.
const bbTicksPerSec = 100

// bbSnap is what a phase's figures are deltas of.
type bbSnap struct {
	peer, written float64
	cpuTicks      int64
}

// bbSnapshot reads the cluster's peer and logical bytes of spec and its
// nodes' CPU ticks.
func bbSnapshot(t *testing.T, c *testCluster, spec string) bbSnap {
	var s bbSnap
	for i := range c.nodes {
		f := scrape(t, c.nodes[i].httpPort)
		label := map[string]string{"scheme": spec}
		s.peer += sumMetric(only(f), "memgest_peer_redundancy_bytes_total", label)
		s.written += sumMetric(only(f), "memgest_scheme_written_bytes_total", label)
	}
	s.cpuTicks = clusterCPUTicks(c)
	return s
}

// procTicks is a process's user and system CPU ticks.
func procTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

// bbGarbage is SCHEME.INFO's garbage ratio of spec (0 in place).
func bbGarbage(c *testCluster, spec string) float64 {
	f := bbInfo(c, spec)
	g, _ := strconv.ParseFloat(f["garbage_ratio"], 64)
	return g
}

// bbInfo is SCHEME.INFO spec as field → text.
func bbInfo(c *testCluster, spec string) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := c.plainClient(0, 2).Do(ctx, "SCHEME.INFO", spec).Slice()
	out := map[string]string{}
	if err != nil {
		return out
	}
	for i := 0; i+1 < len(v); i += 2 {
		out[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
	}
	return out
}

// bbRampRun offers @auto a load ramping from 100 writes/s to saturation
// and back, a phase each *batchbenchRamp, updating existing keys.
func bbRampRun(t *testing.T, c *testCluster, rdb *redis.ClusterClient, spec, value string, keys int64) []bbRamp {
	var out []bbRamp
	for _, rate := range []int{100, 1000, 5000, 0, 5000, 1000, 100} {
		out = append(out, bbRampPhase(t, c, rdb, spec, value, keys, rate))
	}
	return out
}

// bbRampPhase offers rate writes/s (0: as many as the clients can) for a
// phase, sampling SCHEME.INFO's batching_nodes.
func bbRampPhase(t *testing.T, c *testCluster, rdb *redis.ClusterClient, spec, value string, keys int64, rate int) bbRamp {
	ctx, cancel := context.WithTimeout(ctxT(t), *batchbenchRamp)
	defer cancel()
	tokens := make(chan struct{}, 1<<16)
	if rate > 0 {
		go func() { // open loop: tokens at the rate, a millisecond's worth at a time
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			owed := 0.0
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					for owed += float64(rate) / 1000; owed >= 1; owed-- {
						select {
						case tokens <- struct{}{}:
						default:
						}
					}
				}
			}
		}()
	}
	start := time.Now()
	lat := make([][]time.Duration, *batchbenchClients)
	var wg sync.WaitGroup
	for i := range *batchbenchClients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 27))
			for ctx.Err() == nil {
				if rate > 0 {
					select {
					case <-ctx.Done():
						return
					case <-tokens:
					}
				}
				t0 := time.Now()
				if rdb.Set(ctx, fmt.Sprintf("bb:%09d", 1+bbZipf(rng, keys)), value, 0).Err() == nil {
					lat[i] = append(lat[i], time.Since(t0))
				}
			}
		})
	}
	var batching []int64
	for ctx.Err() == nil {
		time.Sleep(*batchbenchRamp / 6)
		n, _ := strconv.ParseInt(bbInfo(c, spec)["batching_nodes"], 10, 64)
		batching = append(batching, n)
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := bbRamp{spec: spec, rate: rate, done: int64(len(all)), secs: time.Since(start).Seconds(), batching: batching}
	if n := len(all); n > 0 {
		r.p50, r.p99, r.max = all[n/2], all[n*99/100], all[n-1]
	}
	t.Logf("%s ramp %d/s: %.0f done/s p50 %v p99 %v max %v, batching nodes %v", spec, rate, float64(r.done)/r.secs, r.p50, r.p99, r.max, batching)
	return r
}

// writeBatchbenchReport writes the Markdown report and the garbage
// ratio series CSV beside it.
func writeBatchbenchReport(t *testing.T, rows []bbRow, ramps []bbRamp, series []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Batch coding: in place, @batch and @auto (issue 26)\n\n")
	fmt.Fprintf(&b, "Written by `make bench-batch` (TestBatchBenchmarkReport), %s, on %s. Six memgest nodes on loopback, "+
		"%d closed-loop clients (go-redis cluster client, one SET per request), %d-byte values, %s per phase; "+
		"the updates draw existing keys from a Zipf distribution of exponent %.2f.\n\n",
		time.Now().UTC().Format("2006-01-02"), machineLine(), *batchbenchClients, *batchbenchValue, *batchbenchDuration, *batchbenchZipf)
	b.WriteString("| scheme | workload | SET/s | p50 ms | p99 ms | max ms | peer B per logical B | CPU µs per SET | garbage ratio at end | errors |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.2f | %.2f | %.1f | %.3f | %.1f | %.3f | %d |\n", r.spec, r.workload, float64(r.ops)/r.secs,
			ms(r.p50), ms(r.p99), ms(r.max), r.wire, r.cpuUs, r.garbage, r.errors)
	}
	if len(ramps) > 0 {
		b.WriteString("\n## @auto under a ramp\n\nEach phase offers the rate (0: saturation, every client closed-loop) for ")
		fmt.Fprintf(&b, "%s; `batching nodes` is SCHEME.INFO's batching_nodes sampled during the phase.\n\n", *batchbenchRamp)
		b.WriteString("| scheme | offered SET/s | done SET/s | p50 ms | p99 ms | max ms | batching nodes |\n|---|---:|---:|---:|---:|---:|---|\n")
		for _, r := range ramps {
			offered := strconv.Itoa(r.rate)
			if r.rate == 0 {
				offered = "saturation"
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.2f | %.2f | %.1f | %v |\n", r.spec, offered, float64(r.done)/r.secs, ms(r.p50), ms(r.p99), ms(r.max), r.batching)
		}
	}
	must(t, os.MkdirAll(filepath.Dir(*batchbenchReport), 0o755))
	csv := strings.TrimSuffix(*batchbenchReport, filepath.Ext(*batchbenchReport)) + "-garbage.csv"
	must(t, os.WriteFile(csv, []byte("scheme,workload,seconds,garbage_ratio\n"+strings.Join(series, "\n")+"\n"), 0o644))
	fmt.Fprintf(&b, "\nThe garbage ratio every half second of each phase is in [%s](%s).\n", filepath.Base(csv), filepath.Base(csv))
	must(t, os.WriteFile(*batchbenchReport, []byte(b.String()), 0o644))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// machineLine describes the machine: cores and model.
func machineLine() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	model, cores := "", 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") && model == "" {
			model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
		}
		if strings.HasPrefix(l, "processor") {
			cores++
		}
	}
	return fmt.Sprintf("%d cores (%s)", cores, model)
}
