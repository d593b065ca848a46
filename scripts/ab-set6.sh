#!/bin/bash
# ab-set6.sh BIN LABEL SCHEME: a 6-node dev cluster with SCHEME as default; SETs of 100 B to 10,000 keys written first, three runs at -P16 (300k) and one at -P1 (100k); prints requests/s and cluster-wide CPU µs per request (utime+stime of the six node processes from /proc). BASE sets the first port (default 9301).
bin=$1; label=$2; sch=$3; base=${BASE:-9301}
cd /tmp
setsid $bin dev --nodes 6 --base-port $base > "${TMPDIR:-/tmp}/dev-abset.log" 2>&1 &
dev=$!
for i in $(seq 1 90); do grep -q "cluster ready" "${TMPDIR:-/tmp}/dev-abset.log" && break; sleep 1; done
redis-cli -p $base scheme.default $sch >/dev/null; sleep 1
pids=$(pgrep -P $dev | tr '\n' ' ')
tck=$(getconf CLK_TCK)
cpu() { local t=0; for p in $pids; do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; }
redis-benchmark --cluster -p $base -t set -d 100 -r 10000 -c 50 -P 16 -n 200000 -q >/dev/null 2>&1 # warm: keys exist
for P in 16 16 16 1; do
  n=$((P==1 ? 100000 : 300000))
  c0=$(cpu)
  r=$(redis-benchmark --cluster -p $base -t set -d 100 -r 10000 -c 50 -P $P -n $n -q 2>&1 | tr '\r' '\n' | grep -i "^set:" | grep -o '[0-9.]* requests per second' | cut -d' ' -f1 | tail -1)
  c1=$(cpu)
  echo "$label $sch P$P set $r rps $(echo "scale=2; ($c1-$c0)*1000000/$tck/$n" | bc) us/op"
done
kill -- -$dev 2>/dev/null; kill $dev 2>/dev/null
wait $dev 2>/dev/null
sleep 2
