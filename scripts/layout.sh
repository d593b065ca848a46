#!/bin/bash
# layout.sh [DIR]: the figures issue 24 asks of the tree at DIR (default:
# this checkout): non-test Go lines per package and their share of the
# total, and the comparisons against a scheme kind outside the scheme
# packages (the registry and the map's spec encoding are expected).
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
total=0
declare -A lines
for f in $(git ls-files '*.go' | grep -v '_test\.go$' | grep -v '^scripts/'); do
	d=$(dirname "$f")
	n=$(wc -l < "$f")
	lines[$d]=$(( ${lines[$d]:-0} + n ))
	total=$(( total + n ))
done
for d in "${!lines[@]}"; do
	printf "%6d %5.1f%% %s\n" "${lines[$d]}" "$(echo "scale=1; ${lines[$d]}*100/$total" | bc)" "$d"
done | sort -rn
echo "total $total"
echo "kind comparisons outside scheme/ (non-test):"
git grep -n 'scheme\.\(None\|Rep\|Split\|Stripe\|Hybrid\)\b' -- '*.go' ':!*_test.go' ':!scheme/*' || true
