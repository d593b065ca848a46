# memgest — developer entry points. `make test` is what CI runs (.ci/run).

GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 10m
# Fuzz budget per target inside `make test`; kept short so CI stays fast.
CI_FUZZTIME ?= 10s
BENCHTIME ?= 200ms
ROUNDS    ?= 5

.PHONY: all build test check fmt-check vet unit fuzz-short fuzz bench-ec bench-ec-raw clean

all: build

build:
	$(GO) build $(PKGS)

## test: formatting, vet, every unit test with the race detector, and a short run of every fuzz target.
test: check unit fuzz-short

check: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 $(PKGS)

fuzz-short:
	scripts/fuzz.sh $(CI_FUZZTIME) $(PKGS)

## fuzz: every fuzz target for FUZZTIME each (default 10m).
fuzz:
	scripts/fuzz.sh $(FUZZTIME) $(PKGS)

## bench-ec: the erasure-coding table (memgest vs raw klauspost vs memcpy), written to docs/benchmarks/ec.md.
bench-ec:
	$(GO) test ./ec -run '^TestECBenchmarkReport$$' -count=1 -timeout 60m \
		-test.benchtime=$(BENCHTIME) -ec.rounds=$(ROUNDS) -ec.report=$(CURDIR)/docs/benchmarks/ec.md -ec.filter='$(FILTER)'
	@cat docs/benchmarks/ec.md

## bench-ec-raw: the same cases as plain `go test -bench` output (for benchstat).
bench-ec-raw:
	$(GO) test ./ec -run '^$$' -bench . -benchmem

clean:
	$(GO) clean -testcache -fuzzcache
