"""Drives a memgest cluster through redis-py for tests/drivers_test.go
(TestClientLibraries) and prints what it saw as one JSON object, keyed by
scheme.

    drivers.py HOST PORT SCHEMES   SCHEMES: comma-separated scheme specs

For each scheme, RedisCluster runs a cache library's string calls and a
session store's hash calls on keys moved to the scheme; a plain Redis
client on one node (memgest forwards for it) reads a hash back. The Go
test compares every result with Redis's answer.
"""

import json
import sys

import redis
from redis.cluster import RedisCluster


def on_scheme(rc, plain, spec):
    key = lambda name: f"py:{name}:{{{spec}}}"
    out = {}
    s = key("str")
    rc.set(s, "v1")
    rc.execute_command("SCHEME.MOVE", s, spec)
    out["set_get_old"] = rc.set(s, "v2", get=True)
    out["setnx_existing"] = rc.setnx(s, "v3")
    rc.setex(s, 1000, "v4")
    out["getrange"] = rc.getrange(s, 0, 0)
    out["append"] = rc.append(s, "+tail")
    out["get"] = rc.get(s)

    h = key("session")
    rc.hset(h, mapping={"user": "ada", "visits": 1, "score": 1.5})
    rc.execute_command("SCHEME.MOVE", h, spec)
    out["hincrby"] = rc.hincrby(h, "visits", 41)
    out["hincrbyfloat"] = rc.hincrbyfloat(h, "score", 0.25)
    out["hgetall"] = rc.hgetall(h)
    out["hmget"] = rc.hmget(h, ["user", "nope"])
    out["hscan_fields"] = len(dict(rc.hscan_iter(h)))
    fields = rc.hrandfield(h, 2)
    out["hrandfield_distinct"] = len(fields) == 2 and fields[0] != fields[1]
    out["hdel"] = rc.hdel(h, "user", "visits", "score")
    out["exists_after_hdel"] = rc.exists(h)
    try:
        rc.hget(s, "f")
        out["hget_on_string"] = "no error"
    except redis.ResponseError as e:
        out["hget_on_string"] = str(e).split(" ")[0]

    p = key("plain")
    plain.hset(p, "a", 1)
    out["plain_hgetall"] = plain.hgetall(p)
    out["plain_type"] = plain.type(p)
    return out


def main():
    host, port, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    rc = RedisCluster(host=host, port=port, decode_responses=True)
    plain = redis.Redis(host=host, port=port, decode_responses=True)
    try:
        out = {spec: on_scheme(rc, plain, spec) for spec in specs}
    finally:
        rc.close()
        plain.close()
    out["redis_py"] = redis.__version__
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
