#!/bin/bash
# bench-wire.sh BIN SCHEME...: peer bytes per logical byte written, per
# scheme, on a 6-node dev cluster (issue 26's bandwidth measure). For each
# scheme in turn: a fresh cluster with it as default, then
#   insert: redis-benchmark SETs of 100 B values to keys drawn from 10^9
#           (almost all new keys);
#   update: SETs of 100 B values to 10 000 keys written before (overwrites);
# each at -P16 with 50 connections. Prints, per workload, the cluster's
# memgest_peer_redundancy_bytes_total over memgest_scheme_written_bytes_total
# for that scheme (deltas across the workload), and requests/s.
set -euo pipefail
bin=$1; shift
base=${BASE:-9301}
scrape() { # scrape SCHEME METRIC: the metric summed over the six nodes
	local sum=0
	for i in 0 1 2 3 4 5; do
		v=$(curl -s "http://127.0.0.1:$((base + 2000 + i))/metrics" | awk -v m="$2" -v s="$1" \
			'$1 == m"{scheme=\""s"\"}" {print $2}')
		sum=$(python3 -c "print($sum + float('${v:-0}'))")
	done
	echo "$sum"
}
for sch in "$@"; do
	log=$(mktemp)
	cd /tmp
	setsid "$bin" dev --nodes 6 --base-port "$base" >"$log" 2>&1 &
	dev=$! # the leader of its own process group: killed with it below
	cd - >/dev/null
	for _ in $(seq 1 90); do grep -q "cluster ready" "$log" && break; sleep 1; done
	grep -q "cluster ready" "$log" || { echo "$sch: the cluster did not start" >&2; cat "$log" >&2; exit 1; }
	redis-cli -p "$base" scheme.default "$sch" >/dev/null
	sleep 1
	redis-benchmark --cluster -p "$base" -t set -d 100 -r 10000 -c 50 -P 16 -n 200000 -q >/dev/null 2>&1 # the keys the updates overwrite
	for w in insert update; do
		r=$([ $w = insert ] && echo 1000000000 || echo 10000)
		b0=$(scrape "$sch" memgest_peer_redundancy_bytes_total); l0=$(scrape "$sch" memgest_scheme_written_bytes_total)
		rps=$(redis-benchmark --cluster -p "$base" -t set -d 100 -r $r -c 50 -P 16 -n 400000 -q 2>&1 | tr '\r' '\n' | grep -i '^set:' | grep -o '[0-9.]* requests per second' | cut -d' ' -f1 | tail -1)
		b1=$(scrape "$sch" memgest_peer_redundancy_bytes_total); l1=$(scrape "$sch" memgest_scheme_written_bytes_total)
		python3 -c "print('$sch $w', f'{($b1-$b0)/($l1-$l0):.3f} peer bytes/logical byte', '$rps rps')"
	done
	kill -- -"$dev"
	wait "$dev" 2>/dev/null || true
	rm -f "$log"
	sleep 2
done
