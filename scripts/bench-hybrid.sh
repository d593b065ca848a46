#!/usr/bin/env bash
# bench-hybrid.sh [OUTDIR]: issue 25's measurements of hybrid:4+2 against
# stripe:4+2 and rep:3 (docs/benchmarks/hybrid.md quotes them):
#   1. throughput: scripts/ab-node6.sh (a 6-node dev cluster, redis-benchmark
#      --cluster SET and GET of 100 B at -P1 and -P16, cluster-wide CPU µs per
#      request) for each scheme in turn, ROUNDS rounds (default 3), printed
#      with the median of each figure;
#   2. memory: scripts/bench-memory.sh with those schemes and Redis, at 1 M and
#      10 M objects, to OUTDIR/memory-hybrid.md;
#   3. failure: TestFailureBenchmarkReport with the three schemes, 200 000
#      keys of 100 B, to OUTDIR/failure-hybrid.md.
# It takes about 20 minutes on 2 cores; nothing else should run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/benchmarks}
case $out in /*) ;; *) out=$PWD/$out ;; esac
rounds=${ROUNDS:-3}
schemes="rep:3 stripe:4+2 hybrid:4+2"

go build -o bin/memgest ./cmd/memgest
log=$(mktemp)
for r in $(seq 1 "$rounds"); do
	for s in $schemes; do scripts/ab-node6.sh "$PWD/bin/memgest" "r$r" "$s" | tee -a "$log"; done
done
python3 - "$log" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(lambda: ([], []))
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) >= 8:
        rows[(p[1], p[2], p[3])][0].append(float(p[4]))
        rows[(p[1], p[2], p[3])][1].append(float(p[6]))
print("| scheme | pipeline | op | requests/s (median) | range | CPU µs/request (median) | range |")
print("|---|---|---|---:|---|---:|---|")
for (s, P, op), (r, u) in sorted(rows.items()):
    print(f"| {s} | {P} | {op} | {statistics.median(r):,.0f} | {min(r):,.0f}–{max(r):,.0f} | {statistics.median(u):.2f} | {min(u):.2f}–{max(u):.2f} |")
PY
OBJECTS="1000000 10000000" SCHEMES="$schemes" scripts/bench-memory.sh "$out/memory-hybrid.md"
MEMGEST_TEST_NORACE=1 go test ./tests -run '^TestFailureBenchmarkReport$' -count=1 -timeout 40m -v \
	-failbench.report="$out/failure-hybrid.md" -failbench.schemes=hybrid:4+2,stripe:4+2,rep:3 \
	-failbench.keys=200000 -failbench.value=100
