#!/usr/bin/env bash
# bench-rebalance.sh BIN OUTDIR: issue 29's benchmark (make bench-rebalance).
# A 6-node `memgest dev` cluster with 3 spares holds a data set of mixed
# schemes; under a steady GET/SET load of mixed schemes it grows to 9 nodes
# (memgest cluster add-node ×3) and shrinks back to 6 (memgest cluster
# remove-node ×3), with PHASE_SECONDS of load before, between and after.
# Writes OUTDIR/$NAME.md (the report), $NAME-windows.csv (one line per
# redis-benchmark window) and $NAME-status.csv (the status polls).
#
# The load: three redis-benchmark loops (-c 8, plain mode: keys over every
# slot, forwarded by the node), one per scheme, each aimed at one of nodes
# 1-3 (never drained), alternating a SET and a GET window of a fixed request
# count (chosen in a warm-up for WINDOW_SECONDS per window). A probe reads
# data set keys and writes/reads probe keys on nodes 1-6, checking every
# value. At the end every data set key is read back bit-exact, DBSIZE
# CLUSTER is compared with the start and `redis-cli --cluster check` runs.
#
# Knobs (environment): DS_STRIPE DS_REP DS_SPLIT (keys of 100 B stripe:4+2,
# 1 KB rep:3, 8 KB split:4+2; default 300000 60000 20000), LOAD_KEYS (each
# loop's key range, 20000), PHASE_SECONDS (30), WINDOW_SECONDS (2),
# PARALLEL (3: the grow's --parallel, and the shrink's when RATE is set),
# RATE (the grow's and the shrink's --rate, e.g. 64mb; default memgest's),
# MIGRATE_SHARE (every node's --migrate-share; default memgest's),
# MOVE_TIMEOUT (300 s for a grow or a shrink to end),
# PROBE_RATE (50 iterations/s), WARMUP (10 s of load before the baseline),
# NAME (rebalance), LOGDIR (OUTDIR/$NAME-logs), KEEP=1 keeps the scratch
# directory. Every process started here is stopped by its PID; the dev
# process stops its nodes. If a move does not end, a read is wrong, a
# request fails or a check fails, the run's logs are kept in $LOGDIR and
# the script exits 1 (after writing the report).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BIN OUTDIR" >&2; exit 2; }
bin=$(realpath "$1")
mkdir -p "$2"
out=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench-lib.sh
source "$here/bench-lib.sh"
tool=$here/bench-rebalance.py
cmdline="$(for v in DS_STRIPE DS_REP DS_SPLIT LOAD_KEYS PHASE_SECONDS WINDOW_SECONDS PARALLEL RATE MIGRATE_SHARE MOVE_TIMEOUT PROBE_RATE WARMUP NAME; do
	if [ -n "${!v:-}" ]; then printf '%s=%s ' "$v" "${!v}"; fi
done)scripts/bench-rebalance.sh $*"

DS_STRIPE=${DS_STRIPE:-300000}
DS_REP=${DS_REP:-60000}
DS_SPLIT=${DS_SPLIT:-20000}
LOAD_KEYS=${LOAD_KEYS:-20000}
PHASE_SECONDS=${PHASE_SECONDS:-30}
WINDOW_SECONDS=${WINDOW_SECONDS:-2}
PARALLEL=${PARALLEL:-3}
RATE=${RATE:-}
MOVE_TIMEOUT=${MOVE_TIMEOUT:-300}
PROBE_RATE=${PROBE_RATE:-50}
NAME=${NAME:-rebalance}
LOGDIR=${LOGDIR:-$out/$NAME-logs}
WARMUP=${WARMUP:-10}
PROBE_KEYS=2000

for t in redis-cli redis-benchmark python3; do
	command -v "$t" >/dev/null || { echo "$t is needed" >&2; exit 1; }
done

work=$(mktemp -d /tmp/bench-rebalance.XXXXXX)
echo "scratch directory: $work" >&2
dev="" poller="" probe=""
loops=()

