#!/usr/bin/env bash
# bench-gc.sh [PERCENT...]: what --gc-percent costs in throughput. For each
# PERCENT (default "25 100"), a 6-node dev cluster started with
# --gc-percent PERCENT is loaded with LOAD (default 2 500 000) 100-byte SETs
# of random keys in SCHEME (default rep:3), enough for every node's live
# heap to pass 128 MiB, where the lower target applies; then
# redis-benchmark SET and GET -P16 run against it. Prints node 0's Go heap
# and the requests per second of each, side by side. Everything started
# here runs on 127.0.0.1 with free ports and is stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-lib.sh
bench_setup
for pct in ${@:-25 100}; do
	base=$(free_base)
	./bin/memgest dev --nodes 6 --base-port "$base" --server-arg=--failure-timeout=10s \
		--server-arg=--gc-percent="$pct" >"$work/dev-$pct.log" 2>&1 &
	dev=$!
	pids+=($dev)
	for _ in $(seq 1 600); do grep -q "cluster ready" "$work/dev-$pct.log" && break; sleep 0.1; done
	redis-cli -p "$base" SCHEME.DEFAULT "${SCHEME:-rep:3}" >/dev/null
	redis-benchmark -p "$base" -t set -d 100 -r 100000000 -n "${LOAD:-2500000}" -c 50 -P 16 --cluster -q >/dev/null 2>&1
	heap=$(redis-cli -p "$base" INFO memory | grep go_heap_alloc | tr -d '\r')
	rps=$(redis-benchmark -p "$base" -t set,get -d 100 -r 100000000 -n 600000 -c 50 -P 16 --csv --cluster 2>/dev/null |
		awk -F'","' '/^"SET"/{s=$2} /^"GET"/{g=$2} END{gsub(/"/,"",s); gsub(/"/,"",g); print "SET " s " GET " g}')
	echo "--gc-percent $pct: node 0 $heap; -P16 $rps"
	kill "$dev"
	wait "$dev" 2>/dev/null || true
done
