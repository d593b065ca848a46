# memgest — developer entry points. `make test` is what CI runs (.ci/run).

GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 10m
# Fuzz budget per target inside `make test`: a smoke run (seeds and a few
# seconds of mutation) that keeps the suite under 12 minutes on 2 cores;
# `make fuzz` is the real run.
CI_FUZZTIME ?= 2s
BENCHTIME ?= 200ms
ROUNDS    ?= 5

.PHONY: all build dev test test-deps test-huge check check-deploy fmt-check vet unit fuzz-short fuzz robustness bench bench-ec bench-ec-raw bench-memory bench-store bench-failure bench-hybrid bench-batch bench-temperature bench-plan bench-rebalance bench-tools clean

all: build

build:
	$(GO) build $(PKGS)

NODES     ?= 6
BASE_PORT ?= 7001

DEV_ARGS  ?=

## dev: build memgest and run a local cluster of NODES processes (client ports BASE_PORT..); Ctrl-C stops it. DEV_ARGS=--tls adds TLS.
dev:
	@echo "make dev: building bin/memgest (a first build fetches and compiles the dependencies: a minute or two)..."
	$(GO) build -o bin/memgest ./cmd/memgest
	./bin/memgest dev --nodes $(NODES) --base-port $(BASE_PORT) $(DEV_ARGS)

## test: formatting, vet, every unit test with the race detector, and a short run of every fuzz target.
test: check unit fuzz-short

check: fmt-check vet

## check-deploy: the Dockerfile's static build and the Kubernetes manifests in deploy/k8s, validated strictly against pinned schemas (scripts/check-deploy.sh; seconds once the venv and the build cache exist). CI runs it after `make test`.
check-deploy:
	scripts/check-deploy.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags failpoints $(PKGS)

## unit: every test with the race detector (tests/ includes the short robustness suite), and the fault injector built in.
unit:
	py=$$(scripts/test-deps.sh) && MEMGEST_TEST_PYTHON=$$py $(GO) test -race -count=1 -timeout 30m $(PKGS)
	$(GO) test -race -count=1 -tags failpoints ./internal/faults

## test-huge: TestHugeValuesEveryScheme with 512 MiB values (`make test` runs it with 24 MiB) on nodes built without the race detector; about 20 s and 9 GiB of memory (decision 0006).
test-huge:
	MEMGEST_TEST_NORACE=1 MEMGEST_TEST_HUGE_MIB=512 $(GO) test ./tests -run '^TestHugeValuesEveryScheme$$' -count=1 -timeout 10m -v

## test-deps: the venv with a pinned redis-py that tests/ drive memgest's cluster mode with (made once under ~/.cache/memgest-test); prints its python for MEMGEST_TEST_PYTHON.
test-deps:
	@scripts/test-deps.sh

fuzz-short:
	scripts/fuzz.sh $(CI_FUZZTIME) $(PKGS)

## fuzz: every fuzz target for FUZZTIME each (default 10m).
fuzz:
	scripts/fuzz.sh $(FUZZTIME) $(PKGS)

RUNS ?= 120
SEED ?=

## robustness: RUNS seeded fault scenarios (docs/robustness.md) on nodes built without the race detector; the report goes to docs/robustness-report.md. SEED=n replays one scenario.
robustness:
ifeq ($(SEED),)
	MEMGEST_TEST_NORACE=1 $(GO) test ./tests -run '^TestRobustness$$' -count=1 -timeout 90m -v \
		-robustness.runs=$(RUNS) -robustness.checktime=10s -robustness.report=$(CURDIR)/docs/robustness-report.md
else
	MEMGEST_TEST_NORACE=1 $(GO) test ./tests -run '^TestRobustness$$' -count=1 -timeout 30m -v -robustness.checktime=10s -robustness.seed=$(SEED)
endif

## bench-ec: the erasure-coding table (memgest vs raw klauspost vs memcpy), written to docs/benchmarks/ec.md.
bench-ec:
	$(GO) test ./ec -run '^TestECBenchmarkReport$$' -count=1 -timeout 60m \
		-test.benchtime=$(BENCHTIME) -ec.rounds=$(ROUNDS) -ec.report=$(CURDIR)/docs/benchmarks/ec.md -ec.filter='$(FILTER)'
	@cat docs/benchmarks/ec.md

## bench-ec-raw: the same cases as plain `go test -bench` output (for benchstat).
bench-ec-raw:
	$(GO) test ./ec -run '^$$' -bench . -benchmem

## bench: the whole comparison with Redis (redis-benchmark matrix, go-ycsb A-F, memory per record; about 25 minutes), written to docs/benchmarks/README.md with charts.
bench:
	scripts/bench.sh docs/benchmarks

## bench-tools: build the pinned benchmark tools once (go-ycsb v1.0.1, cached in ~/.cache/memgest-bench).
bench-tools:
	bash -c 'source scripts/bench-lib.sh && ycsb_setup && echo "$$ycsb"'

