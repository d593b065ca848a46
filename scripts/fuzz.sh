#!/usr/bin/env bash
# fuzz.sh TIME [PACKAGES...]: runs every Go fuzz target in the packages for
# TIME each (a go test -fuzztime value). Go fuzzes one target per invocation,
# so the targets are listed first and run one after another.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" at the -fuzztime boundary although it found nothing
# (go.dev/issue/75804, fixed in Go 1.27). A run that fails that way and
# writes no failing input to testdata/fuzz/<target>/ is reported as that
# known race and does not fail the script; every other failure does.
set -euo pipefail
fuzztime=${1:?usage: fuzz.sh TIME [PACKAGES...]}
shift
pkgs=("${@:-./...}")

corpus_count() { # dir of a package, target
	local d="$1/testdata/fuzz/$2"
	if [ -d "$d" ]; then find "$d" -type f | wc -l; else echo 0; fi
}

# fuzz_targets DIR lists the fuzz targets a package's test files declare
# (read from the source: `go test -list` would compile every package once
# more just to list them).
fuzz_targets() {
	grep -ho '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' "$1"/*_test.go 2>/dev/null | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' || true
}

for pkg in $(go list "${pkgs[@]}"); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for target in $(fuzz_targets "$dir"); do
		echo "fuzz $pkg $target for $fuzztime"
		before=$(corpus_count "$dir" "$target")
		out=$(mktemp)
		if go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" 2>&1 | tee "$out" | grep -v '^fuzz: elapsed'; then
			status=${PIPESTATUS[0]}
		else
			status=${PIPESTATUS[0]}
		fi
		after=$(corpus_count "$dir" "$target")
		if [ "$status" -ne 0 ]; then
			if [ "$after" -eq "$before" ] && grep -q 'context deadline exceeded' "$out"; then
				echo "fuzz.sh: $target hit Go's fuzz-deadline race (go.dev/issue/75804) and wrote no failing input; not a failure"
			else
				rm -f "$out"
				echo "fuzz.sh: $target failed" >&2
				exit 1
			fi
		fi
		rm -f "$out"
	done
done
