#!/usr/bin/env bash
# bench-cluster.sh REPORT: redis-benchmark (SET and GET, 100-byte values,
# -P 1 and -P 16) against a 6-node memgest cluster with the default scheme
# set to none, rep:3, split:4+2 and stripe:4+2 (and rep:3 on 3 nodes), and against
# redis-servers started here (alone, with two asynchronous replicas for the
# rep:3 comparison, and as a 3-master Redis Cluster), all in one run; writes
# a Markdown report with ratios to REPORT.
#
# Everything started here runs on 127.0.0.1 with free ports and is stopped
# by PID on exit. Installs Debian's redis-server/redis-tools if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
report=${1:?usage: bench-cluster.sh REPORT}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-100000}

source scripts/bench-lib.sh
bench_setup

# free_cluster_port finds a free port whose Redis Cluster bus port (+10000)
# is free too.
free_cluster_port() {
	python3 - <<'PY'
import socket
for p in range(30001, 55000, 7):
    ok = True
    for q in (p, p + 10000):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", q))
        except OSError:
            ok = False
        finally:
            s.close()
    if ok:
        print(p)
        break
PY
}

# bench PORT P [--cluster]: prints "SET GET" requests per second.
bench() {
	local port=$1 pipeline=$2; shift 2
	redis-benchmark -p "$port" -t set,get -d 100 -r "$KEYSPACE" -n "$REQUESTS" -c "$CLIENTS" \
		-P "$pipeline" --csv "$@" 2>/dev/null |
		awk -F'","' '/^"SET"/{s=$2} /^"GET"/{g=$2} END{gsub(/"/,"",s); gsub(/"/,"",g); print s, g}'
}

declare -A rps
run_target() { # name port [extra args]
	local name=$1 port=$2; shift 2
	for p in 1 16; do
		read -r set get < <(bench "$port" "$p" "$@")
		rps[$name,SET,$p]=$set
		rps[$name,GET,$p]=$get
		echo "$name -P $p: SET $set GET $get" >&2
	done
}

# Redis alone, then Redis with two asynchronous replicas.
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
	--dir "$work" --dbfilename r.rdb >"$work/redis.log" 2>&1 &
pids+=($!)
wait_port "$rport"
run_target redis "$rport"
for i in 1 2; do
	p=$(free_port)
	redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --replicaof 127.0.0.1 "$rport" \
		--dir "$work" --dbfilename "r$i.rdb" >"$work/replica$i.log" 2>&1 &
	pids+=($!)
	wait_port "$p"
done
sleep 1
redis-cli -p "$rport" FLUSHALL >/dev/null
run_target redis+2replicas "$rport"

# A Redis Cluster of three masters, driven with --cluster like memgest: the
# like-for-like reference for a sharded memgest cluster.
cports=()
for i in 1 2 3; do
	p=$(free_cluster_port)
	mkdir -p "$work/rc$i"
	(cd "$work/rc$i" && exec redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
		--cluster-config-file nodes.conf --save "" --appendonly no >log 2>&1) &
	pids+=($!)
	cports+=("$p")
	wait_port "$p" # bound before the next port is chosen
done
echo yes | redis-cli --cluster create "${cports[@]/#/127.0.0.1:}" --cluster-replicas 0 >"$work/rc.log" 2>&1
for _ in $(seq 1 100); do redis-cli -p "${cports[0]}" CLUSTER INFO | grep -q cluster_state:ok && break; sleep 0.1; done
run_target "redis cluster (3 masters)" "${cports[0]}" --cluster
# Stop every Redis before memgest runs, so idle servers take no CPU from it.
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()

# memgest: one node alone (the like-for-like comparison with one Redis
# process), then a 6-node dev cluster; each scheme as the default, keys flushed in
# between so every key written is in that scheme.
sp=$(free_port); spp=$(free_port)
./bin/memgest server --port "$sp" --peer-port "$spp" --http-port 0 --data-dir "$work/single" \
	--bootstrap-expect 1 --voters 1 >"$work/single.log" 2>&1 &
single=$!
pids+=($single)
wait_port "$sp"
for _ in $(seq 1 100); do redis-cli -p "$sp" SET probe x 2>/dev/null | grep -q OK && break; sleep 0.1; done
redis-cli -p "$sp" DEL probe >/dev/null
run_target "memgest none, 1 node" "$sp"
kill "$single"

# start_dev N LOG: starts an N-node dev cluster, sets $base and $dev.
start_dev() {
	base=$(free_base)
	# A long failure timeout: a saturated 2-core machine must not fail a node.
	./bin/memgest dev --nodes "$1" --base-port "$base" --server-arg=--failure-timeout=10s >"$2" 2>&1 &
	dev=$!
	pids+=($dev)
	for _ in $(seq 1 600); do grep -q "cluster ready" "$2" && break; sleep 0.1; done
	grep -q "cluster ready" "$2" || { cat "$2"; exit 1; }
}

start_dev 6 "$work/memgest6.log"
for scheme in none rep:3 split:4+2 stripe:4+2; do
	redis-cli -p "$base" FLUSHALL >/dev/null
	redis-cli -p "$base" SCHEME.DEFAULT "$scheme" >/dev/null
	run_target "memgest $scheme" "$base" --cluster
