# bench-lib.sh: helpers the benchmark scripts source. Ports are found free
# on 127.0.0.1 at run time.

# free_port prints a free TCP port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# free_base [NODES [FIRST [LAST]]] finds a base port, from FIRST to LAST
# in steps of 50 (7301 to 9901), whose client, peer (+1000) and HTTP
# (+2000) ranges are free for NODES nodes (6).
free_base() {
	local nodes=${1:-6}
	for base in $(seq "${2:-7301}" 50 "${3:-9901}"); do
		if python3 - "$base" "$nodes" <<'PY'
import socket, sys
b, nodes = int(sys.argv[1]), int(sys.argv[2])
for off in (0, 1000, 2000):
    for i in range(nodes):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", b + off + i))
        except OSError:
            sys.exit(1)
        finally:
            s.close()
PY
		then echo "$base"; return; fi
	done
	echo "no free base port" >&2; exit 1
}

# wait_port PORT waits until a RESP server answers PING on PORT.
wait_port() {
	for _ in $(seq 1 200); do
		redis-cli -p "$1" PING >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "port $1 did not answer" >&2; exit 1
}

# bench_setup installs Debian's Redis if missing, builds memgest, and sets
# $work (a scratch directory) and $pids (processes to kill), both cleaned
# up on exit.
bench_setup() {
	if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
		apt-get update -qq && apt-get install -y -qq redis-server redis-tools >/dev/null
	fi
	go build -o bin/memgest ./cmd/memgest
	work=$(mktemp -d)
	pids=()
	trap bench_cleanup EXIT
}

bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}

# YCSB_VERSION is the go-ycsb release the benchmarks pin.
YCSB_VERSION=v1.0.1

# bench_cache is where the benchmark tools are built and installed once,
# outside the repository.
bench_cache=${MEMGEST_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memgest-bench}

# ycsb_setup builds go-ycsb $YCSB_VERSION once into a cache outside the
# repository (the module proxy refuses `go install …@latest`, so the module
# is downloaded at its exact version and built from a copy of its
# directory with its own go.sum) and sets $ycsb to the binary and
# $ycsb_workloads to its workload files.
ycsb_setup() {
	local cache=$bench_cache
	ycsb=$cache/go-ycsb-$YCSB_VERSION/go-ycsb
	ycsb_workloads=$cache/go-ycsb-$YCSB_VERSION/workloads
	[ -x "$ycsb" ] && return 0
	local dir
	dir=$(go mod download -json "github.com/pingcap/go-ycsb@$YCSB_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
	mkdir -p "$cache"
	local src=$cache/go-ycsb-$YCSB_VERSION.src
	rm -rf "$src" && cp -r "$dir" "$src" && chmod -R u+w "$src"
	echo "building go-ycsb $YCSB_VERSION (once; cached in $cache)" >&2
	(cd "$src" && go build -o "$ycsb.tmp" ./cmd/go-ycsb)
	mkdir -p "$ycsb_workloads" && cp "$src"/workloads/workload[a-f] "$ycsb_workloads"/
	mv "$ycsb.tmp" "$ycsb"
	rm -rf "$src"
}

# plot_setup makes (once) a venv with matplotlib under the benchmark cache,
# outside the repository, and sets $plot_python to its interpreter.
plot_setup() {
	local venv=$bench_cache/venv
	if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
		python3 -m venv "$venv"
		"$venv/bin/pip" install -q matplotlib==3.10.9
	fi
	plot_python=$venv/bin/python
}

# rss PID...: the summed VmRSS of the processes, in bytes.
rss() {
	local total=0
	for p in "$@"; do
		total=$((total + $(awk '/^VmRSS:/{print $2}' "/proc/$p/status") * 1024))
	done
	echo "$total"
}

# stop_all stops every process in $pids and forgets them.
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}

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

