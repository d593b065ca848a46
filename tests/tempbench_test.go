package tests

import (
	"context"
	"flag"
	"fmt"
	"math"
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

// The temperature policy benchmark (issue 27): a YCSB-style zipfian load
// (YCSB workload B: 95% reads, 5% updates, θ = 0.99, 1000-byte values) on
// six real nodes, three ways: every key rep:3, every key stripe:4+2, and
// keys written as rep:3 under SCHEME.POLICY TEMPERATURE rep:3 stripe:4+2
// IDLE, which moves keys idle for IDLE to stripe:4+2 in the background
// and back on use. The report gives, per configuration, operations per
// second, latency, the nodes' CPU µs per operation, the bytes the schemes
// store and the nodes' RSS at the end, and the policy's moves; and, per
// 5-second window, throughput, p99 and stored bytes, which show the
// moves' cost and the memory they save as it happens.

var (
	tempbenchReport   = flag.String("tempbench.report", "", "run TestTemperatureBenchmarkReport and write its Markdown report to this file (absolute path; a CSV beside it)")
	tempbenchKeys     = flag.Int("tempbench.keys", 100000, "keys loaded before the run")
	tempbenchValue    = flag.Int("tempbench.value", 1000, "bytes per value")
	tempbenchClients  = flag.Int("tempbench.clients", 32, "closed-loop client goroutines")
	tempbenchDuration = flag.Duration("tempbench.duration", 60*time.Second, "length of the mixed run")
	tempbenchIdle     = flag.Int("tempbench.idle", 10, "the temperature policy's idle seconds")
	tempbenchReads    = flag.Float64("tempbench.reads", 0.95, "share of operations that are GETs")
	tempbenchTheta    = flag.Float64("tempbench.theta", 0.99, "the zipfian constant (YCSB's default 0.99)")
	tempbenchMoveRate = flag.Int("tempbench.moverate", 500, "--policy-move-rate of the temperature configuration's nodes (0: the default)")
	tempbenchOnly     = flag.String("tempbench.only", "", "run only the configurations whose name contains this")
)

// tbConfig is one configuration of the benchmark.
type tbConfig struct {
	name, scheme string
	policy       []any // SCHEME.POLICY arguments, or nil
}

// tbRow is one configuration's figures.
type tbRow struct {
	config              string
	ops, errors         int64
	secs                float64
	p50, p99, max       time.Duration
	cpuUs               float64
	stored, logical     float64
	rss                 float64
	movesCold, movesHot float64
}

func TestTemperatureBenchmarkReport(t *testing.T) {
	if *tempbenchReport == "" {
		t.Skip("a benchmark: run with -tempbench.report=FILE (make bench-temperature)")
	}
	configs := []tbConfig{
		{name: "rep:3", scheme: "rep:3"},
		{name: "stripe:4+2", scheme: "stripe:4+2"},
		{name: fmt.Sprintf("temperature rep:3 → stripe:4+2 after %d s", *tempbenchIdle), scheme: "rep:3",
			policy: []any{"SCHEME.POLICY", "TEMPERATURE", "rep:3", "stripe:4+2", *tempbenchIdle}},
	}
	var rows []tbRow
	var series []string
	for _, cfg := range configs {
		if !strings.Contains(cfg.name, *tempbenchOnly) {
			continue
		}
		r, s := runTempbench(t, cfg)
		rows, series = append(rows, r), append(series, s...)
	}
	writeTempbenchReport(t, rows, series)
}

// runTempbench loads the keys on a fresh cluster and runs the mix.
func runTempbench(t *testing.T, cfg tbConfig) (tbRow, []string) {
	var o clusterOptions
	if cfg.policy != nil && *tempbenchMoveRate > 0 {
		o.extra = []string{fmt.Sprintf("--policy-move-rate=%d", *tempbenchMoveRate)}
	}
	c := startCluster(t, 6, o)
	defer c.stop()
	ctx := ctxT(t)
	admin := c.plainClient(0, 2)
	must(t, admin.Do(ctx, "SCHEME.DEFAULT", cfg.scheme).Err())
	c.waitDefault(cfg.scheme)
	rdb := c.clusterClientWith(func(o *redis.ClusterOptions) { o.PoolSize = *tempbenchClients })
	value := strings.Repeat("v", *tempbenchValue)
	tbLoad(t, rdb, value)
	if cfg.policy != nil {
		must(t, admin.Do(ctx, cfg.policy...).Err())
	}
	return tbRun(t, c, rdb, cfg, value)
}

// tbKey names key i.
func tbKey(i int64) string { return fmt.Sprintf("user%010d", i) }

// tbLoad writes every key once, pipelined.
func tbLoad(t *testing.T, rdb *redis.ClusterClient, value string) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for {
				first := next.Add(256) - 256
				if first >= int64(*tempbenchKeys) {
					return
				}
				_, err := rdb.Pipelined(ctxT(t), func(p redis.Pipeliner) error {
					for i := first; i < min(first+256, int64(*tempbenchKeys)); i++ {
						p.Set(ctxT(t), tbKey(i), value, 0)
					}
					return nil
				})
				must(t, err)
			}
		})
	}
	wg.Wait()
}