stop_pid() { # PID: SIGTERM, then wait for it (it is our child)
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

cleanup() {
	touch "$work/stop"
	for p in "${loops[@]}"; do stop_pid "$p"; done
	stop_pid "$probe"
	stop_pid "$poller"
	stop_pid "$dev"
	if [ -z "${KEEP:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

now() { date +%s.%N | cut -c1-14; }
mark() { echo "$(now) $*" >>"$work/events.txt"; echo "[$(date +%T)] $*" >&2; }

# cpu_busy: the machine's busy jiffies (user, nice, system, irq, softirq).
cpu_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
busy0=$(cpu_busy)
cut -d' ' -f1-3 /proc/loadavg >"$work/loadavg"
ps -eo pid=,comm=,times= >"$work/ps-start.txt"

# A base port whose client, peer (+1000) and HTTP (+2000) ports are free for
# 9 nodes, below the ephemeral range.
base=$(free_base 9 17001 29951)
http=127.0.0.1:$((base + 2000))
ports6=$(seq -s, "$base" $((base + 5)))
new=("127.0.0.1:$((base + 6))" "127.0.0.1:$((base + 7))" "127.0.0.1:$((base + 8))")
new_csv=$(IFS=,; echo "${new[*]}")

# A long failure timeout, as the other benchmarks: a saturated 2-core
# machine must not fail a node.
dev_args="--server-arg=--failure-timeout=10s"
if [ -n "${MIGRATE_SHARE:-}" ]; then dev_args+=" --server-arg=--migrate-share=$MIGRATE_SHARE"; fi
(cd "$work" && exec "$bin" dev --nodes 6 --spares 3 --base-port "$base" $dev_args) >"$work/dev.log" 2>&1 &
dev=$!
for _ in $(seq 1 1200); do grep -q "cluster ready" "$work/dev.log" && break; sleep 0.1; done
grep -q "cluster ready" "$work/dev.log" || { echo "the cluster did not start:" >&2; cat "$work/dev.log" >&2; exit 1; }
mark "cluster ready (base port $base, dev pid $dev)"

dataset=("dss:stripe:4+2:$DS_STRIPE:100" "dsr:rep:3:$DS_REP:1000" "dsp:split:4+2:$DS_SPLIT:8000")
# The load loops: name, node port, prefix, scheme, value size.
loads=("stripe $base lds stripe:4+2 100" "rep $((base + 1)) ldr rep:3 1000" "split $((base + 2)) ldp split:4+2 8000")
prewrite=("${dataset[@]}" "lds:stripe:4+2:$LOAD_KEYS:100" "ldr:rep:3:$LOAD_KEYS:1000" "ldp:split:4+2:$LOAD_KEYS:8000"
	"pr:rep:3:$PROBE_KEYS:40")

mark "loading the data set"
python3 "$tool" load "${prewrite[@]}" --ports "$ports6" >"$work/load.json"
mark "loaded: $(cat "$work/load.json")"

dbsize() { redis-cli -p "$base" DBSIZE CLUSTER; }
snapshot() { # WHEN
	local s
	s=$(python3 "$tool" snapshot --http "$http" --base "$base" --count 9)
	echo "{\"when\": \"$1\", \"dbsize\": $(dbsize), \"snap\": $s}" >>"$work/snapshots.jsonl"
}
dbsize_start=$(dbsize)
snapshot "after loading"

python3 "$tool" poll --http "$http" --out "$work/status.jsonl" --interval 1 &
poller=$!
python3 "$tool" probe "${dataset[@]}" --ports "$ports6" --out "$work/probe.csv" --log "$work/probe.log" \
	--rate "$PROBE_RATE" --keys "$PROBE_KEYS" &
probe=$!

echo "proc,port,scheme,value_bytes,op,t_start,t_end,requests,done,rc,rps,avg_ms,min_ms,p50_ms,p95_ms,p99_ms,max_ms,error" >"$work/windows.csv"

# load_loop NAME PORT PREFIX SCHEME SIZE: SET and GET windows until
# $work/stop exists; the first pair (warm-up) sets the request counts.
load_loop() {
	local name=$1 port=$2 prefix=$3 scheme=$4 size=$5
	local val n_set=1000 n_get=1000 calibrated="" rb="" op n t0 t1 rc fig rps done_ err
	local f=$work/rb-$name
	val=$(head -c "$size" /dev/zero | tr '\0' v)
	trap '[ -n "$rb" ] && kill "$rb" 2>/dev/null; exit 0' TERM
	while [ ! -e "$work/stop" ]; do
		for op in SET GET; do
			if [ $op = SET ]; then n=$n_set; else n=$n_get; fi
			t0=$(now)
			# Not --csv: its progress lines (every 250 ms, "overall: <rps>")
			# tell how many requests a window that stopped at an error did.
			if [ $op = SET ]; then
				redis-benchmark -p "$port" -c 8 -n "$n" -r "$LOAD_KEYS" SET "$prefix:__rand_int__" "$val" SCHEME "$scheme" \
					>"$f.out" 2>"$f.err" &
			else
				redis-benchmark -p "$port" -c 8 -n "$n" -r "$LOAD_KEYS" GET "$prefix:__rand_int__" >"$f.out" 2>"$f.err" &
			fi
			rb=$!
			rc=0
			wait "$rb" || rc=$?
			rb=""
			t1=$(now)
			tr '\r' '\n' <"$f.out" >"$f.lines"
			# rps,avg,min,p50,p95,p99,max from the summary, empty if none.
			fig=$(awk '/throughput summary:/{r=$3} /avg +min +p50/{getline; l=$1","$2","$3","$4","$5","$6} END{if (r != "" && l != "") print r","l; else print ",,,,,,"}' "$f.lines")
			rps=${fig%%,*}
			err=$(cat "$f.lines" "$f.err" | grep -i -m 3 -E 'error|refused|reset' | tr ',\n' '; ' | cut -c1-300 || true)
			if [ -n "$err" ]; then
				[ "$rc" -ne 0 ] || rc=99 # an error printed: the window counts as failed
				echo "$(now) $name $op: $err" >>"$work/load-errors.txt"
			fi
			[ -n "$rps" ] || [ "$rc" -ne 0 ] || rc=98 # no figures: failed
			if [ "$rc" -eq 0 ]; then
				done_=$n
			else
				# redis-benchmark prints a progress line 1 ms after the start
				# and every 250 ms after, with the overall rate (requests
				# finished / time since the start): the last one's rate
				# times its time is what the window did.
				done_=$(awk -v n="$n" 'match($0, /rps=[0-9.]+ \(overall: [0-9.]+/){k++; r=substr($0, RSTART, RLENGTH); sub(/.*: /, "", r)}
					END{d=int(r*(0.001+0.25*(k-1))); print (k == 0 ? 0 : (d > n ? n : d))}' "$f.lines")
			fi
			echo "$name,$port,$scheme,$size,$op,$t0,$t1,$n,$done_,$rc,$fig,$err" >>"$work/windows.csv"
			if [ -z "$calibrated" ] && [ -n "$rps" ]; then
				n=$(awk -v r="$rps" -v w="$WINDOW_SECONDS" 'BEGIN{n=int(r*w/100+0.5)*100; print (n < 200 ? 200 : n)}')
				if [ $op = SET ]; then n_set=$n; else n_get=$n; fi
			fi
		done
		if [ -z "$calibrated" ]; then
			calibrated=1
			echo "$n_set $n_get" >"$work/n-$name"
		fi
	done
}

for l in "${loads[@]}"; do
	# shellcheck disable=SC2086 # the fields of one load
	load_loop $l &
	loops+=($!)
done
mark "load started; warm-up ${WARMUP}s"
sleep "$WARMUP"

failure=""
# phase NAME start|end [TIME]: a phase's bound, and every node's error
# counts then.
phase() {
	echo "${3:-$(now)} $1 $2" >>"$work/phases.txt"
	python3 "$tool" errorstats --base "$base" --count 9 --when "$1:$2" --out "$work/errorstats.jsonl" --root $$
}

# wait_moves ARGS...: until no migration runs (bench-rebalance.py wait);
# prints the time it saw that.
wait_moves() {
	local since=$1
	shift
	python3 "$tool" wait --status "$work/status.jsonl" --since "$since" --timeout "$MOVE_TIMEOUT" "$@"
}

phase before start
mark "baseline: ${PHASE_SECONDS}s on 6 nodes"
sleep "$PHASE_SECONDS"
phase before end

grow_flags="--parallel $PARALLEL${RATE:+ --rate $RATE}"
shrink_flags="${RATE:+--rate $RATE --parallel $PARALLEL}"
SHRINK_NOTE="the drains start the rebalance with memgest's defaults"
[ -n "$shrink_flags" ] && SHRINK_NOTE="with \`$shrink_flags\`, which sets the drains' rebalance"
export SHRINK_NOTE
t=$(now)
phase grow start
mark "grow: add-node ${new[0]} ${new[1]} --no-rebalance, ${new[2]} $grow_flags"
"$bin" cluster add-node "${new[0]}" --addr "127.0.0.1:$base" --no-rebalance >&2
"$bin" cluster add-node "${new[1]}" --addr "127.0.0.1:$base" --no-rebalance >&2
# shellcheck disable=SC2086 # the flags
"$bin" cluster add-node "${new[2]}" --addr "127.0.0.1:$base" $grow_flags >&2
mark "add-node commands done"
if end=$(wait_moves "$t" --up "$new_csv"); then
	phase grow end "$end"
	mark "grow done"
else
	failure="the grow did not end within ${MOVE_TIMEOUT}s"
	phase grow end
	mark "$failure"
fi

if [ -z "$failure" ]; then
	snapshot "after the grow"
	phase on9 start
	mark "${PHASE_SECONDS}s on 9 nodes"
	sleep "$PHASE_SECONDS"
	phase on9 end

	t=$(now)
	phase shrink start
	mark "shrink: remove-node ${new[*]}"
	for n in "${new[@]}"; do "$bin" cluster remove-node "$n" --addr "127.0.0.1:$base" $shrink_flags >&2; done
	mark "remove-node commands done"
	if end=$(wait_moves "$t" --left "$new_csv"); then
		phase shrink end "$end"
		mark "shrink done"
	else
		failure="the shrink did not end within ${MOVE_TIMEOUT}s"
		phase shrink end
		mark "$failure"
	fi
fi

if [ -z "$failure" ]; then
	snapshot "after the shrink"
	phase on6 start
	mark "${PHASE_SECONDS}s on 6 nodes"
	sleep "$PHASE_SECONDS"
	phase on6 end
fi

touch "$work/stop"
mark "stopping the load"
for p in "${loops[@]}"; do wait "$p" 2>/dev/null || true; done
loops=()
stop_pid "$probe"
probe=""
sleep 1.5
stop_pid "$poller"
poller=""

dbsize_end=$(dbsize)
snapshot "at the end"
mark "reading every data set key back"
verify_rc=0
python3 "$tool" verify "${dataset[@]}" --ports "$ports6" --out "$work/verify.json" >&2 || verify_rc=$?
check_rc=0
redis-cli --cluster check "127.0.0.1:$base" >"$work/cluster-check.txt" 2>&1 || check_rc=$?
mark "cluster check exit $check_rc"
stop_pid "$dev"
dev=""

# The CPU other processes used meanwhile: the machine's busy time minus
# this script's and its reaped children's (every process above has been
# waited for, so their times are in our cutime/cstime).
busy1=$(cpu_busy)
ps -eo pid=,comm=,times= >"$work/ps-end.txt"
read -r ours < <(awk '{print $14+$15+$16+$17}' /proc/$$/stat)

# Failures keep the logs.
load_errs=$(awk -F, 'NR>1 && $10!=0' "$work/windows.csv" | wc -l)
probe_bad=$(tail -n 1 "$work/probe.csv" | awk -F, '{print $4+$5+$6}')
if [ -n "$failure" ] || [ "$load_errs" -ne 0 ] || [ "${probe_bad:-0}" -ne 0 ] || [ "$verify_rc" -ne 0 ] || [ "$check_rc" -ne 0 ] ||
	[ "$dbsize_start" != "$dbsize_end" ]; then
	mkdir -p "$LOGDIR"
	cp "$work"/{dev.log,events.txt,phases.txt,status.jsonl,probe.csv,windows.csv,cluster-check.txt} "$LOGDIR/" 2>/dev/null || true
	cp "$work"/probe.log "$work"/load-errors.txt "$work"/verify.json "$work"/errorstats.jsonl "$LOGDIR/" 2>/dev/null || true
	failure_logs=$LOGDIR
	[ -n "$failure" ] || failure_checks=1
fi

cp "$work/windows.csv" "$out/$NAME-windows.csv"
t0=$(awk '$2=="before" && $3=="start"{print $1}' "$work/phases.txt")
python3 "$tool" status-csv --status "$work/status.jsonl" --out "$out/$NAME-status.csv" --t0 "${t0:-0}"

# meta.json and events.json for the report.
export WORK=$work CMDLINE=$cmdline BASE=$base DEV_ARGS=$dev_args GROW_FLAGS=$grow_flags FAILURE=$failure \
	FAILURE_LOGS=${failure_logs:-} DBSIZE_START=$dbsize_start DBSIZE_END=$dbsize_end CHECK_RC=$check_rc \
	BUSY0=$busy0 BUSY1=$busy1 OURS=$ours NAME LOAD_KEYS WINDOW_SECONDS PROBE_RATE
DATASET="${dataset[*]}"
LOADS=$(printf '%s\n' "${loads[@]}")
export DATASET LOADS
python3 - <<'PY'
import json, os, re, subprocess, time
w = os.environ["WORK"]
ev = {"marks": []}
for ln in open(os.path.join(w, "phases.txt")):
    t, name, what = ln.split()
    ev.setdefault(name, {})[what] = float(t)
for ln in open(os.path.join(w, "events.txt")):
    t, what = ln.rstrip("\n").split(" ", 1)
    if what.startswith(("grow:", "add-node", "shrink:", "remove-node", "grow done", "shrink done", "the ")):
        ev["marks"].append({"ts": float(t), "what": what})
json.dump(ev, open(os.path.join(w, "events.json"), "w"))
marks = [float(ln.split(" ", 1)[0]) for ln in open(os.path.join(w, "events.txt"))]
run_seconds = marks[-1] - marks[0] if marks else 0

hz = os.sysconf("SC_CLK_TCK")
def ps(path):
    out = {}
    for ln in open(path):
        f = ln.split()
        if len(f) >= 3:
            out[f[0]] = (f[1], int(f[-1]))
    return out
a, b = ps(os.path.join(w, "ps-start.txt")), ps(os.path.join(w, "ps-end.txt"))
busy = (int(os.environ["BUSY1"]) - int(os.environ["BUSY0"])) / hz
ours = int(os.environ["OURS"]) / hz
others = {}
for pid, (comm, t1) in b.items():
    if pid in a and a[pid][0] == comm and t1 - a[pid][1] > 0:
        others[comm] = others.get(comm, 0) + t1 - a[pid][1]
top = [(c, s / hz) for c, s in sorted(others.items(), key=lambda x: -x[1])[:4] if s / hz >= 5]
others_txt = "about %.0f core-seconds of the %.0f the machine was busy (this run: %.0f)" % (
    max(0, busy - ours), busy, ours)
seen = {}
for ln in open(os.path.join(w, "errorstats.jsonl")):
    for c in json.loads(ln).get("running", []):
        seen[c] = seen.get(c, 0) + 1
if seen:
    others_txt += "; running at the phases' bounds: " + ", ".join(
        "%s (%d of %d)" % (c, n, sum(1 for _ in open(os.path.join(w, "errorstats.jsonl"))))
        for c, n in sorted(seen.items(), key=lambda x: -x[1])[:5])
if top:
    others_txt += "; processes alive for the whole run: " + ", ".join("%s %.0f s" % (c, s) for c, s in top)

snaps = []
for ln in open(os.path.join(w, "snapshots.jsonl")):
    s = json.loads(ln)
    snaps.append({"when": s["when"], "dbsize": s["dbsize"], "bytes": s["snap"]["bytes"]})
loads = []
for ln in os.environ["LOADS"].splitlines():
    name, port, prefix, scheme, size = ln.split()
    l = {"name": name, "port": port, "prefix": prefix, "scheme": scheme, "size": size}
    p = os.path.join(w, "n-" + name)
    if os.path.exists(p):
        l["n_set"], l["n_get"] = open(p).read().split()
    loads.append(l)
verify = {}
if os.path.exists(os.path.join(w, "verify.json")):
    verify = json.load(open(os.path.join(w, "verify.json")))
check = open(os.path.join(w, "cluster-check.txt")).read()
check = re.sub(r"\x1b\[[0-9;]*m", "", check)
oks = [l for l in check.splitlines() if l.startswith("[OK]")]
errs = [l for l in check.splitlines() if l.startswith("[ERR]") or l.startswith("[WARNING]")]
check_txt = ("exit %s; " % os.environ["CHECK_RC"]) + "; ".join(oks + errs)
log = open(os.path.join(w, "dev.log"), errors="replace").read().splitlines()
# What the nodes logged while they served; after dev's "stopping" line,
# what they logged as they stopped.
stop_at = next((i for i, l in enumerate(log) if re.search(r": stopping \d+ nodes", l)), len(log))
pat = r"(?i)warn|error|paused|panic|fatal|level=(WARN|ERROR)"
warn = [l for l in log[:stop_at] if re.search(pat, l)]
warn_stop = [l for l in log[stop_at:] if re.search(pat, l)]
cpu = "?"
for ln in open("/proc/cpuinfo"):
    if ln.startswith("model name"):
        cpu = ln.split(":", 1)[1].strip()
        break
go = subprocess.run(["go", "version"], capture_output=True, text=True).stdout.strip()
meta = {
    "command": os.environ["CMDLINE"], "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
    "nproc": os.cpu_count(), "cpu": cpu, "go": go, "loadavg_start": open(os.path.join(w, "loadavg")).read().strip(),
    "others": others_txt, "base_port": os.environ["BASE"], "dev_args": os.environ["DEV_ARGS"],
    "dataset": os.environ["DATASET"].split(), "loads": loads, "load_keys": int(os.environ["LOAD_KEYS"]),
    "window_target": os.environ["WINDOW_SECONDS"], "probe_rate": os.environ["PROBE_RATE"],
    "grow_flags": os.environ["GROW_FLAGS"], "shrink_note": os.environ["SHRINK_NOTE"],
    "failure": os.environ["FAILURE"], "failure_logs": os.environ["FAILURE_LOGS"],
    "snapshots": snaps, "dbsize_start": os.environ["DBSIZE_START"], "dbsize_end": os.environ["DBSIZE_END"],
    "verify": verify, "cluster_check": check_txt, "log_warnings": len(warn), "log_examples": warn[:8],
    "log_at_stop": warn_stop[:4], "run_seconds": run_seconds,
    "windows_csv": os.environ["NAME"] + "-windows.csv", "status_csv": os.environ["NAME"] + "-status.csv",
}
# The rebalance's settings as the status showed them.
runs = set()
for ln in open(os.path.join(w, "status.jsonl")):
    try:
        p = json.loads(ln)
    except ValueError:
        continue
    if p.get("rebalance"):
        runs.add(p["rebalance"])
if runs:
    meta["notes"] = ["Rebalances seen in the status: " + "; ".join(sorted(runs)) + "."]
json.dump(meta, open(os.path.join(w, "meta.json"), "w"), indent=1)
PY
python3 "$tool" report --dir "$work" --out "$out/$NAME.md"
echo "wrote $out/$NAME.md, $out/$NAME-windows.csv, $out/$NAME-status.csv" >&2
if [ -n "$failure" ] || [ -n "${failure_checks:-}" ]; then
	echo "the run found problems: ${failure:-errors, wrong reads or a failed check}; logs in $failure_logs" >&2
	exit 1
fi
