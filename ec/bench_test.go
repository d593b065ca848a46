package ec

import (
	"crypto/subtle"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/cpuid/v2"
	"github.com/klauspost/reedsolomon"
)

// Benchmarks of the matrix: encode, reconstruct with 1 and 2 lost
// data shards, and a single-parity delta, for RS(3,2), RS(4,2) and RS(10,4)
// at 1 KiB to 1 MiB shards. Each case runs three ways: through this package
// ("memgest"), as the raw klauspost/reedsolomon calls with the same matrix
// ("klauspost"), and as a Go copy of the same number of input bytes
// ("memcpy"). Throughput is bytes of data input per second.
//
//	go test -run '^$' -bench . ./ec               # standard output
//	make bench-ec                                 # the table, docs/benchmarks/ec.md

var (
	reportPath   = flag.String("ec.report", "", "run TestECBenchmarkReport and write its markdown table to this file")
	reportRounds = flag.Int("ec.rounds", 5, "interleaved rounds per case in TestECBenchmarkReport; the median is reported")
	reportFilter = flag.String("ec.filter", "", "regexp: TestECBenchmarkReport measures only the cases whose name matches")
)

type benchCase struct {
	op   string // "encode", "reconstruct-1", "reconstruct-2" or "delta"
	k, m int
	size int // bytes per shard
}

// memcpyTarget is the case the memcpy target is stated for, and the
// one the kernel alternatives re-measure.
var memcpyTarget = benchCase{op: "encode", k: 4, m: 2, size: 4 << 10}

func benchCases() []benchCase {
	var cases []benchCase
	for _, op := range []string{"encode", "reconstruct-1", "reconstruct-2", "delta"} {
		for _, km := range [][2]int{{3, 2}, {4, 2}, {10, 4}} {
			for _, size := range []int{1 << 10, 4 << 10, 64 << 10, 1 << 20} {
				cases = append(cases, benchCase{op: op, k: km[0], m: km[1], size: size})
			}
		}
	}
	return cases
}

func (bc benchCase) name() string {
	return fmt.Sprintf("%s/RS(%d,%d)/%s", bc.op, bc.k, bc.m, sizeName(bc.size))
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// inputBytes is the data a single operation consumes: k shards, or one
// delta for a single-parity update.
func (bc benchCase) inputBytes() int {
	if bc.op == "delta" {
		return bc.size
	}
	return bc.k * bc.size
}

// lost is the number of data shards a reconstruct case drops.
func (bc benchCase) lost() int {
	switch bc.op {
	case "reconstruct-1":
		return 1
	case "reconstruct-2":
		return 2
	}
	return 0
}

func BenchmarkEC(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name()+"/memgest", bc.memgest)
		b.Run(bc.name()+"/klauspost", bc.klauspost)
		b.Run(bc.name()+"/memcpy", memcpyBench(bc.inputBytes()))
	}
}

// memgest runs the case through this package's Codec.
func (bc benchCase) memgest(b *testing.B) {
	c := mustCodec(b, bc.k, bc.m)
	switch bc.op {
	case "encode":
		bc.loop(b, c.Encode)
	case "delta":
		j, i := bc.m-1, bc.k-1 // a coefficient ≠ 1: the general multiply path
		delta, parity := bc.deltaBuffers()
		bc.run(b, func() error { return c.UpdateParity(j, i, delta, parity) })
	default:
		bc.reconstruct(b, c.Reconstruct, c.Encode)
	}
}

// klauspost runs the same work as direct library calls with the same matrix.
func (bc benchCase) klauspost(b *testing.B) {
	enc, err := reedsolomon.New(bc.k, bc.m, reedsolomon.WithCustomMatrix(generatorMatrix(bc.k, bc.m)))
	if err != nil {
		b.Fatal(err)
	}
	switch bc.op {
	case "encode":
		bc.loop(b, enc.Encode)
	case "delta":
		coef := generatorCoefficient(bc.m-1, bc.k-1)
		delta, parity := bc.deltaBuffers()
		bc.run(b, func() error { reedsolomon.LowLevel{}.GalMulSliceXor(coef, delta, parity); return nil })
	default:
		bc.reconstruct(b, enc.Reconstruct, enc.Encode)
	}
}

