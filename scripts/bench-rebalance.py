#!/usr/bin/env python3
"""Helpers of scripts/bench-rebalance.sh (issue 29's 6 -> 9 -> 6 benchmark).
Standard library only.

  load    SPEC... --ports P,...        write keys whose values derive from their names
  verify  SPEC... --ports P,... --out F read every key back, bit-exact
  poll    --http ADDR --out F          status JSON every --interval, one line each
  wait    --status F --since T ...     until the poller sees no migration
  probe   SPEC... --ports P,... --out F reads of dataset keys and SET/GET pairs, counted
  report  --dir D --out F              the markdown report from the run's files

A SPEC is PREFIX:SCHEME:COUNT:BYTES, the prefix one word without a colon:
dss:stripe:4+2:300000:100 is keys dss:000000000000 .. dss:000000299999 of
100 bytes each under stripe:4+2.
"""

import argparse
import csv
import json
import os
import random
import signal
import socket
import statistics
import sys
import time
import urllib.request


# ---------------------------------------------------------------- RESP client

class RespError(Exception):
    pass


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port, timeout=30.0):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb", buffering=1 << 20)

    def close(self):
        try:
            self.f.close()
            self.sock.close()
        except OSError:
            pass

    def send(self, cmds):
        self.sock.sendall(b"".join(encode(c) for c in cmds))

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("connection closed by 127.0.0.1:%d" % self.port)
        t, body = line[:1], line[1:-2]
        if t == b"+":
            return body.decode()
        if t == b"-":
            return RespError(body.decode(errors="replace"))
        if t == b":":
            return int(body)
        if t == b"$":
            n = int(body)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("short read from 127.0.0.1:%d" % self.port)
            return data[:-2]
        if t == b"*":
            n = int(body)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ConnectionError("bad reply from 127.0.0.1:%d: %r" % (self.port, line[:80]))

    def do(self, *args):
        self.send([args])
        return self.read()


# ---------------------------------------------------------------- the data set

def parse_spec(s):
    """PREFIX:SCHEME:COUNT:BYTES (the scheme may hold a colon: stripe:4+2)."""
    parts = s.split(":")
    prefix, count, size = parts[0], int(parts[-2]), int(parts[-1])
    scheme = ":".join(parts[1:-2])
    return prefix, scheme, count, size


def key_name(prefix, i):
    """The name redis-benchmark gives __rand_int__ (12 digits), so that the
    load's keys are the ones written beforehand."""
    return "%s:%012d" % (prefix, i)


def value_of(key, size):
    """A value derived from the key alone (a seeded generator's bytes), so
    that any swap, shift or truncation of pieces reads back wrong."""
    return random.Random(key).randbytes(size)


def cmd_load(a):
    conns = [Conn(int(p)) for p in a.ports.split(",")]
    batch = a.batch
    t0 = time.time()
    total = errors = 0
    for spec in a.specs:
        prefix, scheme, count, size = parse_spec(spec)
        i = 0
        while i < count:
            sent = []
            for c in conns:
                if i >= count:
                    break
                j = min(count, i + batch)
                cmds = []
                for n in range(i, j):
                    k = key_name(prefix, n)
                    cmds.append(("SET", k, value_of(k, size), "SCHEME", scheme))
                c.send(cmds)
                sent.append((c, j - i))
                i = j
            for c, n in sent:
                for _ in range(n):
                    r = c.read()
                    total += 1
                    if r != "OK":
                        errors += 1
                        if errors <= 10:
                            print("load: %s answered %r" % (prefix, r), file=sys.stderr)
        print("load: %s %s %d keys of %d B" % (prefix, scheme, count, size), file=sys.stderr)
    dt = time.time() - t0
    print(json.dumps({"keys": total, "errors": errors, "seconds": round(dt, 1)}))
    return 1 if errors else 0


def cmd_verify(a):
    conns = [Conn(int(p)) for p in a.ports.split(",")]
    res = {"checked": 0, "missing": 0, "wrong": 0, "errors": 0, "examples": []}
    t0 = time.time()
    for spec in a.specs:
        prefix, scheme, count, size = parse_spec(spec)
        idx = list(range(count))
        if a.sample and a.sample < count:
            idx = sorted(random.Random(a.seed).sample(idx, a.sample))
        pos = 0
        while pos < len(idx):
            sent = []
            for c in conns:
                if pos >= len(idx):
                    break
                chunk = idx[pos:pos + a.batch]
                pos += len(chunk)
                c.send([("GET", key_name(prefix, n)) for n in chunk])
                sent.append((c, chunk))
            for c, chunk in sent:
                for n in chunk:
                    k = key_name(prefix, n)
                    r = c.read()
                    res["checked"] += 1
                    bad = None
                    if isinstance(r, RespError):
                        res["errors"] += 1
                        bad = "error %s" % r
                    elif r is None:
                        res["missing"] += 1
                        bad = "missing"
                    elif r != value_of(k, size):
                        res["wrong"] += 1
                        bad = "wrong value (%d bytes)" % len(r)
                    if bad and len(res["examples"]) < 20:
                        res["examples"].append("%s: %s" % (k, bad))
    res["seconds"] = round(time.time() - t0, 1)
    with open(a.out, "w") as f:
        json.dump(res, f)
    print(json.dumps(res))
    return 0 if res["missing"] == res["wrong"] == res["errors"] == 0 else 1


