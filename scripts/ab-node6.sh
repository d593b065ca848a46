#!/bin/bash
# ab-node6.sh BIN LABEL SCHEME: a 6-node memgest dev cluster with SCHEME as
# default; redis-benchmark --cluster SET and GET 100 B at -P1 and -P16;
# prints requests/s and cluster-wide CPU µs per request (utime+stime of the
# six node processes from /proc, divided by requests). DEV_ARGS adds flags
# to `memgest dev` (e.g. DEV_ARGS=--server-arg=--scrub-rate=0).
bin=$1; label=$2; sch=$3; base=${BASE:-9301}
cd /tmp
setsid $bin dev --nodes 6 --base-port $base $DEV_ARGS > /tmp/dev-ab6.log 2>&1 &
dev=$!
for i in $(seq 1 90); do grep -q "cluster ready" /tmp/dev-ab6.log && break; sleep 1; done
redis-cli -p $base scheme.default $sch >/dev/null; sleep 1
pids=$(pgrep -P $dev | tr '\n' ' ')
tck=$(getconf CLK_TCK)
cpu() { local t=0; for p in $pids; do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; }
for P in 1 16; do
  for t in set get; do
    n=$((P==1 ? 100000 : 400000))
    c0=$(cpu)
    r=$(redis-benchmark --cluster -p $base -t $t -d 100 -r 10000 -c 50 -P $P -n $n -q 2>&1 | tr '\r' '\n' | grep -i "^$t:" | grep -o '[0-9.]* requests per second' | cut -d' ' -f1 | tail -1)
    c1=$(cpu)
    us=$(echo "scale=2; ($c1-$c0)*1000000/$tck/$n" | bc)
    echo "$label $sch P$P $t $r rps ${us} us/op"
  done
done
kill -- -$dev 2>/dev/null; kill $dev 2>/dev/null
wait $dev 2>/dev/null
sleep 2