// tbRun runs the closed-loop mix for the duration, sampling every 5 s.
func tbRun(t *testing.T, c *testCluster, rdb *redis.ClusterClient, cfg tbConfig, value string) (tbRow, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), *tempbenchDuration) // not ctxT: runs may outlast its minute
	defer cancel()
	zipf := newYCSBZipf(int64(*tempbenchKeys), *tempbenchTheta)
	cpu0 := clusterCPUTicks(c)
	start := time.Now()
	const window = 5 * time.Second
	windows := int(*tempbenchDuration/window) + 1
	lat := make([][][]time.Duration, *tempbenchClients) // client → window → latencies
	mu := make([]sync.Mutex, *tempbenchClients)         // guards lat[client]
	var errs atomic.Int64
	var wg sync.WaitGroup
	for i := range *tempbenchClients {
		lat[i] = make([][]time.Duration, windows)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 27))
			for ctx.Err() == nil {
				k := tbKey(zipf.next(rng))
				t0 := time.Now()
				var err error
				if rng.Float64() < *tempbenchReads {
					err = rdb.Get(ctx, k).Err()
				} else {
					err = rdb.Set(ctx, k, value, 0).Err()
				}
				if err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
					}
					continue
				}
				w := min(int(t0.Sub(start)/window), windows-1)
				mu[i].Lock()
				lat[i][w] = append(lat[i][w], time.Since(t0))
				mu[i].Unlock()
			}
		})
	}
	var series []string
	for w := 0; ; w++ {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(time.Duration(w+1) * window))):
			stored, _ := tbStored(c)
			cold, hot := tbMoves(t, c)
			var in []time.Duration
			for i := range lat {
				mu[i].Lock()
				in = append(in, lat[i][w]...) // an operation begun in w and still running is left out
				mu[i].Unlock()
			}
			slices.Sort(in)
			p99 := time.Duration(0)
			if len(in) > 0 {
				p99 = in[len(in)*99/100]
			}
			series = append(series, fmt.Sprintf("%s,%d,%.0f,%.2f,%.0f,%.0f,%.0f", cfg.name, (w+1)*5, float64(len(in))/window.Seconds(), ms(p99), stored, cold, hot))
			continue
		}
		break
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	var all []time.Duration
	for i := range lat {
		all = append(all, slices.Concat(lat[i]...)...)
	}
	slices.Sort(all)
	row := tbRow{config: cfg.name, ops: int64(len(all)), secs: secs, errors: errs.Load()}
	if n := len(all); n > 0 {
		row.p50, row.p99, row.max = all[n/2], all[n*99/100], all[n-1]
		row.cpuUs = float64(clusterCPUTicks(c)-cpu0) / bbTicksPerSec * 1e6 / float64(n)
	}
	row.stored, row.logical = tbStored(c)
	row.rss = tbRSS(c)
	row.movesCold, row.movesHot = tbMoves(t, c)
	t.Logf("%s: %.0f ops/s p50 %v p99 %v, %.1f CPU µs/op, %.0f MB stored for %.0f MB logical, RSS %.0f MB, moves %.0f cold %.0f hot, %d errors",
		row.config, float64(row.ops)/secs, row.p50, row.p99, row.cpuUs, row.stored/1e6, row.logical/1e6, row.rss/1e6, row.movesCold, row.movesHot, row.errors)
	return row, series
}

// clusterCPUTicks sums the nodes' CPU ticks (procTicks).
func clusterCPUTicks(c *testCluster) int64 {
	var sum int64
	for _, nd := range c.nodes {
		sum += procTicks(nd.cmd.Process.Pid)
	}
	return sum
}

// tbStored sums SCHEME.INFO's stored and logical bytes of the two schemes.
func tbStored(c *testCluster) (stored, logical float64) {
	for _, s := range []string{"rep:3", "stripe:4+2"} {
		f := bbInfo(c, s)
		a, _ := strconv.ParseFloat(f["stored_bytes"], 64)
		b, _ := strconv.ParseFloat(f["logical_bytes"], 64)
		stored, logical = stored+a, logical+b
	}
	return stored, logical
}

