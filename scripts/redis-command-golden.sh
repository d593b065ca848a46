#!/bin/bash
# redis-command-golden.sh [OUT]: asks a local Redis what COMMAND INFO and
# COMMAND DOCS say of every command memgest serves (or its branches are
# adding), and writes them, with Redis's COMMAND LIST, to OUT
# (server/resp/testdata/redis-live-commands.json). TestCommandTableAgainstRedis
# compares memgest's command table with that file where it agrees with
# Redis 7.2.6's src/commands (testdata/redis-source-commands.json, from
# scripts/redis-command-json.py on a redis/redis checkout), and with the
# latter everywhere; CI has no redis-server and reads only the files.
#
# After adding names below, regenerate both:
#   scripts/redis-command-golden.sh
#   scripts/redis-command-json.py ~/src/redis 7.2.6
#
# Needs redis-server and redis-cli (REDIS_SERVER, REDIS_CLI override them;
# apt install redis-server) and python3. It starts Redis on a free
# loopback port with no persistence, and kills it by its PID when done.
#
# A command added to memgest's table that Redis has must be added to NAMES
# below and both files regenerated: the test names any it cannot find.
# COMMAND DOCS' argument descriptions are dropped (memgest does not serve
# them). Subcommands come with their containers.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-server/resp/testdata/redis-live-commands.json}
server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}

NAMES="
  get set getdel getex mget mset msetnx incr incrby decr decrby append strlen
  setnx setex psetex getset getrange substr setrange incrbyfloat lcs
  hset hmset hsetnx hget hmget hgetall hkeys hvals hdel hexists hlen hstrlen
  hincrby hincrbyfloat hscan hrandfield
  del unlink exists expire pexpire expireat pexpireat ttl pttl persist type
  scan keys rename renamenx copy touch randomkey expiretime pexpiretime object wait
  dbsize debug flushall flushdb info command config memory time
  ping echo hello auth select quit client reset
  cluster readonly readwrite
  multi exec discard watch unwatch
  subscribe psubscribe unsubscribe punsubscribe publish pubsub spublish ssubscribe sunsubscribe
"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
"$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
  "$cli" -p "$port" PING >/dev/null 2>&1 && break
  sleep 0.05
done

r() { "$cli" -p "$port" -3 --json "$@"; }
# shellcheck disable=SC2086 # NAMES is a word list
{
  r HELLO 3 | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["version"]))'
  r COMMAND LIST
  r COMMAND INFO $NAMES
  r COMMAND DOCS $NAMES
} >"$dir/replies"

python3 - "$dir/replies" "$out" <<'EOF'
import json, sys

version, names, infos, docs = [json.loads(l) for l in open(sys.argv[1])]

def drop_arguments(doc):
    doc.pop("arguments", None)
    for sub in doc.get("subcommands", {}).values():
        drop_arguments(sub)
    return doc

golden = {
    "redis_version": version,
    "command_list": sorted(names),
    "info": {i[0]: i for i in infos if i is not None},
    "docs": {name: drop_arguments(d) for name, d in docs.items()},
}
with open(sys.argv[2], "w") as f:
    json.dump(golden, f, indent=1, sort_keys=True)
    f.write("\n")
EOF
echo "wrote $out from Redis $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["redis_version"])' "$out")"