## bench-memory: RSS per object of MemEC's workload (1 M and 10 M objects; OBJECTS overrides) in memgest none, rep:3, split:4+2, stripe:4+2 and in Redis with and without replicas, written to docs/benchmarks/memory.md.
bench-memory:
	scripts/bench-memory.sh docs/benchmarks/memory.md

## bench-store: bytes of overhead per key and GC cost of the node-local store (docs/store.md).
bench-store:
	$(GO) test ./store -run '^TestStoreOverheadReport$$' -count=1 -v -store.report

## bench-hybrid: issue 25's measurements of hybrid:4+2 against stripe:4+2 and rep:3 (throughput and CPU µs per request, memory at 1 M and 10 M objects, the failure benchmark; about 20 minutes), quoted in docs/benchmarks/hybrid.md.
bench-hybrid:
	scripts/bench-hybrid.sh docs/benchmarks

## bench-batch: issue 26's measurements of the write modes: TestBatchBenchmarkReport (6 nodes, stripe:4+2 and hybrid:4+2 in place, @batch and @auto:5ms; inserts, Zipf updates, an @auto ramp; about 6 minutes) to docs/benchmarks/batch.md, and scripts/bench-wire.sh (redis-benchmark -P16 inserts and updates, peer bytes per logical byte) appended to it.
bench-batch:
	MEMGEST_TEST_NORACE=1 $(GO) test ./tests -run '^TestBatchBenchmarkReport$$' -count=1 -timeout 40m -v \
		-batchbench.report=$(CURDIR)/docs/benchmarks/batch.md -batchbench.duration=8s -batchbench.ramp=2s \
		-batchbench.schemes=stripe:4+2,stripe:4+2@batch,stripe:4+2@auto:5ms,hybrid:4+2,hybrid:4+2@batch,hybrid:4+2@auto:5ms
	$(GO) build -o bin/memgest ./cmd/memgest
	{ echo; echo '## redis-benchmark -P16 (scripts/bench-wire.sh)'; echo; echo '```'; \
		scripts/bench-wire.sh $(CURDIR)/bin/memgest stripe:4+2 stripe:4+2@batch hybrid:4+2 hybrid:4+2@batch; echo '```'; } >> docs/benchmarks/batch.md

## bench-temperature: issue 27's measurement of the temperature policy: TestTemperatureBenchmarkReport (6 nodes; 100 k keys of 1000 B, 60 s of zipfian load with every key rep:3, every key stripe:4+2, and rep:3 keys under SCHEME.POLICY TEMPERATURE rep:3 stripe:4+2 10 at --policy-move-rate 500; YCSB-B (95% reads) to docs/benchmarks/temperature.md, then YCSB-A (50% reads) to temperature-a.md; about 8 minutes).
bench-temperature:
	MEMGEST_TEST_NORACE=1 $(GO) test ./tests -run '^TestTemperatureBenchmarkReport$$' -count=1 -timeout 30m -v \
		-tempbench.report=$(CURDIR)/docs/benchmarks/temperature.md -tempbench.duration=60s
	MEMGEST_TEST_NORACE=1 $(GO) test ./tests -run '^TestTemperatureBenchmarkReport$$' -count=1 -timeout 30m -v \
		-tempbench.report=$(CURDIR)/docs/benchmarks/temperature-a.md -tempbench.duration=60s -tempbench.reads=0.5

## bench-plan: memgest plan on the 6-node dev cluster with the rebuild rate it measured after a node was killed (scripts/plan-dev.sh; about a minute), to docs/benchmarks/plan-dev6.{txt,json,png}.
bench-plan:
	$(GO) build -o bin/memgest ./cmd/memgest
	scripts/plan-dev.sh $(CURDIR)/bin/memgest $(CURDIR)/docs/benchmarks/plan-dev6

## bench-rebalance: issue 29's benchmark: a 6-node dev cluster with 3 spares and a mixed data set (300 k keys of 100 B stripe:4+2, 60 k of 1 KB rep:3, 20 k of 8 KB split:4+2) grows to 9 nodes and shrinks back to 6 online under a steady GET/SET load of the three schemes (scripts/bench-rebalance.sh; about 6 minutes), to docs/benchmarks/rebalance.md, rebalance-windows.csv and rebalance-status.csv.
bench-rebalance:
	$(GO) build -o bin/memgest ./cmd/memgest
	scripts/bench-rebalance.sh bin/memgest docs/benchmarks

## bench-failure: kill -9 a node under a steady GET/SET load (rep:3, then split:4+2); per-second throughput and p99, rebuild rate vs loopback copy, in docs/benchmarks/failure.md and failure.png.
bench-failure:
	scripts/bench-failure.sh docs/benchmarks/failure.md

clean:
	$(GO) clean -testcache -fuzzcache
	rm -rf bin
