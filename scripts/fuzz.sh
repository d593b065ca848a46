#!/usr/bin/env bash
# fuzz.sh TIME [PACKAGES...]: runs every Go fuzz target in the packages for
# TIME each (a go test -fuzztime value). Go fuzzes one target per invocation,
# so the targets are listed first and run one after another.
set -euo pipefail
fuzztime=${1:?usage: fuzz.sh TIME [PACKAGES...]}
shift
pkgs=("${@:-./...}")
for pkg in $(go list "${pkgs[@]}"); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz $pkg $target for $fuzztime"
		go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime"
	done
done