# start_redis REPLICAS: one redis-server (no persistence) with REPLICAS
# asynchronous replicas; sets $port to the primary's port and $procs to
# the processes holding data.
start_redis() {
	port=$(free_port)
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
		--dir "$work" --dbfilename r.rdb >"$work/redis.log" 2>&1 &
	pids+=($!)
	procs=($!)
	wait_port "$port"
	local i p
	for i in $(seq 1 "$1"); do
		p=$(free_port)
		redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --replicaof 127.0.0.1 "$port" \
			--dir "$work" --dbfilename "r$i.rdb" >"$work/replica$i.log" 2>&1 &
		pids+=($!)
		procs+=($!)
		wait_port "$p"
	done
	[ "$1" -gt 0 ] && sleep 1 # the replicas' first sync
	return 0
}

# redis_synced waits until every replica of the Redis on $port has its whole
# replication stream.
redis_synced() {
	local off n
	n=$(redis-cli -p "$port" INFO replication | awk -F: '/^connected_slaves/{print $2+0}')
	for _ in $(seq 1 600); do
		off=$(redis-cli -p "$port" INFO replication | awk -F: '/^master_repl_offset/{print $2+0}')
		[ "$(redis-cli -p "$port" INFO replication | grep -c "offset=$off,")" -eq "$n" ] && return 0
		sleep 0.2
	done
}

# start_redis_cluster N: a Redis Cluster of N masters and no replicas; sets
# $port to the first master's port, $cluster_ports to every master's and
# $procs to their processes.
start_redis_cluster() {
	local cports=() i p
	procs=()
	for i in $(seq 1 "$1"); do
		p=$(free_cluster_port)
		rm -rf "$work/rc$i" && mkdir -p "$work/rc$i" # a fresh node: a restart must not load the last nodes.conf
		(cd "$work/rc$i" && exec redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file nodes.conf --save "" --appendonly no >log 2>&1) &
		pids+=($!)
		procs+=($!)
		cports+=("$p")
		wait_port "$p" # bound before the next port is chosen
	done
	echo yes | redis-cli --cluster create "${cports[@]/#/127.0.0.1:}" --cluster-replicas 0 >"$work/rc.log" 2>&1
	for _ in $(seq 1 100); do redis-cli -p "${cports[0]}" CLUSTER INFO | grep -q cluster_state:ok && break; sleep 0.1; done
	port=${cports[0]}
	cluster_ports=("${cports[@]}")
}

# start_dev N SCHEME: an N-node `memgest dev` cluster with SCHEME as every
# node's default; sets $port to node 0's client port, $dev to the dev
# process and $procs to its nodes.
start_dev() {
	local log=$work/dev.log b i
	b=$(free_base)
	# A long failure timeout: a saturated 2-core machine must not fail a node.
	./bin/memgest dev --nodes "$1" --base-port "$b" --server-arg=--failure-timeout=10s >"$log" 2>&1 &
	dev=$!
	pids+=($dev)
	for _ in $(seq 1 600); do grep -q "cluster ready" "$log" && break; sleep 0.1; done
	grep -q "cluster ready" "$log" || { cat "$log"; exit 1; }
	redis-cli -p "$b" SCHEME.DEFAULT "$2" >/dev/null
	for i in $(seq 0 $(($1 - 1))); do
		for _ in $(seq 1 100); do
			[ "$(redis-cli -p $((b + i)) SCHEME.DEFAULT)" = "$2" ] && break
			sleep 0.05
		done
	done
	mapfile -t procs < <(pgrep -P "$dev")
	port=$b
}

# start_single: one `memgest server` forming a cluster of its own (scheme
# none); sets $port and $procs. It runs on SINGLE_PROCS Go processors
# (default 1: one core, as redis-server runs its commands on one thread; on
# two cores shared with redis-benchmark a second processor's wake-ups cost
# a third of -P 1's throughput, docs/benchmarks/analysis.md).
start_single() {
	local pp
	port=$(free_port)
	pp=$(free_port)
	GOMAXPROCS=${SINGLE_PROCS:-1} ./bin/memgest server --port "$port" --peer-port "$pp" --http-port 0 --data-dir "$work/single" \
		--bootstrap-expect 1 --voters 1 >"$work/single.log" 2>&1 &
	pids+=($!)
	procs=($!)
	wait_port "$port"
	for _ in $(seq 1 100); do redis-cli -p "$port" SET probe x 2>/dev/null | grep -q OK && break; sleep 0.1; done
	redis-cli -p "$port" DEL probe >/dev/null
}