# ---------------------------------------------------------------- status poller

def fetch_status(addr, timeout=5.0):
    with urllib.request.urlopen("http://%s/status" % addr, timeout=timeout) as r:
        return json.load(r)


def cmd_poll(a):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(a.out, "a", buffering=1) as f:
        while not stop:
            t = time.time()
            try:
                st = fetch_status(a.http)
                line = {"ts": round(t, 3), "epoch": st["epoch"], "state": st["state"],
                        "rebalance": st.get("rebalance", ""), "importing": st["shards_importing"],
                        "migration": st["migration"], "rebuilding": st["shards_rebuilding"],
                        "lost": st.get("lost_count", 0),
                        "nodes": [{"addr": n["client_addr"], "state": n["state"], "phase": n["phase"],
                                   "slots": n["slots"], "keys": n["keys"], "bytes": n["bytes"],
                                   "serving": n["serving"], "error": n.get("error", "")}
                                  for n in st["nodes"]]}
            except Exception as e:  # noqa: BLE001 - a failed poll is recorded, not fatal
                line = {"ts": round(t, 3), "poll_error": str(e)}
            f.write(json.dumps(line) + "\n")
            time.sleep(max(0.0, a.interval - (time.time() - t)))
    return 0


def last_lines(path, n=4):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 65536))
            lines = f.read().decode(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return json_lines(lines[-n:])


def json_lines(lines):
    """The JSON values of lines, skipping any that does not parse (a line a
    writer had not finished)."""
    out = []
    for ln in lines:
        try:
            out.append(json.loads(ln))
        except ValueError:
            pass
    return out


def cmd_wait(a):
    """Waits until two consecutive polls newer than --since show no
    rebalance, no importing shard, every --left node left and every --up
    node holding slots. Exits 2 after --timeout seconds."""
    left = set(x for x in a.left.split(",") if x)
    up = set(x for x in a.up.split(",") if x)
    deadline = time.time() + a.timeout
    last_report = 0.0
    while time.time() < deadline:
        polls = [p for p in last_lines(a.status) if p["ts"] > a.since + 0.5]
        ok = []
        for p in polls[-2:]:
            if "poll_error" in p:
                ok.append(False)
                continue
            states = {n["addr"]: n for n in p["nodes"]}
            good = not p["rebalance"] and p["importing"] == 0
            good = good and all(states.get(x, {}).get("state") == "left" for x in left)
            good = good and all(states.get(x, {}).get("slots", 0) > 0 for x in up)
            ok.append(good)
        if len(ok) == 2 and all(ok):
            print("%.3f" % polls[-1]["ts"])
            return 0
        if polls and time.time() - last_report >= 10:
            last_report = time.time()
            p = polls[-1]
            if "poll_error" in p:
                print("  status: %s" % p["poll_error"], file=sys.stderr)
            else:
                m = p["migration"]
                print("  %4.0fs: epoch %d, %s, %d importing, moved %d/%d keys, %.1f MB; %s" % (
                    p["ts"] - a.since, p["epoch"], p["rebalance"] or "no rebalance", p["importing"],
                    m["keys_done"], m["keys_total"], m["bytes_done"] / 1e6,
                    " ".join("%s=%s/%d" % (n["addr"].rsplit(":", 1)[1], n["state"], n["slots"]) for n in p["nodes"])),
                    file=sys.stderr)
        time.sleep(0.25)
    return 2


# ---------------------------------------------------------------- probe

def cmd_probe(a):
    """Reads random dataset keys from random nodes and compares them with
    their values; writes probe keys on one node and reads them back from
    another. Every error, missing key and wrong value is counted and
    logged; a line of cumulative counts is written every second."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    ports = [int(p) for p in a.ports.split(",")]
    specs = [parse_spec(s) for s in a.specs]
    rng = random.Random(a.seed)
    conns = {}
    counts = {"reads": 0, "writes": 0, "errors": 0, "missing": 0, "wrong": 0}
    schemes = [s[1] for s in specs]
    version = 0
    out = open(a.out, "a", buffering=1)
    log = open(a.log, "a", buffering=1)

    def conn(p):
        if p not in conns:
            conns[p] = Conn(p, timeout=10.0)
        return conns[p]

    def call(p, *args):
        try:
            r = conn(p).do(*args)
        except (OSError, ConnectionError) as e:
            c = conns.pop(p, None)
            if c:
                c.close()
            r = RespError("connection: %s" % e)
        if isinstance(r, RespError):
            counts["errors"] += 1
            log.write("%.3f %d %s -> %s\n" % (time.time(), p, " ".join(str(x) for x in args[:2]), r))
        return r

    next_line = time.time()
    period = 1.0 / a.rate
    t_next = time.time()
    while not stop:
        now = time.time()
        if now >= next_line:
            out.write("%.3f,%d,%d,%d,%d,%d\n" % (now, counts["reads"], counts["writes"], counts["errors"],
                                                 counts["missing"], counts["wrong"]))
            next_line += 1.0
        # One dataset key read back.
        prefix, scheme, count, size = specs[rng.randrange(len(specs))]
        k = key_name(prefix, rng.randrange(count))
        p = rng.choice(ports)
        r = call(p, "GET", k)
        counts["reads"] += 1
        if r is None:
            counts["missing"] += 1
            log.write("%.3f %d GET %s -> missing\n" % (time.time(), p, k))
        elif isinstance(r, bytes) and r != value_of(k, size):
            counts["wrong"] += 1
            log.write("%.3f %d GET %s -> wrong value (%d bytes)\n" % (time.time(), p, k, len(r)))
        # One probe key written on a node and read back from another.
        version += 1
        pk = key_name("pr", rng.randrange(a.keys))
        val = ("%s:%d:" % (pk, version)).encode() * 4
        p1, p2 = rng.sample(ports, 2)
        if call(p1, "SET", pk, val, "SCHEME", schemes[version % len(schemes)]) == "OK":
            counts["writes"] += 1
            r = call(p2, "GET", pk)
            counts["reads"] += 1
            if r is None:
                counts["missing"] += 1
                log.write("%.3f %d GET %s after SET on %d -> missing\n" % (time.time(), p2, pk, p1))
            elif isinstance(r, bytes) and r != val:
                counts["wrong"] += 1
                log.write("%.3f %d GET %s after SET on %d -> %r\n" % (time.time(), p2, pk, p1, r[:40]))
        t_next += period
        d = t_next - time.time()
        if d > 0:
            time.sleep(d)
        else:
            t_next = time.time()
    out.write("%.3f,%d,%d,%d,%d,%d\n" % (time.time(), counts["reads"], counts["writes"], counts["errors"],
                                         counts["missing"], counts["wrong"]))
    return 0


# ---------------------------------------------------------------- report

PHASES = [("before", "before", "6 nodes, before any change"),
          ("grow", "grow 6 → 9", "add-node ×3, rebalance"),
          ("on9", "on 9", "9 nodes, after the grow"),
          ("shrink", "shrink 9 → 6", "remove-node ×3"),
          ("on6", "on 6", "6 nodes, after the shrink")]


def read_windows(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            for k in ("t_start", "t_end", "rps", "avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"):
                r[k] = float(r[k]) if r[k] not in ("", None) else None
            r["requests"] = int(r["requests"])
            r["done"] = int(r["done"] or 0)
            r["rc"] = int(r["rc"])
            rows.append(r)
    return rows


def overlap(a0, a1, b0, b1):
    return max(0.0, min(a1, b1) - max(a0, b0))


def phase_stats(rows, t0, t1):
    """Client ops/s over [t0, t1] (each window's requests spread evenly over
    its span; a window that stopped at an error counts the requests its
    last progress line implies), and per op the request-weighted mean of
    the windows' p50 and p99 (weighted by each window's requests inside
    the phase; failed windows have no figures) and the worst window's
    p99. errors is set by the caller."""
    dur = t1 - t0
    ops = 0.0
    by_op = {}
    for r in rows:
        ov = overlap(r["t_start"], r["t_end"], t0, t1)
        if ov <= 0:
            continue
        frac = ov / max(1e-9, r["t_end"] - r["t_start"])
        n = r["done"] * frac
        ops += n
        o = by_op.setdefault(r["op"], {"w": 0.0, "p50": 0.0, "p99": 0.0, "max_p99": 0.0, "n": 0.0})
        o["n"] += n
        if r["rc"] != 0 or r["p99_ms"] is None:
            continue
        o["w"] += n
        o["p50"] += n * r["p50_ms"]
        o["p99"] += n * r["p99_ms"]
        o["max_p99"] = max(o["max_p99"], r["p99_ms"])
    out = {"ops": ops / dur if dur > 0 else 0.0, "errors": 0, "ops_by": {}}
    for op, o in by_op.items():
        if o["w"] > 0:
            out["ops_by"][op] = {"ops": o["n"] / dur, "p50": o["p50"] / o["w"], "p99": o["p99"] / o["w"],
                                 "max_p99": o["max_p99"]}
    return out


def moved(polls, t0, t1):
    """Keys and bytes the migrations' sources moved in (t0, t1]: the sum of
    the increases of migration.keys_done and bytes_done between successive
    polls (the status sums the counters of the nodes it sees, so a node's
    counters vanish from the sum when it leaves: a decrease is skipped)."""
    keys = bts = 0
    prev = None
    for p in polls:
        if "poll_error" in p:
            continue
        if prev is not None and t0 < p["ts"] <= t1:
            keys += max(0, p["migration"]["keys_done"] - prev["migration"]["keys_done"])
            bts += max(0, p["migration"]["bytes_done"] - prev["migration"]["bytes_done"])
        prev = p
    return keys, bts


def fmt_ratio(x, base):
    if not base:
        return "–"
    return "%.2f×" % (x / base)


def cmd_report(a):
    d = a.dir
    meta = json.load(open(os.path.join(d, "meta.json")))
    ev = json.load(open(os.path.join(d, "events.json")))
    rows = read_windows(os.path.join(d, "windows.csv"))
    with open(os.path.join(d, "status.jsonl")) as f:
        polls = json_lines(f)
    probe = []
    if os.path.exists(os.path.join(d, "probe.csv")):
        with open(os.path.join(d, "probe.csv")) as f:
            for ln in f:
                t, rd, wr, er, mi, wg = ln.strip().split(",")
                probe.append((float(t), int(rd), int(wr), int(er), int(mi), int(wg)))

    def probe_counts(t0, t1):
        inside = [p for p in probe if t0 <= p[0] <= t1 + 1.0]
        before = [p for p in probe if p[0] < t0]
        if not inside:
            return None
        b = before[-1] if before else (t0, 0, 0, 0, 0, 0)
        e = inside[-1]
        return tuple(e[i] - b[i] for i in range(1, 6))

    spans = {}
    for key, _, _ in PHASES:
        if key in ev and "start" in ev[key] and "end" in ev[key]:
            spans[key] = (ev[key]["start"], ev[key]["end"])
    stats = {k: phase_stats(rows, *spans[k]) for k in spans}
    # A failed window counts in the phase it ended in, a phase reaching to
    # the next one's start (the gaps are the second between a move's end
    # and the next phase).
    order = [k for k, _, _ in PHASES if k in spans]
    label_of = dict((k, lab) for k, lab, _ in PHASES)
    failed = [r for r in rows if r["rc"] != 0]

    def phase_at(t):
        for i, k in enumerate(order):
            end = spans[order[i + 1]][0] if i + 1 < len(order) else spans[k][1] + 1e9
            if spans[k][0] <= t < end:
                return k
        return "warm-up" if order and t < spans[order[0]][0] else "after"
    for k in stats:
        stats[k]["errors"] = sum(1 for r in failed if phase_at(r["t_end"]) == k)
    base = stats.get("before")
    errstats = []
    if os.path.exists(os.path.join(d, "errorstats.jsonl")):
        with open(os.path.join(d, "errorstats.jsonl")) as f:
            errstats = [json.loads(ln) for ln in f if ln.strip()]

    def others_cpu(k):
        """Cores the machine's other processes used in the phase on
        average: its busy time less this run's process tree's."""
        a_ = [e for e in errstats if e["when"] == k + ":start" and e.get("hz")]
        b_ = [e for e in errstats if e["when"] == k + ":end" and e.get("hz")]
        if not a_ or not b_ or b_[0]["ts"] <= a_[0]["ts"]:
            return "–"
        a_, b_ = a_[0], b_[0]
        c = ((b_["busy"] - a_["busy"]) - (b_["ours"] - a_["ours"])) / a_["hz"] / (b_["ts"] - a_["ts"])
        return "%.2f" % max(0.0, c)

    def errstat_delta(k):
        """Error replies by code counted by the nodes between the phase's
        start and end snapshots (nodes that answered both)."""
        a_ = [e for e in errstats if e["when"] == k + ":start"]
        b_ = [e for e in errstats if e["when"] == k + ":end"]
        if not a_ or not b_:
            return None, []
        out, silent = {}, []
        for port, c1 in b_[0]["nodes"].items():
            c0 = a_[0]["nodes"].get(port)
            if c0 is None or c1 is None:
                if c0 is not None or c1 is not None:
                    silent.append(port)
                continue
            for code, n in c1.items():
                dn = n - c0.get(code, 0)
                if dn:
                    out[code] = out.get(code, 0) + dn
        return out, silent

    L = []
    w = L.append
    w("# Growing 6 → 9 and shrinking 9 → 6 online under load (issue 29)")
    w("")
    w("Made by `%s` on %s (UTC)." % (meta["command"], meta["date"]))
    w("")
    if meta.get("failure"):
        w("**The run did not complete: %s.** The figures below cover what ran; the logs are in %s." %
          (meta["failure"], meta.get("failure_logs", "the run's directory")))
        w("")
    w("## Setup")
    w("")
    w("- Machine: %s cores (`nproc`), %s, %s; load average at the start %s." %
      (meta["nproc"], meta["cpu"], meta["go"], meta["loadavg_start"]))
    if meta.get("others"):
        w("- Other processes on the machine during the run (/proc/stat's busy time less this run's "
          "processes'): %s." % meta["others"])
    if meta.get("run_seconds"):
        w("- The whole run, from the cluster's start to the final checks: %.1f minutes." % (meta["run_seconds"] / 60))
    w("- Cluster: `memgest dev --nodes 6 --spares 3 --base-port %s %s` (nodes 7–9 are spares until added)." %
      (meta["base_port"], meta["dev_args"]))
    w("- Data set, written before the load by scripts/bench-rebalance.py (values derived from the key "
      "names, read back bit-exact at the end):")
    w("")
    w("  | keys | value | scheme | logical MB |")
    w("  |---|---|---|---|")
    for s in meta["dataset"]:
        prefix, scheme, count, size = parse_spec(s)
        w("  | %d `%s:…` | %d B | `%s` | %.1f |" % (count, prefix, size, scheme, count * size / 1e6))
    w("")
    w("- Steady load for the whole experiment: three `redis-benchmark -c 8` loops in plain mode "
      "(keys spread over every slot; the node forwards what it does not coordinate), each aimed at a node "
      "that is never drained, each alternating a SET window and a GET window over its own %d keys "
      "(`-r %d`, written beforehand so GETs hit), with a fixed request count per window chosen in a warm-up "
      "so that a window lasts about %s s at the start:" % (meta["load_keys"], meta["load_keys"], meta["window_target"]))
    w("")
    w("  | loop | node | keys | value | scheme | requests per SET / GET window |")
    w("  |---|---|---|---|---|---|")
    for l in meta["loads"]:
        w("  | %s | 127.0.0.1:%s | `%s:…` | %s B | `%s` | %s / %s |" % (
            l["name"], l["port"], l["prefix"], l["size"], l["scheme"], l.get("n_set", "?"), l.get("n_get", "?")))
    w("")
    w("- A probe (scripts/bench-rebalance.py probe, ~%s iterations/s on nodes 1–6) reads a random data set "
      "key from a random node and compares it with its value, and writes a probe key with a random "
      "scheme on one node and reads it from another, counting every error, missing key and wrong value." %
      meta.get("probe_rate", "?"))
    w("- Grow: `memgest cluster add-node` nodes 7 and 8 with `--no-rebalance`, node 9 with `%s` (it starts "
      "the rebalance). Shrink: `memgest cluster remove-node` nodes 7, 8, 9, one command each (%s). A phase "
      "ends at the second of two consecutive status polls (every second) showing no rebalance, no "
      "importing shard, and (shrink) the three nodes `left`." % (meta["grow_flags"], meta.get("shrink_note", "")))
    w("")
    w("## Results")
    w("")
    w("| phase | duration s | MB moved | MB/s | keys moved | client ops/s | × before | GET p99 ms | × before | "
      "SET p99 ms | × before | errors (load / probe) | CPU of others |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key, label, _ in PHASES:
        if key not in stats:
            w("| %s | – | | | | | | | | | | | |" % label)
            continue
        t0, t1 = spans[key]
        s = stats[key]
        k, b = moved(polls, t0, t1)
        dur = t1 - t0
        pc = probe_counts(t0, t1)
        perr = "–" if pc is None else str(pc[2] + pc[3] + pc[4])
        g = s["ops_by"].get("GET", {})
        st = s["ops_by"].get("SET", {})
        bg = base["ops_by"].get("GET", {}) if base else {}
        bs = base["ops_by"].get("SET", {}) if base else {}
        w("| %s | %.1f | %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %d / %s | %s |" % (
            label, dur,
            "%.1f" % (b / 1e6) if b else "0",
            "%.1f" % (b / 1e6 / dur) if b else "–",
            str(k) if k else "0",
            s["ops"], fmt_ratio(s["ops"], base["ops"] if base else 0),
            "%.2f" % g["p99"] if g else "–", fmt_ratio(g.get("p99", 0), bg.get("p99", 0)),
            "%.2f" % st["p99"] if st else "–", fmt_ratio(st.get("p99", 0), bs.get("p99", 0)),
            s["errors"], perr, others_cpu(key)))
    w("")
    w("MB moved and keys moved are the increases of `memgest status`'s migration counters (`bytes_done`, "
      "`keys_done`: key plus value bytes of each key a source moved, i.e. logical bytes; the importer writes "
      "each key again with its whole redundancy, so the bytes written to the nodes are 1.5× (stripe, split) "
      "to 3× (rep) of it). The status sums the counters of the nodes it reaches, and a node that left is no "
      "longer reached, so the sum of the increases between polls is taken and a drop is skipped; progress "
      "that a node made in its last second before it left can be missing.")
    w("")
    w("Client ops/s: the requests of every window of the three loops, each window's spread evenly over its "
      "span, within the phase, divided by the phase's duration (a window that stopped at an error counts "
      "the requests its last progress line implies: its overall rate × its span). p99: each window's p99 from redis-benchmark, "
      "averaged over the phase's windows weighted by their requests in the phase (the worst window's p99 "
      "is in the per-window table below). Errors: load windows that ended in an error (redis-benchmark 7.0 "
      "stops at the first error reply and prints it: one error per failed window at least) / the probe's "
      "errors + missing keys + wrong values. CPU of others: the cores the machine's other processes used "
      "on average during the phase (/proc/stat's busy time less this run's processes'), of %s." % meta["nproc"])
    w("")
    # Goals
    w("## The issue's goals")
    w("")
    moves = [k for k in ("grow", "shrink") if k in stats]
    total_load_err = len(failed)
    total_probe = None
    if probe and "before" in spans:
        last = [k for k, _, _ in PHASES if k in spans][-1]
        pc = probe_counts(spans["before"][0], spans[last][1])
        total_probe = pc
    vr = meta.get("verify", {})
    err_ok = total_load_err == 0 and (total_probe is None or total_probe[2] + total_probe[3] + total_probe[4] == 0) \
        and vr.get("missing", 1) == 0 and vr.get("wrong", 1) == 0 and vr.get("errors", 1) == 0
    w("| goal | measured | met |")
    w("|---|---|---|")
    w("| 0 errors | %d failed load windows; probe: %s errors, %s missing, %s wrong of %s reads; final "
      "read-back: %s missing, %s wrong, %s errors of %s keys | %s |" % (
          total_load_err,
          *(("%d" % x) for x in (total_probe[2:5] if total_probe else (0, 0, 0))),
          total_probe[0] if total_probe else "–",
          vr.get("missing", "?"), vr.get("wrong", "?"), vr.get("errors", "?"), vr.get("checked", "?"),
          "yes" if err_ok else "**no**"))
    for k in moves:
        s = stats[k]
        label = dict((a_, b_) for a_, b_, _ in PHASES)[k]
        for op in ("GET", "SET"):
            if op in s["ops_by"] and base and op in base["ops_by"]:
                r = s["ops_by"][op]["p99"] / base["ops_by"][op]["p99"]
                w("| p99 ≤ 2× before during %s, %s | %.2f ms vs %.2f ms: %.2f× (worst window %.2f ms) | %s |" % (
                    label, op, s["ops_by"][op]["p99"], base["ops_by"][op]["p99"], r, s["ops_by"][op]["max_p99"],
                    "yes" if r <= 2 else "**no**"))
        if base:
            r = s["ops"] / base["ops"]
            w("| throughput ≥ 0.7× before during %s | %.0f vs %.0f ops/s: %.2f× | %s |" % (
                label, s["ops"], base["ops"], r, "yes" if r >= 0.7 else "**no**"))
    w("")
    # The steady phases on either side of a move: what the move costs
    # beyond running on 9 nodes (on a small machine, 9 processes and more
    # forwarding cost by themselves).
    around = {"grow": ("before", "on9"), "shrink": ("on9", "on6")}
    rows_ = []
    for k in moves:
        a_, b_ = around[k]
        if a_ not in stats or b_ not in stats:
            continue
        s = stats[k]
        ref_ops = (stats[a_]["ops"] + stats[b_]["ops"]) / 2
        cells = ["%.2f×" % (s["ops"] / ref_ops) if ref_ops else "–"]
        for op in ("GET", "SET"):
            ra = stats[a_]["ops_by"].get(op, {}).get("p99")
            rb = stats[b_]["ops_by"].get(op, {}).get("p99")
            mine = s["ops_by"].get(op, {}).get("p99")
            cells.append("%.2f×" % (mine / ((ra + rb) / 2)) if ra and rb and mine else "–")
        rows_.append("| %s | %s | %s | %s |" % (label_of[k], cells[0], cells[1], cells[2]))
    if rows_:
        w("The same ratios against the mean of the steady phases before and after each move (for the grow: "
          "before and on 9; for the shrink: on 9 and on 6), which separates the moves' cost from that of "
          "running 9 nodes and a changing background load:")
        w("")
        w("| phase | ops/s | GET p99 | SET p99 |")
        w("|---|---|---|---|")
        for r_ in rows_:
            w(r_)
        w("")
    oc = [others_cpu(k) for k in order]
    oc = [float(x) for x in oc if x != "–"]
    if oc and max(oc) >= 0.2:
        w("The machine was shared during the run: other processes used %.2f to %.2f of its %s cores on average "
          "per phase (CPU of others above), so the figures are noisy and part of the differences between "
          "phases is theirs." % (min(oc), max(oc), meta["nproc"]))
        w("")
    # Cluster state
    w("## Cluster state")
    w("")
    w("DBSIZE CLUSTER: %s." % "; ".join("%s %s" % (snap["when"], snap["dbsize"]) for snap in meta.get("snapshots", [])))
    w("")
    w("Keys and bytes per node from the status polls (`keys`: the keys a node coordinates; `bytes`: its "
      "records and pieces). The load's SETs rewrite their keys all along, which adds bytes by itself "
      "(compare with the end of the baseline, not with the loading):")
    w("")
    ports = sorted({int(n["addr"].rsplit(":", 1)[1]) for p in polls if "nodes" in p for n in p["nodes"]})

    def poll_at(t):
        c = [p for p in polls if "nodes" in p and p["ts"] <= t]
        return c[-1] if c else None
    w("| when | keys | MB per node (%s; – not a data node) | MB |" % ", ".join(str(x) for x in ports))
    w("|---|---|---|---|")
    bounds = []
    if polls:
        first = [p for p in polls if "nodes" in p]
        if first:
            bounds.append(("the load starts", first[0]["ts"]))
    for k, lab in (("before", "the baseline ends"), ("grow", "the grow ends"), ("shrink", "the shrink ends"),
                   (order[-1] if order else "", "the load stops")):
        if k in spans:
            bounds.append((lab, spans[k][1]))
    for lab, t in bounds:
        p = poll_at(t)
        if p is None:
            continue
        by = {int(n["addr"].rsplit(":", 1)[1]): n for n in p["nodes"]}
        data = [n for n in p["nodes"] if n["state"] not in ("left", "spare")]
        w("| %s | %d | %s | %.0f |" % (lab, sum(n["keys"] for n in data),
                                      " · ".join("–" if x not in by or by[x]["state"] in ("left", "spare")
                                                 else "%.0f" % (by[x]["bytes"] / 1e6) for x in ports),
                                      sum(n["bytes"] for n in data) / 1e6))
    w("")
    w("- DBSIZE CLUSTER at the end %s the start (%s → %s; the load's SETs and the probe's stay within "
      "key ranges written before the start)." % (
          "equals" if meta.get("dbsize_start") == meta.get("dbsize_end") else "**differs from**",
          meta.get("dbsize_start"), meta.get("dbsize_end")))
    w("- Read-back of every data set key at the end: %s keys, %s missing, %s wrong, %s errors (%s s)." % (
        vr.get("checked", "?"), vr.get("missing", "?"), vr.get("wrong", "?"), vr.get("errors", "?"),
        vr.get("seconds", "?")))
    if vr.get("examples"):
        w("  First ones: %s." % "; ".join(vr["examples"][:5]))
    w("- `redis-cli --cluster check`: %s." % meta.get("cluster_check", "?"))
    w("- Node log lines with a warning or an error (the dev process's output): %s." % meta.get("log_warnings", "?"))
    if meta.get("log_examples"):
        w("")
        w("  ```")
        for ln in meta["log_examples"]:
            w("  " + ln)
        w("  ```")
    if meta.get("log_at_stop"):
        w("- Logged as the nodes stopped (after the run, dev's SIGTERM): %s" % "; ".join(
            "`%s`" % ln for ln in meta["log_at_stop"]))
    if meta.get("notes"):
        w("")
        for n in meta["notes"]:
            w("- " + n)
    w("")
    # Error replies
    w("## Errors")
    w("")
    if failed:
        w("Load windows that ended in an error (seconds from the start of the baseline; redis-benchmark stops "
          "at its first error reply, so each line is one error reply at least):")
        w("")
        w("| s | phase | loop | op | node | error |")
        w("|---|---|---|---|---|---|")
        t_base = spans[order[0]][0] if order else 0
        for r in failed[:40]:
            w("| %.1f | %s | %s | %s | %s | %s |" % (r["t_end"] - t_base, label_of.get(phase_at(r["t_end"]), phase_at(r["t_end"])),
                                                   r["proc"], r["op"], r["port"], (r["error"] or "exit %d, no figures" % r["rc"]).strip()))
        if len(failed) > 40:
            w("| … | %d more in the windows CSV | | | | |" % (len(failed) - 40))
        w("")
    else:
        w("No load window ended in an error.")
        w("")
    if errstats:
        w("Error replies the nodes counted (`INFO errorstats`, summed over the nodes that answered at the "
          "phase's start and end; a command forwarded to its coordinator counts on both nodes, so a "
          "-MOVED relayed to a client counts twice):")
        w("")
        w("| phase | error replies by code |")
        w("|---|---|")
        for k in order:
            dlt, silent = errstat_delta(k)
            if dlt is None:
                continue
            txt = ", ".join("%s %d" % (c, n) for c, n in sorted(dlt.items())) or "none"
            if silent:
                txt += " (not counted: %s, which answered at one end only)" % ", ".join(silent)
            w("| %s | %s |" % (label_of[k], txt))
        w("")
    # Timeline of the moves
    w("## Timeline")
    w("")
    w("Seconds from the start of the baseline.")
    w("")
    t_ref = spans["before"][0] if "before" in spans else 0
    for key, label, what in PHASES:
        if key in spans:
            w("- %s: %.1f → %.1f s (%s)" % (label, spans[key][0] - t_ref, spans[key][1] - t_ref, what))
    for e in ev.get("marks", []):
        w("- %.1f s: %s" % (e["ts"] - t_ref, e["what"]))
    w("")
    # Per-loop breakdown
    w("## Per loop and phase")
    w("")
    w("ops/s and request-weighted mean p99 (ms) of each loop's windows in the phase; the worst window's p99 "
      "in parentheses.")
    w("")
    names = [l["name"] for l in meta["loads"]]
    w("| phase | " + " | ".join("%s %s" % (n, op) for n in names for op in ("SET", "GET")) + " |")
    w("|---|" + "---|" * (2 * len(names)))
    for key, label, _ in PHASES:
        if key not in spans:
            continue
        cells = []
        for n in names:
            for op in ("SET", "GET"):
                s = phase_stats([r for r in rows if r["proc"] == n and r["op"] == op], *spans[key])
                o = s["ops_by"].get(op)
                cells.append("%.0f, %.2f (%.2f)" % (o["ops"], o["p99"], o["max_p99"]) if o else "–")
        w("| %s | %s |" % (label, " | ".join(cells)))
    w("")
    w("Raw windows: [%s](%s) (one line per redis-benchmark run: loop, node, scheme, value size, op, start "
      "and end in Unix seconds, requests asked, requests done (estimated for a failed window), exit code, "
      "redis-benchmark's summary figures (rps, avg, min, p50, p95, p99, max in ms), the error it printed); "
      "status polls: [%s](%s)." % (meta["windows_csv"], meta["windows_csv"], meta["status_csv"], meta["status_csv"]))
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")
    return 0


def cmd_status_csv(a):
    """The status polls as CSV: time from the baseline, epoch, rebalance,
    importing shards, migration counters, and each node's state/slots/keys."""
    with open(a.status) as f:
        polls = json_lines(f)
    addrs = []
    for p in polls:
        for n in p.get("nodes", []):
            if n["addr"] not in addrs:
                addrs.append(n["addr"])
    addrs.sort(key=lambda x: int(x.rsplit(":", 1)[1]))
    with open(a.out, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["t", "epoch", "rebalance", "importing", "mig_keys_done", "mig_keys_total", "mig_bytes_done"] +
                    ["%s_%s" % (x.rsplit(":", 1)[1], c) for x in addrs for c in ("state", "slots", "keys", "mb")])
        for p in polls:
            if "poll_error" in p:
                wr.writerow(["%.1f" % (p["ts"] - a.t0), "poll error: " + p["poll_error"]])
                continue
            by = {n["addr"]: n for n in p["nodes"]}
            row = ["%.1f" % (p["ts"] - a.t0), p["epoch"], "running" if p["rebalance"] else "", p["importing"],
                   p["migration"]["keys_done"], p["migration"]["keys_total"], p["migration"]["bytes_done"]]
            for x in addrs:
                n = by.get(x)
                row += [n["state"], n["slots"], n["keys"], "%.1f" % (n["bytes"] / 1e6)] if n else ["", "", "", ""]
            wr.writerow(row)
    return 0


