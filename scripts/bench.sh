#!/usr/bin/env bash
# bench.sh [OUTDIR]: the whole side-by-side comparison (make bench). For each
# target — redis-server alone, with two asynchronous replicas, a 3-master
# Redis Cluster, one memgest node, and a fresh 6-node memgest cluster per
# scheme — it runs:
#
#   - the redis-benchmark matrix: SET, GET, MSET at 32 B, 100 B, 1 KiB and
#     16 KiB values and INCR, each at -P 1 and -P 16, each run sized to last
#     at least MIN_SECONDS (aiming at RUN_SECONDS; a cell's first try, of
#     REQUESTS, can take longer on a slow target); SET and GET at 100 B run
#     REPEATS times;
#   - go-ycsb v1.0.1 (built once by ycsb_setup): a load of RECORDS records,
#     then workloads A, B, C, D, F of OPS operations each with Zipfian and
#     uniform request distributions, THREADS threads, once per data type of
#     DATATYPES: `string` (a record is one JSON value; CSV tool "ycsb") and
#     `hash` (a record is a hash of 10 fields read with HMGET and updated
#     with HSET; tool "ycsb-hash"), each on a freshly started target;
#   - memory: the RSS the target's processes gained while the YCSB load was
#     written, per record (the hash load's row is "TARGET (hash)").
#
# Results go to OUTDIR/bench-results.csv, bench-memory.csv and bench-meta.txt; then
# scripts/bench-report.py writes OUTDIR/README.md and its PNG charts.
# Everything started here runs on 127.0.0.1 with free ports and is stopped
# by PID on exit. Installs Debian's redis-server/redis-tools when missing.
#
# Sizing knobs (defaults finish in about 25 minutes on 2 cores): REPEATS,
# MIN_SECONDS, RUN_SECONDS, REQUESTS (a cell's first try), KEYSPACE,
# CLIENTS, RECORDS, OPS, THREADS, SIZES, WORKLOADS, DATATYPES, TARGETS (a
# ;-separated subset of the names below).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/benchmarks}
REPEATS=${REPEATS:-3}
REQUESTS=${REQUESTS:-20000}
MIN_SECONDS=${MIN_SECONDS:-2}
RUN_SECONDS=${RUN_SECONDS:-2.5}
HEADLINE_SIZE=${HEADLINE_SIZE:-100}
KEYSPACE=${KEYSPACE:-10000}
CLIENTS=${CLIENTS:-50}
RECORDS=${RECORDS:-100000}
OPS=${OPS:-50000}
THREADS=${THREADS:-16}
SIZES=${SIZES:-"32 100 1024 16384"}
WORKLOADS=${WORKLOADS:-"a b c d f"}
DATATYPES=${DATATYPES:-"string hash"}
ALL_TARGETS=("redis" "redis+2replicas" "redis cluster" "memgest 1 node none"
	"memgest none" "memgest rep:3" "memgest split:4+2" "memgest stripe:4+2")

source scripts/bench-lib.sh
bench_setup
ycsb_setup
plot_setup
mkdir -p "$out"
csv=$out/bench-results.csv
echo "tool,target,test,param,pipeline,repeat,ops_per_sec,p50_ms,p99_ms,errors" >"$csv"
memcsv=$out/bench-memory.csv
echo "target,records,rss_before,rss_after" >"$memcsv"
started=$(date +%s)
# The version measured: the tree as it is when the run starts.
version="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo +changes)"

# row FIELDS...: appends one CSV row.
row() { (IFS=,; echo "$*") >>"$csv"; }

# rb_requests[cell] remembers how many requests made a cell's run last
# about RUN_SECONDS, for its next repeat.
declare -A rb_requests

