#!/bin/bash
# plan-dev.sh BIN OUT_PREFIX: `memgest plan` on the 6-node dev cluster with
# the rebuild rate it measured (issue 27). Starts `memgest dev --nodes 6
# --spares 1`, loads KEYS 1000-byte values as stripe:4+2 and a fifth as
# many as rep:3, kills node 5, waits until the spare has taken its place
# and no shard is rebuilding, then runs memgest plan --addr on node 0
# (table, JSON and plot into OUT_PREFIX.{txt,json,png}).
set -euo pipefail
bin=$1; out=$2
base=${BASE:-9601}
keys=${KEYS:-400000}
log=$(mktemp)
cd /tmp
setsid "$bin" dev --nodes 6 --spares 1 --base-port "$base" >"$log" 2>&1 &
dev=$!
cd - >/dev/null
trap 'kill -- -"$dev" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 90); do grep -q "cluster ready" "$log" && break; sleep 1; done
grep -q "cluster ready" "$log" || { echo "the cluster did not start" >&2; cat "$log" >&2; exit 1; }
redis-cli -p "$base" scheme.default stripe:4+2 >/dev/null
sleep 2 # the default reaches every node
redis-benchmark --cluster -p "$base" -t set -d 1000 -r 100000000 -c 50 -P 16 -n "$keys" -q >/dev/null 2>&1
redis-cli -p "$base" scheme.default rep:3 >/dev/null
sleep 2
redis-benchmark --cluster -p "$base" -t set -d 1000 -r 100000000 -c 50 -P 16 -n $((keys / 5)) -q >/dev/null 2>&1
"$bin" status --addr 127.0.0.1:$((base + 2000)) | tail -12
victim=$(ss -ltnpH "sport = :$((base + 5))" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
echo "killing node 5 (pid $victim) at $(date +%T)"
kill -9 "$victim"
start=$(date +%s)
sleep 5
for _ in $(seq 1 600); do
	r=$(redis-cli -p "$base" info memgest | tr -d '\r' | awk -F: '$1=="shards_rebuilding"||$1=="shards_recovering"{s+=$2} END{print s+0}')
	[ "$r" = 0 ] && break
	sleep 1
done
echo "recovered and rebuilt after $(( $(date +%s) - start )) s (including the failure timeout)"
"$bin" status --addr 127.0.0.1:$((base + 2000)) | tail -12
addr=127.0.0.1:$((base + 2000))
"$bin" plan --addr "$addr" --nines 6 --plot "$out.png" | tee "$out.txt"
"$bin" plan --addr "$addr" --nines 6 --json >"$out.json"
"$bin" plan --addr "$addr" --scheme rep:2 --scheme rep:3 --scheme stripe:4+1 --scheme stripe:4+2 --scheme hybrid:4+2 --scheme stripe:2+2 --nines 6 | tee -a "$out.txt"
