"""Drives a memgest cluster through redis-py for tests/drivers_test.go
(TestClientLibraries) and prints what it saw as one JSON object, keyed by
scheme.

    drivers.py HOST PORT SCHEMES   SCHEMES: comma-separated scheme specs

For each scheme, RedisCluster runs a cache library's string calls and a
session store's hash calls on keys moved to the scheme; a plain Redis
client on one node (memgest forwards for it) reads a hash back;
transactions run through both (MULTI/EXEC pipelines, WATCH). Then
pub/sub: RedisCluster's pubsub subscribes to a channel and a pattern and
receives what the plain client publishes, and a sharded subscription
receives an SPUBLISH. The Go test compares every result with Redis's
answer.
"""

import json
import sys
import time

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
    transactions(rc, plain, key, spec, out)
    return out


def transactions(rc, plain, key, spec, out):
    """MULTI/EXEC through RedisCluster's transactional pipeline and the
    plain client's default pipeline (transactional), and WATCH through
    redis-py's optimistic transaction() helper."""
    c, h = key("tx-counter"), key("tx-hash")
    rc.set(c, "10")
    rc.execute_command("SCHEME.MOVE", c, spec)
    with rc.pipeline(transaction=True) as p:
        p.incr(c)
        p.hset(h, "f", "v")
        p.hget(h, "f")
        out["cluster_tx"] = p.execute()
    n = key("tx-plain")
    with plain.pipeline() as p:  # transaction=True is the default
        p.incr(n)
        p.incr(n)
        out["plain_tx"] = p.execute()

    def add(delta, meddle):
        def step(pipe):
            v = int(pipe.get(c))
            if meddle:
                plain.set(c, "100")  # another client writes the watched key
            pipe.multi()
            pipe.set(c, v + delta)
        return step

    plain.set(c, "10")
    plain.transaction(add(5, False), c)
    out["watch_ok"] = int(plain.get(c))
    try:
        with plain.pipeline() as pipe:
            pipe.watch(c)
            add(5, True)(pipe)
            pipe.execute()
        out["watch_aborted"] = "committed"
    except redis.WatchError:
        out["watch_aborted"] = "WatchError"
    out["after_watch"] = plain.get(c)


def wait_message(p, get):
    """The next message p receives within 10 s (confirmations skipped)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        m = get(p, timeout=0.5)
        if m is not None and m["type"] in ("message", "pmessage", "smessage"):
            return [m["type"], m["channel"], m["data"]]
    return None


def confirmations(p, get, n):
    """Reads p's next n subscription confirmations (within 10 s)."""
    deadline = time.monotonic() + 10
    while n > 0 and time.monotonic() < deadline:
        m = get(p, timeout=0.5)
        if m is not None and m["type"] in ("subscribe", "psubscribe", "ssubscribe"):
            n -= 1


def pubsub(rc, plain):
    """Classic and sharded pub/sub as an application subscribes: through
    RedisCluster's pubsub, published from another connection."""
    out = {}
    p = rc.pubsub()
    p.subscribe("py:news")
    p.psubscribe("py:n*")
    confirmations(p, lambda p, timeout: p.get_message(timeout=timeout), 2)
    out["publish_receivers"] = plain.publish("py:news", "hello")
    got = [wait_message(p, lambda p, timeout: p.get_message(timeout=timeout)) for _ in range(2)]
    out["messages"] = sorted(got, key=lambda m: m[0] if m else "")
    p.close()
    sp = rc.pubsub()
    sp.ssubscribe("{py}:orders")
    get_sharded = lambda p, timeout: p.get_sharded_message(timeout=timeout)
    confirmations(sp, get_sharded, 1)
    out["spublish_receivers"] = rc.spublish("{py}:orders", "o1")
    out["smessage"] = wait_message(sp, get_sharded)
    sp.close()
    return out


def main():
    host, port, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
    rc = RedisCluster(host=host, port=port, decode_responses=True)
    plain = redis.Redis(host=host, port=port, decode_responses=True)
    try:
        out = {spec: on_scheme(rc, plain, spec) for spec in specs}
        out["pubsub"] = pubsub(rc, plain)
    finally:
        rc.close()
        plain.close()
    out["redis_py"] = redis.__version__
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
