# bench-lib.sh: helpers the benchmark scripts source. Ports are found free
# on 127.0.0.1 at run time.

# free_port prints a free TCP port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# free_base finds a base port whose client, peer (+10000) and HTTP (+20000)
# ranges are free for 6 nodes.
free_base() {
	for base in $(seq 7301 50 9901); do
		if python3 - "$base" <<'PY'
import socket, sys
b = int(sys.argv[1])
for off in (0, 10000, 20000):
    for i in range(6):
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

# ycsb_setup builds go-ycsb $YCSB_VERSION once into a cache outside the
# repository (the module proxy refuses `go install …@latest`, so the module
# is downloaded at its exact version and built from a copy of its
# directory with its own go.sum) and sets $ycsb to the binary and
# $ycsb_workloads to its workload files.
ycsb_setup() {
	local cache=${MEMGEST_BENCH_CACHE:-$HOME/.cache/memgest-bench}
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
