"""bench-report.py OUTDIR: writes OUTDIR/README.md and its PNG charts from
what scripts/bench.sh measured (bench-results.csv, bench-memory.csv,
bench-meta.txt in OUTDIR). Every figure is the median over the run's
repeats; min–max ranges show the noise. Needs matplotlib (bench.sh runs it
from the venv plot_setup makes)."""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REDIS = ["redis", "redis+2replicas", "redis cluster"]
MEMGEST = ["memgest 1 node none", "memgest none", "memgest rep:3", "memgest split:4+2", "memgest stripe:4+2"]
TESTS = ["SET", "GET", "INCR", "MSET"]
HEADLINE_SIZE = "100"


class Runs:
    """Measurements grouped by (tool, target, test, param, pipeline)."""

    def __init__(self, path):
        self.rows = defaultdict(list)
        self.errors = defaultdict(int)
        with open(path) as f:
            for r in csv.DictReader(f):
                if not r["ops_per_sec"]:
                    continue
                key = (r["tool"], r["target"], r["test"], r["param"], r["pipeline"])
                self.rows[key].append((float(r["ops_per_sec"]), float(r["p50_ms"] or 0), float(r["p99_ms"] or 0)))
                self.errors[key] += int(r["errors"] or 0)
        self.targets = [t for t in REDIS + MEMGEST if any(k[1] == t for k in self.rows)]

    def get(self, tool, target, test, param, pipeline="-"):
        return self.rows.get((tool, target, test, param, pipeline), [])

    def median(self, *key, field=0):
        vals = [v[field] for v in self.get(*key)]
        return statistics.median(vals) if vals else None

    def spread(self, *key):
        vals = [v[0] for v in self.get(*key)]
        return (min(vals), max(vals)) if vals else None


def kilo(v):
    if v is None:
        return "–"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "–"


def size_label(s):
    return {"32": "32 B", "100": "100 B", "1024": "1 KiB", "16384": "16 KiB", "-": "–"}.get(s, s)


def cell(runs, *key):
    med, sp = runs.median(*key), runs.spread(*key)
    if med is None:
        return "–"
    if len(runs.get(*key)) < 2:
        return kilo(med)
    return f"{kilo(med)} ({kilo(sp[0])}–{kilo(sp[1])})"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def sizes_of(runs):
    found = {k[3] for k in runs.rows if k[0] == "rb" and k[2] == "SET"}
    return sorted(found, key=int)


def targets_section(runs, ycsb_workloads):
    """The issue's targets: ratio of medians, met or not."""
    lines = []

    def add(name, num, den, goal):
        r = num / den if num and den else None
        verdict = "–" if r is None else ("met" if r >= goal else f"missed by {100 * (goal - r) / goal:.0f}%")
        lines.append([name, "–" if r is None else f"{r:.2f}", f"≥ {goal}", verdict])

    rb = lambda t, test, p: runs.median("rb", t, test, HEADLINE_SIZE, p)  # noqa: E731
    for test in ("SET", "GET"):
        for p in ("1", "16"):
            add(f"`none` {test} -P{p}, 1 memgest node / redis", rb("memgest 1 node none", test, p), rb("redis", test, p), 1.0)
    for test in ("SET", "GET"):
        for p in ("1", "16"):
            add(f"`none` {test} -P{p}, 6 nodes / redis", rb("memgest none", test, p), rb("redis", test, p), 1.0)
    for p in ("1", "16"):
        add(f"`rep:3` SET -P{p} / redis+2replicas", rb("memgest rep:3", "SET", p), rb("redis+2replicas", "SET", p), 0.8)
    for p in ("1", "16"):
        add(f"`stripe:4+2` SET -P{p} / `rep:3`", rb("memgest stripe:4+2", "SET", p), rb("memgest rep:3", "SET", p), 0.7)
    for dist in ("zipfian", "uniform"):
        for w in ycsb_workloads:
            add(
                f"YCSB {w} {dist}, `rep:3` / redis cluster",
                runs.median("ycsb", "memgest rep:3", w, dist),
                runs.median("ycsb", "redis cluster", w, dist),
                0.9,
            )
    return table(["target", "ratio", "goal", ""], lines)