# rb_one TARGET TEST SIZE P REPEAT [ARGS]: one redis-benchmark run, sized
# to last at least MIN_SECONDS. In cluster mode redis-benchmark notices the
# end of a run on a 250 ms timer, so its elapsed time is a multiple of
# 250 ms; a short run would understate a fast target's rate.
rb_one() {
	local target=$1 test=$2 size=$3 p=$4 rep=$5; shift 5
	local cell="$target|$test|$size|$p" n line rps p50 p99 secs
	n=${rb_requests[$cell]:-$REQUESTS}
	# An MSET writes 10 keys: a tenth as many is a first try of similar length.
	[ "$test" = mset ] && [ -z "${rb_requests[$cell]:-}" ] && n=$((REQUESTS / 10))
	for _ in 1 2 3 4 5; do
		line=$(redis-benchmark -p "$port" -t "$test" -d "$size" -r "$KEYSPACE" -n "$n" -c "$CLIENTS" -P "$p" --csv "$@" 2>/dev/null |
			tail -1 | tr -d '"')
		# test,rps,avg,min,p50,p95,p99,max
		IFS=, read -r _ rps _ _ p50 _ p99 _ <<<"$line"
		secs=$(awk -v n="$n" -v r="$rps" 'BEGIN{ printf "%.3f", (r > 0) ? n / r : 0 }')
		awk -v s="$secs" -v m="$MIN_SECONDS" 'BEGIN{ exit !(s >= m) }' && break
		n=$(awk -v n="$n" -v s="$secs" -v t="$RUN_SECONDS" 'BEGIN{ f = (s > 0) ? t / s : 20; if (f > 20) f = 20; printf "%d", n * f + 1 }')
	done
	rb_requests[$cell]=$n
	[ "$test" = incr ] && size=-
	row rb "$target" "${test^^}" "$size" "$p" "$rep" "$rps" "$p50" "$p99" 0
	echo "  $target ${test^^} $size B -P $p: $rps/s p50 $p50 ms p99 $p99 ms ($n requests, $secs s)" >&2
}

# flush_target empties the target: FLUSHALL on every port of $flush_ports
# (a Redis Cluster's masters each; one node of Redis, or of memgest with
# its CLUSTER option: FLUSHALL alone empties one memgest node's slots,
# docs/decisions/0004).
flush_target() {
	local p
	for p in "${flush_ports[@]}"; do redis-cli -p "$p" FLUSHALL "${flush_args[@]}" >/dev/null; done
}

# rb_matrix TARGET [ARGS]: the redis-benchmark matrix. The headline cells
# (SET and GET of HEADLINE_SIZE values) run REPEATS times, the rest once.
rb_matrix() {
	local target=$1 rep p size test; shift
	# Warm up (the single node has had no YCSB load to grow its heap).
	redis-benchmark -p "$port" -t set -d "$HEADLINE_SIZE" -r "$KEYSPACE" -n $((REQUESTS * 5)) -c "$CLIENTS" -P 16 "$@" >/dev/null 2>&1
	for rep in $(seq 1 "$REPEATS"); do
		for p in 1 16; do
			for test in set get; do rb_one "$target" "$test" "$HEADLINE_SIZE" "$p" "$rep" "$@"; done
		done
	done
	for p in 1 16; do
		for size in $SIZES; do
			# Each size starts from an empty keyspace: overwriting keys of
			# another size is a different workload (a stripe key changing
			# size relocates, and compaction follows).
			flush_target
			for test in set get mset; do
				[ "$size" = "$HEADLINE_SIZE" ] && [ "$test" != mset ] && continue
				rb_one "$target" "$test" "$size" "$p" 1 "$@"
			done
		done
		rb_one "$target" incr 0 "$p" 1 "$@"
	done
}

# ycsb_total OUTPUT: "ops p50_ms p99_ms errors" of a go-ycsb run's summary.
ycsb_total() {
	awk '/^TOTAL/ { for (i = 1; i <= NF; i++) { v = $(i + 1); sub(/,$/, "", v)
			if ($i == "OPS:") ops = v; if ($i == "50th(us):") p50 = v; if ($i == "99th(us):") p99 = v } }
		/_ERROR / { for (i = 1; i <= NF; i++) if ($i == "Count:") { v = $(i + 1); sub(/,$/, "", v); errs += v } }
		END { printf "%s %.3f %.3f %d\n", ops, p50 / 1000, p99 / 1000, errs }' <<<"$1"
}