done
kill "$dev"; wait "$dev" 2>/dev/null || true

# rep:3 on three nodes: three processes holding three copies, like Redis
# with two replicas.
start_dev 3 "$work/memgest3.log"
redis-cli -p "$base" SCHEME.DEFAULT rep:3 >/dev/null
run_target "memgest rep:3, 3 nodes" "$base" --cluster
kill "$dev"; wait "$dev" 2>/dev/null || true

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b>0) printf "%.2f", a/b; else print "n/a" }'; }
{
	echo "# Cluster benchmark: memgest vs Redis"
	echo
	echo "Generated by \`make bench\` (scripts/bench-cluster.sh) on $(date -u +%Y-%m-%d)."
	echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(redis-server --version | cut -d' ' -f1-3)."
	echo
	echo "redis-benchmark -t set,get -d 100 -r $KEYSPACE -n $REQUESTS -c $CLIENTS -P {1,16};"
	echo "memgest runs 6 \`memgest server\` processes (\`memgest dev\`) and is driven with"
	echo "\`--cluster\`, so the benchmark sends each key to its coordinator. Everything"
	echo "shares the same $(nproc) cores: Redis is one process (three with replicas or as a cluster),"
	echo "memgest six (one for the single-node row, three for the 3-node row)."
	echo
	echo "| target | SET -P1 | GET -P1 | SET -P16 | GET -P16 |"
	echo "|---|---:|---:|---:|---:|"
	for t in redis redis+2replicas "redis cluster (3 masters)" "memgest none, 1 node" "memgest none" "memgest rep:3" "memgest split:4+2" "memgest stripe:4+2" "memgest rep:3, 3 nodes"; do
		echo "| $t | ${rps[$t,SET,1]} | ${rps[$t,GET,1]} | ${rps[$t,SET,16]} | ${rps[$t,GET,16]} |"
	done
	echo
	echo "Ratios (requests per second, higher is better for memgest):"
	echo
	echo "| ratio | -P1 | -P16 | target |"
	echo "|---|---:|---:|---|"
	for op in SET GET; do
		echo "| memgest none (1 node) $op / redis $op | $(ratio "${rps[memgest none, 1 node,$op,1]}" "${rps[redis,$op,1]}") | $(ratio "${rps[memgest none, 1 node,$op,16]}" "${rps[redis,$op,16]}") | ≥ 1.0 |"
		echo "| memgest none (6 nodes) $op / redis $op | $(ratio "${rps[memgest none,$op,1]}" "${rps[redis,$op,1]}") | $(ratio "${rps[memgest none,$op,16]}" "${rps[redis,$op,16]}") | ≥ 1.0 |"
		echo "| memgest none (6 nodes) $op / redis cluster $op | $(ratio "${rps[memgest none,$op,1]}" "${rps[redis cluster (3 masters),$op,1]}") | $(ratio "${rps[memgest none,$op,16]}" "${rps[redis cluster (3 masters),$op,16]}") | (reference) |"
	done
	echo "| memgest rep:3 (6 nodes) SET / redis+2 replicas SET | $(ratio "${rps[memgest rep:3,SET,1]}" "${rps[redis+2replicas,SET,1]}") | $(ratio "${rps[memgest rep:3,SET,16]}" "${rps[redis+2replicas,SET,16]}") | ≥ 0.8 |"
	echo "| memgest rep:3 (3 nodes) SET / redis+2 replicas SET | $(ratio "${rps[memgest rep:3, 3 nodes,SET,1]}" "${rps[redis+2replicas,SET,1]}") | $(ratio "${rps[memgest rep:3, 3 nodes,SET,16]}" "${rps[redis+2replicas,SET,16]}") | ≥ 0.8 |"
	echo "| memgest rep:3 GET / memgest none GET | $(ratio "${rps[memgest rep:3,GET,1]}" "${rps[memgest none,GET,1]}") | $(ratio "${rps[memgest rep:3,GET,16]}" "${rps[memgest none,GET,16]}") | ≥ 0.9 |"
	echo "| memgest stripe:4+2 SET / memgest rep:3 SET | $(ratio "${rps[memgest stripe:4+2,SET,1]}" "${rps[memgest rep:3,SET,1]}") | $(ratio "${rps[memgest stripe:4+2,SET,16]}" "${rps[memgest rep:3,SET,16]}") | ≥ 0.7 |"
	echo "| memgest stripe:4+2 GET / memgest rep:3 GET | $(ratio "${rps[memgest stripe:4+2,GET,1]}" "${rps[memgest rep:3,GET,1]}") | $(ratio "${rps[memgest stripe:4+2,GET,16]}" "${rps[memgest rep:3,GET,16]}") | = 1.0 |"
	echo "| memgest split:4+2 GET / memgest none GET | $(ratio "${rps[memgest split:4+2,GET,1]}" "${rps[memgest none,GET,1]}") | $(ratio "${rps[memgest split:4+2,GET,16]}" "${rps[memgest none,GET,16]}") | (no target) |"
} >"$report"
cat "$report"