def rb_tables(runs, sizes):
    out = []
    for test in TESTS:
        params = ["-"] if test == "INCR" else sizes
        header = ["target"] + [f"{size_label(s)} -P{p}" for p in ("1", "16") for s in params]
        rows = []
        for t in runs.targets:
            if not any(runs.get("rb", t, test, s, p) for s in params for p in ("1", "16")):
                continue
            rows.append([t] + [cell(runs, "rb", t, test, s, p) for p in ("1", "16") for s in params])
        out.append(f"#### {test}\n\n" + table(header, rows))
    return "\n".join(out)


def latency_tables(runs):
    out = []
    for p in ("1", "16"):
        header = ["target"] + [f"{test} p50 / p99" for test in TESTS]
        rows = []
        for t in runs.targets:
            cells = []
            for test in TESTS:
                s = "-" if test == "INCR" else HEADLINE_SIZE
                p50 = runs.median("rb", t, test, s, p, field=1)
                p99 = runs.median("rb", t, test, s, p, field=2)
                cells.append("–" if p50 is None else f"{p50:.2f} / {p99:.2f}")
            if any(c != "–" for c in cells):
                rows.append([t] + cells)
        out.append(f"-P{p}, milliseconds:\n\n" + table(header, rows))
    return "\n".join(out)


def ratio_tables(runs, sizes):
    out = []
    for ref in REDIS:
        if ref not in runs.targets:
            continue
        for test in ("SET", "GET"):
            header = ["memgest / " + ref + f" {test}"] + [f"{size_label(s)} -P{p}" for p in ("1", "16") for s in sizes]
            rows = []
            for t in MEMGEST:
                if t not in runs.targets:
                    continue
                rows.append(
                    [t]
                    + [
                        ratio(runs.median("rb", t, test, s, p), runs.median("rb", ref, test, s, p))
                        for p in ("1", "16")
                        for s in sizes
                    ]
                )
            out.append(table(header, rows))
    return "\n".join(out)


def ycsb_tables(runs, workloads, tool="ycsb"):
    dists = ("zipfian", "uniform")
    header = ["target"] + [f"{w} {d[:4]}." for d in dists for w in workloads]
    thr, lat, rat, errs = [], [], [], []
    for t in runs.targets:
        if not runs.get(tool, t, workloads[0], dists[0]):
            continue
        thr.append([t] + [kilo(runs.median(tool, t, w, d)) for d in dists for w in workloads])
        lat.append(
            [t]
            + [
                f"{runs.median(tool, t, w, d, field=1):.2f} / {runs.median(tool, t, w, d, field=2):.2f}"
                if runs.get(tool, t, w, d)
                else "–"
                for d in dists
                for w in workloads
            ]
        )
        if t.startswith("memgest"):
            for ref in ("redis cluster", "redis"):
                rat.append(
                    [f"{t} / {ref}"]
                    + [
                        ratio(runs.median(tool, t, w, d), runs.median(tool, ref, w, d))
                        for d in dists
                        for w in workloads
                    ]
                )
        e = sum(runs.errors[(tool, t, w, d, "-")] for d in dists for w in workloads)
        errs.append(f"{t}: {e}")
    return (
        "Operations per second:\n\n"
        + table(header, thr)
        + "\nLatency of all operations, p50 / p99 in milliseconds:\n\n"
        + table(header, lat)
        + "\nRatios:\n\n"
        + table(["ratio"] + header[1:], rat)
        + "\nOperations that returned an error (go-ycsb's `_ERROR` counts, all workloads): "
        + "; ".join(errs)
        + ".\n"
    )


