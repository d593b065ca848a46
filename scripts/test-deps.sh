#!/usr/bin/env bash
# test-deps.sh: makes (once) the Python venv the multi-process tests use to
# drive memgest with redis-py's RedisCluster (tests/pyclient), outside the
# repository, and prints its interpreter. `make test` calls it and passes
# the path to the tests as MEMGEST_TEST_PYTHON.
set -euo pipefail

# REDIS_PY_VERSION is the redis-py release the tests pin.
REDIS_PY_VERSION=8.1.0

cache=${MEMGEST_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memgest-test}
venv=$cache/venv-redis-py-$REDIS_PY_VERSION
if ! "$venv/bin/python" -c "import redis, sys; sys.exit(redis.__version__ != '$REDIS_PY_VERSION')" 2>/dev/null; then
	echo "test-deps: installing redis-py $REDIS_PY_VERSION into $venv (once)" >&2
	rm -rf "$venv"
	mkdir -p "$cache"
	python3 -m venv "$venv" >&2
	"$venv/bin/pip" install -q "redis==$REDIS_PY_VERSION" >&2
fi
echo "$venv/bin/python"