def cpu_jiffies(root):
    """The machine's busy jiffies (user, nice, system, irq, softirq) and
    those of root's process tree (each process's own and its reaped
    children's)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6]
    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        # rest[0] is the state (field 3): ppid is field 4, utime..cstime 14-17.
        procs[int(pid)] = (int(rest[1]), sum(int(x) for x in rest[11:15]), rest[0], st[st.index("(") + 1:st.rindex(")")])
    ours = 0
    running = []
    for pid, (ppid, t, state, comm) in procs.items():
        p, seen = pid, 0
        while p and p in procs and seen < 64:
            if p == root:
                break
            p, seen = procs[p][0], seen + 1
        else:
            if state == "R" and ppid != 2 and pid != os.getpid():
                running.append(comm)
    for pid, (ppid, t, _, _) in procs.items():
        p, seen = pid, 0
        while p and p in procs and seen < 64:
            if p == root:
                ours += t
                break
            p, seen = procs[p][0], seen + 1
    return busy, ours, sorted(set(running))


def cmd_errorstats(a):
    """Appends one line to --out: every node's INFO errorstats counts by
    error code, null for a node that does not answer, and the CPU
    jiffies of the machine and of --root's process tree."""
    busy, ours, running = cpu_jiffies(a.root) if a.root else (0, 0, [])
    nodes = {}
    for i in range(a.count):
        port = a.base + i
        try:
            c = Conn(port, timeout=3.0)
            r = c.do("INFO", "errorstats")
            c.close()
        except (OSError, ConnectionError):
            nodes[str(port)] = None
            continue
        if isinstance(r, RespError) or not isinstance(r, bytes):
            nodes[str(port)] = None
            continue
        counts = {}
        for ln in r.decode(errors="replace").splitlines():
            if ln.startswith("errorstat_") and ":count=" in ln:
                code, rest = ln[len("errorstat_"):].split(":count=", 1)
                counts[code] = int(rest.split(",")[0])
        nodes[str(port)] = counts
    with open(a.out, "a") as f:
        f.write(json.dumps({"when": a.when, "ts": round(time.time(), 3), "nodes": nodes,
                            "busy": busy, "ours": ours, "hz": os.sysconf("SC_CLK_TCK"),
                            "running": running}) + "\n")
    return 0


