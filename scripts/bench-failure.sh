#!/usr/bin/env bash
# bench-failure.sh [REPORT]: the failure benchmark (make bench-failure). A
# steady GET/SET workload runs against a 6-node memgest cluster with one
# spare while a node is killed with SIGKILL; once with the keys in rep:3,
# once in split:4+2, each with the rebuild unbounded and with the server's
# default pacing. Writes REPORT (default docs/benchmarks/failure.md: the
# unbounded runs) and REPORT-paced (failure-paced.md), each with the
# per-second series beside it (failure.csv, failure-events.csv) and their
# plot (failure.png).
#
# The benchmark is TestFailureBenchmarkReport in tests/failbench_test.go; its
# harness builds memgest itself (without -race here) and stops every process
# it started by PID. FAILBENCH_FLAGS passes more -failbench.* flags, e.g.
# FAILBENCH_FLAGS='-failbench.keys=50000 -failbench.value=16384'.
#
# matplotlib comes from the venv bench-lib.sh's plot_setup makes on first use
# under ${XDG_CACHE_HOME:-$HOME/.cache}/memgest-bench, outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
report=${1:-docs/benchmarks/failure.md}
case $report in /*) ;; *) report=$PWD/$report ;; esac
base=${report%.md}

source scripts/bench-lib.sh
plot_setup

mkdir -p "$(dirname "$report")"
# Two runs: the rebuild unbounded (REPORT, its rate) and with the server's
# default pacing (REPORT with -paced, what clients see meanwhile).
for pacing in unbounded default; do
	out=$report
	[ "$pacing" = default ] && out=${base}-paced.md
	# shellcheck disable=SC2086 # FAILBENCH_FLAGS is a list of flags
	MEMGEST_TEST_NORACE=1 go test ./tests -run '^TestFailureBenchmarkReport$' -count=1 -timeout 30m -v \
		-failbench.report="$out" -failbench.pacing="$pacing" ${FAILBENCH_FLAGS:-}
	"$plot_python" scripts/plot-failure.py "${out%.md}.csv" "${out%.md}-events.csv" "${out%.md}.png"
	echo "wrote $out, ${out%.md}.csv, ${out%.md}-events.csv, ${out%.md}.png"
done