# ycsb_datatype TARGET MODE DATATYPE: load RECORDS records of go-ycsb's
# redis.datatype DATATYPE, measure the memory they took, then run every
# workload with each distribution. Rows go under tool "ycsb" for strings,
# "ycsb-DATATYPE" otherwise.
ycsb_datatype() {
	local target=$1 mode=$2 datatype=$3 w dist tool=ycsb memtarget=$1
	[ "$datatype" = string ] || tool=ycsb-$datatype memtarget="$1 ($datatype)"
	local props=(-p recordcount="$RECORDS" -p threadcount="$THREADS" -p redis.mode="$mode"
		-p redis.addr=127.0.0.1:"$port" -p redis.datatype="$datatype")
	sleep 1
	local before after
	before=$(rss "${procs[@]}")
	local res
	res=$("$ycsb" load redis -P "$ycsb_workloads/workloada" "${props[@]}" 2>&1)
	read -r ops p50 p99 errs < <(ycsb_total "$res")
	row "$tool" "$target" load - - 1 "$ops" "$p50" "$p99" "$errs"
	[ "$target" = redis+2replicas ] && redis_synced
	sleep 3 # background redundancy and directory updates settle
	after=$(rss "${procs[@]}")
	echo "$memtarget,$RECORDS,$before,$after" >>"$memcsv"
	echo "  $memtarget: load $ops rec/s, $(((after - before) / RECORDS)) B/record" >&2
	for dist in zipfian uniform; do
		for w in $WORKLOADS; do
			local d=$dist
			# D reads the latest inserts: its own distribution stands for Zipfian.
			[ "$w" = d ] && [ "$dist" = zipfian ] && d=latest
			res=$("$ycsb" run redis -P "$ycsb_workloads/workload$w" "${props[@]}" \
				-p operationcount="$OPS" -p requestdistribution="$d" 2>&1)
			read -r ops p50 p99 errs < <(ycsb_total "$res")
			row "$tool" "$target" "${w^^}" "$dist" - 1 "$ops" "$p50" "$p99" "$errs"
			echo "  $memtarget YCSB ${w^^} $dist: $ops ops/s p50 $p50 ms p99 $p99 ms errors $errs" >&2
		done
	done
}

# run_target NAME: starts NAME, measures it and stops it; then, for each
# data type of DATATYPES after the first, starts a fresh NAME for its YCSB
# suite, so that each load's memory is measured from the same start.
run_target() {
	local name=$1 datatype first=1
	echo "$name" >&2
	for datatype in $DATATYPES; do
		start_target "$name"
		# The single node answers only the like-for-like redis-benchmark
		# comparison; YCSB and memory run on the clusters.
		if [ "$name" = "memgest 1 node none" ]; then
			rb_matrix "$name" "${args[@]}"
			stop_all
			break
		fi
		ycsb_datatype "$name" "$mode" "$datatype"
		if [ "$first" = 1 ]; then rb_matrix "$name" "${args[@]}"; fi
		stop_all
		first=0
	done
}

# start_target NAME: starts NAME and sets mode (go-ycsb's redis.mode),
# args (redis-benchmark's) and what flush_target empties.
start_target() {
	local name=$1
	mode=single args=()
	case $name in
	redis) start_redis 0 ;;
	redis+2replicas) start_redis 2 ;;
	"redis cluster") start_redis_cluster 3 ;;
	"memgest 1 node none") start_single ;;
	"memgest "*) start_dev 6 "${name#memgest }" ;;
	esac
	flush_ports=("$port") flush_args=()
	case $name in
	"redis cluster") flush_ports=("${cluster_ports[@]}") mode=cluster args=(--cluster) ;;
	"memgest 1 node none") flush_args=(CLUSTER) ;;
	"memgest "*) flush_args=(CLUSTER) mode=cluster args=(--cluster) ;;
	esac
}

targets=("${ALL_TARGETS[@]}")
[ -n "${TARGETS:-}" ] && IFS=';' read -r -a targets <<<"$TARGETS"
for t in "${targets[@]}"; do run_target "$t"; done

{
	echo "date=$(date -u +%Y-%m-%d)"
	echo "machine=$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "kernel=$(uname -sr)"
	echo "redis=$(redis-server --version | cut -d' ' -f3 | sed 's/v=//')"
	echo "go=$(go version | cut -d' ' -f3)"
	echo "memgest=$version"
	echo "ycsb=go-ycsb $YCSB_VERSION"
	echo "repeats=$REPEATS"
	echo "min_seconds=$MIN_SECONDS"
	echo "run_seconds=$RUN_SECONDS"
	echo "headline_size=$HEADLINE_SIZE"
	echo "keyspace=$KEYSPACE"
	echo "clients=$CLIENTS"
	echo "records=$RECORDS"
	echo "ops=$OPS"
	echo "datatypes=$DATATYPES"
	echo "threads=$THREADS"
	echo "seconds=$(($(date +%s) - started))"
} >"$out/bench-meta.txt"
"$plot_python" scripts/bench-report.py "$out"
echo "wrote $out/README.md ($(($(date +%s) - started)) s)" >&2
