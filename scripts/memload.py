#!/usr/bin/env python3
"""memload.py PORT N [--cluster]: SET N objects with MemEC's workload
(24-byte keys, 8-32-byte values, a fixed seed) through pipelined RESP.

With --cluster the keys go to their coordinators (CLUSTER SLOTS of the node
at PORT, slots by CRC16 as Redis Cluster computes them); otherwise all go
to PORT. Every reply must be +OK. Used by scripts/bench-memory.sh.
"""
import binascii
import random
import socket
import sys

BATCH = 2000


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def call(sock, *args):
    sock.sendall(resp(*args))
    return read_reply(sock.makefile("rb"))


def read_reply(f):
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind == b"*":
        return [read_reply(f) for _ in range(int(rest))]
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data
    if kind == b":":
        return int(rest)
    if kind == b"-":
        raise RuntimeError(rest.decode())
    return rest


def slot_owners(port):
    s = socket.create_connection(("127.0.0.1", port))
    owners = [None] * 16384
    for r in call(s, b"CLUSTER", b"SLOTS"):
        for slot in range(r[0], r[1] + 1):
            owners[slot] = int(r[2][1])
    s.close()
    return owners


class Pipe:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf, self.pending = [], 0
        self.reader = self.sock.makefile("rb")

    def add(self, cmd):
        self.buf.append(cmd)
        if len(self.buf) >= BATCH:
            self.flush()

    def flush(self):
        if not self.buf:
            return
        self.sock.sendall(b"".join(self.buf))
        for _ in self.buf:
            line = self.reader.readline()
            if line != b"+OK\r\n":
                raise RuntimeError("SET answered %r" % line)
        self.buf = []


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    cluster = "--cluster" in sys.argv
    owners = slot_owners(port) if cluster else None
    pipes = {}
    rng = random.Random(42)
    letters = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    for i in range(n):
        key = b"key:%020d" % i
        value = bytes(rng.choices(letters, k=rng.randint(8, 32)))
        target = owners[binascii.crc_hqx(key, 0) % 16384] if cluster else port
        p = pipes.get(target)
        if p is None:
            p = pipes[target] = Pipe(target)
        p.add(b"*3\r\n$3\r\nSET\r\n$24\r\n%s\r\n$%d\r\n%s\r\n" % (key, len(value), value))
    for p in pipes.values():
        p.flush()


if __name__ == "__main__":
    main()