def cmd_snapshot(a):
    """One line of the report's cluster-state table: bytes per node from
    the status, in the order of the client ports."""
    st = fetch_status(a.http)
    by = {n["client_addr"]: n for n in st["nodes"]}
    base = a.base
    out = []
    for i in range(a.count):
        n = by.get("127.0.0.1:%d" % (base + i))
        out.append("–" if n is None or n["state"] in ("left", "spare") else "%.0f" % (n["bytes"] / 1e6))
    print(json.dumps({"bytes": out, "states": [by.get("127.0.0.1:%d" % (base + i), {}).get("state", "")
                                               for i in range(a.count)]}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("load")
    p.add_argument("specs", nargs="+")
    p.add_argument("--ports", required=True)
    p.add_argument("--batch", type=int, default=128)
    p = sub.add_parser("verify")
    p.add_argument("specs", nargs="+")
    p.add_argument("--ports", required=True)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True)
    p = sub.add_parser("poll")
    p.add_argument("--http", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--interval", type=float, default=1.0)
    p = sub.add_parser("wait")
    p.add_argument("--status", required=True)
    p.add_argument("--since", type=float, required=True)
    p.add_argument("--left", default="")
    p.add_argument("--up", default="")
    p.add_argument("--timeout", type=float, default=300)
    p = sub.add_parser("probe")
    p.add_argument("specs", nargs="+")
    p.add_argument("--ports", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--rate", type=float, default=50)
    p.add_argument("--keys", type=int, default=2000)
    p.add_argument("--seed", type=int, default=2)
    p = sub.add_parser("report")
    p.add_argument("--dir", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("status-csv")
    p.add_argument("--status", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--t0", type=float, default=0)
    p = sub.add_parser("errorstats")
    p.add_argument("--base", type=int, required=True)
    p.add_argument("--count", type=int, default=9)
    p.add_argument("--when", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--root", type=int, default=0)
    p = sub.add_parser("snapshot")
    p.add_argument("--http", required=True)
    p.add_argument("--base", type=int, required=True)
    p.add_argument("--count", type=int, default=9)
    a = ap.parse_args()
    return {"load": cmd_load, "verify": cmd_verify, "poll": cmd_poll, "wait": cmd_wait, "probe": cmd_probe,
            "report": cmd_report, "status-csv": cmd_status_csv, "snapshot": cmd_snapshot,
            "errorstats": cmd_errorstats}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