func (bc benchCase) shards() [][]byte {
	return newShards(rand.New(rand.NewPCG(1, 2)), bc.k, bc.m, bc.size)
}

func (bc benchCase) deltaBuffers() (delta, parity []byte) {
	s := bc.shards()
	return s[0], s[bc.k]
}

func (bc benchCase) loop(b *testing.B, fn func([][]byte) error) {
	shards := bc.shards()
	bc.run(b, func() error { return fn(shards) })
}

// reconstruct drops bc.lost() data shards before every call, keeping their
// capacity so that the decoder writes in place rather than allocating.
func (bc benchCase) reconstruct(b *testing.B, fn, encode func([][]byte) error) {
	shards := bc.shards()
	if err := encode(shards); err != nil {
		b.Fatal(err)
	}
	bc.run(b, func() error {
		for i := range bc.lost() {
			shards[i] = shards[i][:0]
		}
		return fn(shards)
	})
}

func (bc benchCase) run(b *testing.B, op func() error) {
	b.SetBytes(int64(bc.inputBytes()))
	for b.Loop() { // the first call resets the timer: set-up is not measured
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
}

// memcpyBench copies n bytes between two buffers that stay in cache when n
// fits: the reference "in-cache memcpy" figure.
func memcpyBench(n int) func(*testing.B) {
	return func(b *testing.B) {
		src, dst := make([]byte, n), make([]byte, n)
		b.SetBytes(int64(n))
		for b.Loop() {
			copy(dst, src)
		}
	}
}

// TestECBenchmarkReport measures every case in interleaved rounds (memgest,
// klauspost and memcpy back to back, so that drifts of the machine hit all
// three alike), prints a markdown table of the median throughputs and their
// ratios, and writes it to -ec.report. It runs only when that flag is set.
func TestECBenchmarkReport(t *testing.T) {
	if *reportPath == "" {
		t.Skip("set -ec.report=FILE to run the benchmark report (make bench-ec)")
	}
	filter, err := regexp.Compile(*reportFilter)
	if err != nil {
		t.Fatal(err)
	}
	var rows []reportRow
	for _, bc := range benchCases() {
		if filter.MatchString(bc.name()) {
			rows = append(rows, measure(bc, *reportRounds))
		}
	}
	if len(rows) == 0 {
		t.Fatalf("no case matches -ec.filter=%q", *reportFilter)
	}
	var kernels []kernelRow
	if filter.MatchString(memcpyTarget.name()) {
		kernels = measureKernels(*reportRounds)
	}
	report := formatReport(rows, kernels)
	fmt.Print(report)
	if err := os.WriteFile(*reportPath, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
}

type reportRow struct {
	benchCase
	memgest, klauspost, memcpy []float64 // GB/s, one per round
}

// measure runs the three variants of a case in rounds, reversing their order
// every other round so that neither the wrapper nor the library always runs
// first (warm caches, frequency drift).
func measure(bc benchCase, rounds int) reportRow {
	row := reportRow{benchCase: bc}
	steps := []func(){
		func() { row.memgest = append(row.memgest, gbps(testing.Benchmark(bc.memgest))) },
		func() { row.klauspost = append(row.klauspost, gbps(testing.Benchmark(bc.klauspost))) },
		func() { row.memcpy = append(row.memcpy, gbps(testing.Benchmark(memcpyBench(bc.inputBytes())))) },
	}
	for r := range rounds {
		for i := range steps {
			if r%2 == 1 {
				i = len(steps) - 1 - i
			}
			steps[i]()
		}
	}
	return row
}

// wrapperRatio is the median over rounds of memgest/klauspost measured in the
// same round: pairing cancels drifts that last longer than a round.
func (r reportRow) wrapperRatio() float64 {
	ratios := make([]float64, len(r.memgest))
	for i := range ratios {
		ratios[i] = r.memgest[i] / r.klauspost[i]
	}
	return median(ratios)
}

func gbps(r testing.BenchmarkResult) float64 {
	if r.T <= 0 {
		return 0
	}
	return float64(r.Bytes) * float64(r.N) / r.T.Seconds() / 1e9
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

type kernelRow struct {
	name           string
	gbps, memcpyGB []float64
}

func measureKernels(rounds int) []kernelRow {
	var out []kernelRow
	for _, v := range kernelVariants() {
		row := kernelRow{name: v.name}
		for range rounds {
			row.gbps = append(row.gbps, gbps(testing.Benchmark(v.run)))
			row.memcpyGB = append(row.memcpyGB, gbps(testing.Benchmark(memcpyBench(memcpyTarget.inputBytes()))))
		}
		out = append(out, row)
	}
	return out
}

func formatReport(rows []reportRow, kernels []kernelRow) string {
	var b strings.Builder
	b.WriteString("# Erasure-coding benchmarks\n\n")
	b.WriteString("Generated by `make bench-ec` (`ec/bench_test.go`, TestECBenchmarkReport); do not edit by hand.\n\n")
	writeEnvironment(&b)
	writeTargets(&b, rows)
	writeKernels(&b, kernels)
	b.WriteString("\n## All cases\n\n")
	b.WriteString("GB/s of data input (k shards; one shard for `delta`), median of the rounds, ")
	b.WriteString("with min–max of memgest's rounds. `memcpy` copies the same number of bytes. ")
	b.WriteString("memgest / klauspost is the median of the per-round ratios.\n\n")
	b.WriteString("| operation | code | shard | memgest GB/s | (min–max) | klauspost GB/s | memcpy GB/s | memgest / klauspost | memgest / memcpy |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		mg, kp, mc := median(r.memgest), median(r.klauspost), median(r.memcpy)
		fmt.Fprintf(&b, "| %s | RS(%d,%d) | %s | %.2f | %.2f–%.2f | %.2f | %.2f | %.3f | %.3f |\n",
			r.op, r.k, r.m, sizeName(r.size), mg, slices.Min(r.memgest), slices.Max(r.memgest), kp, mc, r.wrapperRatio(), mg/mc)
	}
	return b.String()
}

func writeEnvironment(b *strings.Builder) {
	fmt.Fprintf(b, "- date: %s\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(b, "- CPU: %s, %d logical cores, GOMAXPROCS %d; features used by klauspost: AVX2 %v, AVX512F %v, GFNI %v\n",
		cpuid.CPU.BrandName, cpuid.CPU.LogicalCores, runtime.GOMAXPROCS(0),
		cpuid.CPU.Supports(cpuid.AVX2), cpuid.CPU.Supports(cpuid.AVX512F), cpuid.CPU.Supports(cpuid.GFNI))
	fmt.Fprintf(b, "- caches: L1d %d KiB, L2 %d KiB, L3 %d KiB\n",
		cpuid.CPU.Cache.L1D>>10, cpuid.CPU.Cache.L2>>10, cpuid.CPU.Cache.L3>>10)
	fmt.Fprintf(b, "- %s, klauspost/reedsolomon %s\n", runtime.Version(), moduleVersion("github.com/klauspost/reedsolomon"))
	fmt.Fprintf(b, "- rounds per case: %d, benchtime per measurement: %s\n\n", *reportRounds, benchtime())
}

// moduleVersion reads the required version of a module from go.mod; test
// binaries carry no dependency list in their build info.
func moduleVersion(path string) string {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(mod)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return "unknown"
}

func benchtime() string {
	if f := flag.Lookup("test.benchtime"); f != nil {
		return f.Value.String()
	}
	return "default"
}

// writeTargets states the two targets with the figures that decide them.
func writeTargets(b *strings.Builder, rows []reportRow) {
	var ratios []float64
	worst := rows[0]
	for _, r := range rows {
		ratios = append(ratios, r.wrapperRatio())
		if r.wrapperRatio() < worst.wrapperRatio() {
			worst = r
		}
	}
	b.WriteString("## Targets\n\n| target | figure | met |\n|---|---|---|\n")
	fmt.Fprintf(b, "| memgest ≥ 0.95× raw klauspost, every case | median ratio %.3f, lowest %.3f (%s) | %s |\n",
		median(ratios), slices.Min(ratios), worst.name(), yesNo(slices.Min(ratios) >= 0.95))
	for _, r := range rows {
		if r.benchCase == memcpyTarget {
			ratio := median(r.memgest) / median(r.memcpy)
			fmt.Fprintf(b, "| RS(4,2) encode at 4 KiB ≥ 0.4× in-cache memcpy | %.2f GB/s vs %.2f GB/s = %.3f | %s |\n",
				median(r.memgest), median(r.memcpy), ratio, yesNo(ratio >= 0.4))
		}
	}
}

// writeKernels lists the other ways to encode RS(4,2) at 4 KiB, so that a
// missed memcpy ratio can be told apart from overhead of our own.
func writeKernels(b *strings.Builder, kernels []kernelRow) {
	if len(kernels) == 0 {
		return
	}
	b.WriteString("\n## RS(4,2) encode at 4 KiB: kernel alternatives\n\n")
	b.WriteString("The same parity computed other ways with the library (median GB/s of data input; memcpy of 16 KiB measured beside each).\n\n")
	b.WriteString("| method | GB/s | memcpy GB/s | / memcpy |\n|---|---:|---:|---:|\n")
	for _, k := range kernels {
		fmt.Fprintf(b, "| %s | %.2f | %.2f | %.3f |\n", k.name, median(k.gbps), median(k.memcpyGB), median(k.gbps)/median(k.memcpyGB))
	}
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// kernelVariant is another way to compute RS(4,2) parity of 4 KiB shards
// with the library. TestECBenchmarkReport measures them to show what bounds
// the encode-versus-memcpy ratio on the machine at hand.
type kernelVariant struct {
	name string
	run  func(*testing.B)
}

func kernelVariants() []kernelVariant {
	bc := memcpyTarget
	k, size := bc.k, bc.size
	g := generatorMatrix(bc.k, bc.m)
	encoder := func(opts ...reedsolomon.Option) func(*testing.B) {
		enc, err := reedsolomon.New(bc.k, bc.m, append(opts, reedsolomon.WithCustomMatrix(g))...)
		if err != nil {
			panic(err)
		}
		return func(b *testing.B) { bc.loop(b, enc.Encode) }
	}
	return []kernelVariant{
		{"klauspost default (AVX2 where present)", encoder()},
		{"klauspost SSSE3, no AVX2", encoder(reedsolomon.WithAVX2(false))},
		{"klauspost pure Go", encoder(reedsolomon.WithAVX2(false), reedsolomon.WithSSSE3(false))},
		{"parity 0 by XOR passes + parity 1 by a 4×1 multiply", xorPlusMultiply(k, size, g)},
		{"parity 0 by XOR passes alone (half the work)", xorOnly(k, size)},
	}
}

// xorPlusMultiply exploits row 0 of G being all ones: parity 0 by XOR,
// parity 1 by a one-parity encoder with row 1 of G.
func xorPlusMultiply(k, size int, g [][]byte) func(*testing.B) {
	one, err := reedsolomon.New(k, 1, reedsolomon.WithCustomMatrix(g[1:]))
	if err != nil {
		panic(err)
	}
	return func(b *testing.B) {
		shards := benchCase{k: k, m: 2, size: size}.shards()
		second := append(slices.Clone(shards[:k]), shards[k+1])
		b.SetBytes(int64(k * size))
		for b.Loop() {
			xorInto(shards[k], shards[:k])
			_ = one.Encode(second)
		}
	}
}

func xorOnly(k, size int) func(*testing.B) {
	return func(b *testing.B) {
		shards := benchCase{k: k, m: 1, size: size}.shards()
		b.SetBytes(int64(k * size))
		for b.Loop() {
			xorInto(shards[k], shards[:k])
		}
	}
}

func xorInto(dst []byte, data [][]byte) {
	subtle.XORBytes(dst, data[0], data[1])
	for _, d := range data[2:] {
		subtle.XORBytes(dst, dst, d)
	}
}

func BenchmarkEncodeKernels(b *testing.B) {
	for _, v := range kernelVariants() {
		b.Run(v.name, v.run)
	}
}