// tbRSS sums the nodes' resident set sizes.
func tbRSS(c *testCluster) float64 {
	var sum float64
	for _, nd := range c.nodes {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", nd.cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				sum += kb * 1024
			}
		}
	}
	return sum
}

// tbMoves sums the policy's moves to the cold and to the hot scheme over
// the nodes.
func tbMoves(t *testing.T, c *testCluster) (cold, hot float64) {
	for i := range c.nodes {
		f := scrape(t, c.nodes[i].httpPort)
		cold += sumMetric(only(f), "memgest_policy_moves_total", map[string]string{"direction": "to_cold"})
		hot += sumMetric(only(f), "memgest_policy_moves_total", map[string]string{"direction": "to_hot"})
	}
	return cold, hot
}

// ycsbZipf is YCSB's ZipfianGenerator (Gray et al., "Quickly generating
// billion-record synthetic databases", SIGMOD 1994), for θ < 1, which
// math/rand's Zipf does not take; draws are scrambled over the key space
// as YCSB's ScrambledZipfianGenerator does, so hot keys are not adjacent.
type ycsbZipf struct {
	n                        int64
	theta, alpha, zetan, eta float64
	halfPowTheta             float64
}

func newYCSBZipf(n int64, theta float64) *ycsbZipf {
	zeta := func(n int64) float64 {
		sum := 0.0
		for i := int64(1); i <= n; i++ {
			sum += 1 / math.Pow(float64(i), theta)
		}
		return sum
	}
	z := &ycsbZipf{n: n, theta: theta, alpha: 1 / (1 - theta), zetan: zeta(n), halfPowTheta: math.Pow(0.5, theta)}
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta(2)/z.zetan)
	return z
}

func (z *ycsbZipf) next(rng *rand.Rand) int64 {
	u := rng.Float64()
	uz := u * z.zetan
	var rank int64
	switch {
	case uz < 1:
		rank = 0
	case uz < 1+z.halfPowTheta:
		rank = 1
	default:
		rank = min(int64(float64(z.n)*math.Pow(z.eta*u-z.eta+1, z.alpha)), z.n-1)
	}
	return int64(uint64(rank) * 2654435761 % uint64(z.n))
}

func writeTempbenchReport(t *testing.T, rows []tbRow, series []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Temperature policy: rep:3, stripe:4+2, and hot keys in rep:3 with idle ones in stripe:4+2 (issue 27)\n\n")
	fmt.Fprintf(&b, "Written by `make bench-temperature` (TestTemperatureBenchmarkReport), %s, on %s. Six memgest nodes on loopback; "+
		"%d keys of %d bytes loaded, then %s of YCSB-style load: %d closed-loop clients (go-redis cluster client), %.0f%% GETs and the rest SETs, "+
		"keys drawn from YCSB's scrambled zipfian (θ = %.2f). The temperature configuration's nodes run with --policy-move-rate %d (keys per second per node).\n\n",
		time.Now().UTC().Format("2006-01-02"), machineLine(), *tempbenchKeys, *tempbenchValue, *tempbenchDuration, *tempbenchClients,
		100**tempbenchReads, *tempbenchTheta, *tempbenchMoveRate)
	b.WriteString("| configuration | ops/s | p50 ms | p99 ms | max ms | CPU µs per op | stored MB at end | stored B per logical B | nodes' RSS MB | moves to cold | moves to hot | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %.2f | %.1f | %.1f | %.0f | %.2f | %.0f | %.0f | %.0f | %d |\n", r.config, float64(r.ops)/r.secs,
			ms(r.p50), ms(r.p99), ms(r.max), r.cpuUs, r.stored/1e6, r.stored/math.Max(r.logical, 1), r.rss/1e6, r.movesCold, r.movesHot, r.errors)
	}
	must(t, os.MkdirAll(filepath.Dir(*tempbenchReport), 0o755))
	csv := strings.TrimSuffix(*tempbenchReport, filepath.Ext(*tempbenchReport)) + "-windows.csv"
	must(t, os.WriteFile(csv, []byte("configuration,second,ops_per_s,p99_ms,stored_bytes,moves_cold,moves_hot\n"+strings.Join(series, "\n")+"\n"), 0o644))
	fmt.Fprintf(&b, "\nPer 5-second window (throughput, p99, stored bytes, moves so far): [%s](%s).\n", filepath.Base(csv), filepath.Base(csv))
	must(t, os.WriteFile(*tempbenchReport, []byte(b.String()), 0o644))
}