def memory_table(path):
    rows, per, gained = [], {}, {}
    if not path.exists():
        return "", per
    with open(path) as f:
        for r in csv.DictReader(f):
            gained[r["target"]] = int(r["rss_after"]) - int(r["rss_before"])
            per[r["target"]] = gained[r["target"]] / int(r["records"])
    for t, b in per.items():
        rows.append(
            [
                t,
                f"{gained[t] / 2**20:.0f} MiB",
                f"{b:.0f}",
                ratio(b, per.get("redis")),
                ratio(b, per.get("redis+2replicas")),
                ratio(b, per.get("memgest rep:3")),
            ]
        )
    return table(["target", "RSS gained", "B/record", "× redis", "× redis+2replicas", "× memgest rep:3"], rows), per


def bar_chart(path, title, groups, series, value, spread=None, ylabel="requests/s"):
    """Grouped bars: one group per item of groups, one bar per series."""
    fig, ax = plt.subplots(figsize=(11, 4.2))
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ys = [value(s, g) or 0 for g in groups]
        err = None
        if spread:
            lo, hi = [], []
            for g, y in zip(groups, ys):
                sp = spread(s, g)
                lo.append(y - sp[0] if sp else 0)
                hi.append(sp[1] - y if sp else 0)
            err = [lo, hi]
        ax.bar(xs, ys, width, label=s, yerr=err, capsize=2)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def charts(out, runs, sizes, workloads, mem):
    made = []
    for p in ("1", "16"):
        name = f"bench-rb-p{p}.png"
        groups = [f"{t} {size_label(HEADLINE_SIZE)}" if t != "INCR" else t for t in TESTS]

        def key(g):
            test = g.split()[0]
            return test, "-" if test == "INCR" else HEADLINE_SIZE

        bar_chart(
            out / name,
            f"redis-benchmark -P {p}, {size_label(HEADLINE_SIZE)} values (median; bars: min–max)",
            groups,
            runs.targets,
            lambda t, g: runs.median("rb", t, *key(g), p),
            lambda t, g: runs.spread("rb", t, *key(g), p),
        )
        made.append(name)
    bar_chart(
        out / "bench-rb-sizes.png",
        "redis-benchmark SET -P 16 by value size (median)",
        [size_label(s) for s in sizes],
        runs.targets,
        lambda t, g: runs.median("rb", t, "SET", sizes[[size_label(s) for s in sizes].index(g)], "16"),
    )
    made.append("bench-rb-sizes.png")
    ycsb_targets = [t for t in runs.targets if runs.get("ycsb", t, workloads[0], "zipfian")]
    groups = [f"{w} {d}" for d in ("zipfian", "uniform") for w in workloads]
    bar_chart(
        out / "bench-ycsb.png",
        "go-ycsb workloads, 16 threads (operations/s)",
        groups,
        ycsb_targets,
        lambda t, g: runs.median("ycsb", t, *g.split()),
        ylabel="operations/s",
    )
    made.append("bench-ycsb.png")
    if mem:
        fig, ax = plt.subplots(figsize=(8, 3.5))
        ax.bar(list(mem), list(mem.values()), color="tab:purple")
        ax.set_ylabel("bytes of RSS per record")
        ax.set_title("Memory per YCSB record (RSS gained by the load)")
        plt.setp(ax.get_xticklabels(), rotation=20, ha="right", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(out / "bench-memory.png", dpi=90)
        plt.close(fig)
        made.append("bench-memory.png")
    return made


def runs_of(runs, tool):
    """Whether any row was measured with tool."""
    return any(k[0] == tool for k in runs.rows)


def main():
    out = Path(sys.argv[1])
    meta = dict(line.rstrip("\n").split("=", 1) for line in open(out / "bench-meta.txt") if "=" in line)
    runs = Runs(out / "bench-results.csv")
    sizes = sizes_of(runs)
    workloads = sorted({k[2] for k in runs.rows if k[0] == "ycsb" and k[2] != "load"})
    records = int(meta.get("records", "0"))
    mem_md, mem = memory_table(out / "bench-memory.csv")
    charts(out, runs, sizes, workloads, mem)
    global HEADLINE_SIZE
    HEADLINE_SIZE = meta.get("headline_size", HEADLINE_SIZE)
    doc = f"""# memgest vs Redis: the benchmark report

Generated by `make bench` (scripts/bench.sh, scripts/bench-report.py) on {meta['date']} in
{int(meta['seconds']) // 60} min {int(meta['seconds']) % 60} s. Raw figures: [bench-results.csv](bench-results.csv),
[bench-memory.csv](bench-memory.csv). What the profiles say about the gaps, and what was
tuned: [analysis.md](analysis.md).

- Machine: {meta['machine']}; {meta['kernel']}. Everything — load generators, Redis, memgest —
  shares these cores, so a target with more processes does not get more CPU.
- Versions: memgest {meta['memgest']} ({meta['go']}), Redis {meta['redis']} (Debian's
  redis-server), {meta['ycsb']}.
- Targets: `redis` (one redis-server), `redis+2replicas` (two asynchronous replicas),
  `redis cluster` (3 masters, no replicas); `memgest 1 node none` (one `memgest server`, the
  like-for-like comparison with one redis-server); `memgest <scheme>` (a fresh 6-node `memgest dev`
  cluster with the scheme as the default). Redis and memgest keep nothing on disk.
- redis-benchmark: `-c {meta['clients']} -r {meta['keyspace']}`; each run is sized to last at
  least {meta['min_seconds']} s (aiming at {meta['run_seconds']} s; a slow cell's first try runs longer), because
  in cluster mode redis-benchmark sees a run end on a 250 ms timer, so shorter runs
  understate fast targets. Clusters are driven with `--cluster`.
  SET and GET at {size_label(HEADLINE_SIZE)} run {meta['repeats']} times: those cells show the
  median with (min–max); the other cells are one run each. MSET counts commands of 10 keys.
- YCSB: go-ycsb's redis binding, {records} records of 10 fields × 100 B, once with the `string`
  data type (one ~1.1 KB JSON value per key, read with GET, updated by GET and SET) and once with
  `hash` (a hash of 10 fields per key, read with HMGET, updated with HSET of one field; each
  data type on a freshly started target), {meta['ops']} operations per workload,
  {meta['threads']} threads, one run each; workload D's Zipfian row uses its own `latest`
  distribution. Workload E needs SCAN, which go-ycsb's redis binding does not implement.
- Memory: the RSS the target's processes gained while the YCSB records were loaded.

## Targets

Ratios of medians, {size_label(HEADLINE_SIZE)} values for redis-benchmark.

{targets_section(runs, workloads)}
## redis-benchmark

![redis-benchmark -P 1](bench-rb-p1.png)
![redis-benchmark -P 16](bench-rb-p16.png)
![SET by value size](bench-rb-sizes.png)

### Requests per second

{rb_tables(runs, sizes)}
### Latency at {size_label(HEADLINE_SIZE)} (INCR has no value)

{latency_tables(runs)}
### Ratios of memgest to each Redis configuration

{ratio_tables(runs, sizes)}
## YCSB

![YCSB](bench-ycsb.png)

{ycsb_tables(runs, workloads) if workloads else 'not run'}
## YCSB, hash data type

{ycsb_tables(runs, workloads, "ycsb-hash") if runs_of(runs, "ycsb-hash") else 'not run'}
## Memory per object

![memory](bench-memory.png)

{mem_md}
Records here are ~1.1 KB values, and {records} of them are few: a target's fixed costs
weigh in (each memgest node keeps at least 32 MiB of Go heap headroom, six nodes ~190 MiB;
[analysis.md](analysis.md)). Per-object costs at scale, with MemEC's small objects up to
10 M, are in [memory.md](memory.md) (`make bench-memory`).
"""
    (out / "README.md").write_text(doc)
    print(doc)


if __name__ == "__main__":
    main()
