"""Drives a memgest cluster through redis-py's RedisCluster for
tests/keyspace_test.go and prints what it saw as one JSON object.

    keyspace.py HOST PORT read MATCH   scan_iter and dbsize, as an application would
    keyspace.py HOST PORT flushall     RedisCluster.flushall(): FLUSHALL on every primary

The Go test checks the answers (decision 0004: SCAN, DBSIZE and FLUSHALL
answer for the node's own slots).
"""

import json
import sys

import redis
from redis.cluster import RedisCluster


def read(rc, match):
    return {
        "scan": list(rc.scan_iter(match=match, count=50)),
        # Without target_nodes redis-py sends DBSIZE to its default node
        # only, as it does against Redis Cluster.
        "dbsize_default": rc.dbsize(),
        "default_node": rc.get_default_node().name,
        "dbsize_primaries": rc.dbsize(target_nodes=RedisCluster.PRIMARIES),
        "dbsize_by_node": {node.name: rc.dbsize(target_nodes=node) for node in rc.get_primaries()},
    }


def flushall(rc):
    return {
        "flushall": rc.flushall(),
        "dbsize_primaries": rc.dbsize(target_nodes=RedisCluster.PRIMARIES),
    }


def main():
    host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rc = RedisCluster(host=host, port=port, decode_responses=True)
    try:
        out = read(rc, sys.argv[4]) if mode == "read" else flushall(rc)
    finally:
        rc.close()
    out["redis_py"] = redis.__version__
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
