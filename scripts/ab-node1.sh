#!/bin/bash
# ab-node1.sh BIN PORTBASE: one node (GOMAXPROCS=1), redis-benchmark SET/GET 100 B at -P1 and -P16;
# prints requests/s and the server's CPU µs per request (utime+stime from /proc).
bin=$1; base=$2
d=$(mktemp -d)
GOMAXPROCS=1 $bin server --port $base --peer-port $((base+1)) --http-port 0 --data-dir $d --bootstrap-expect 1 --voters 1 >$d/log 2>&1 &
pid=$!
for i in $(seq 1 100); do redis-cli -p $base SET probe x 2>/dev/null | grep -q OK && break; sleep 0.1; done
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' /proc/$pid/stat; }
for P in 1 16; do
  for t in set get; do
    n=$((P==1 ? 200000 : 1500000))
    c0=$(cpu)
    r=$(redis-benchmark -p $base -t $t -d 100 -r 10000 -c 50 -P $P -n $n -q 2>/dev/null | grep -o '[0-9.]* requests per second' | cut -d' ' -f1)
    c1=$(cpu)
    us=$(echo "scale=2; ($c1-$c0)*1000000/$tck/$n" | bc)
    echo "$(basename $bin) P$P $t $r rps ${us} us/op"
  done
done
kill $pid; wait $pid 2>/dev/null; rm -rf $d
