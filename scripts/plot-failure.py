#!/usr/bin/env python3
"""Plot the failure benchmark (make bench-failure).

Usage: plot-failure.py SERIES_CSV EVENTS_CSV OUT_PNG

SERIES_CSV is the per-second series TestFailureBenchmarkReport writes
(docs/benchmarks/failure.csv), EVENTS_CSV its timeline events
(failure-events.csv). For each scheme, one column of two panels:
throughput (GET and SET operations per second, failed attempts per second;
on the right axis the probe's operations on other nodes' keys) and p99 latency (log scale), with vertical lines at the kill, the failure
being marked, the killed node's shards served again and the rebuild's end.
"""

import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

# Events drawn as vertical lines: name in the CSV -> (label, colour, style).
EVENTS = {
    "kill": ("kill -9", "red", "-"),
    "failed": ("marked failed", "orange", "--"),
    "recovered": ("served again", "green", "--"),
    "rebuild start": ("rebuild start", "purple", ":"),
    "rebuild done": ("rebuild done", "blue", "-."),
}


def number(text):
    """A CSV cell as a float; None for the report's "—" (no operation)."""
    try:
        return float(text)
    except ValueError:
        return None


def read_series(path):
    """Rows of the per-second CSV grouped by scheme, in file order."""
    series = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            series[row["scheme"]].append(row)
    return series


def read_events(path):
    """Timeline events grouped by scheme: a list of (name, seconds)."""
    events = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            events[row["scheme"]].append((row["event"], float(row["t_s"])))
    return events


def column(rows, name):
    """One CSV column as numbers, None where the cell is empty."""
    return [number(r[name]) for r in rows]


def draw_events(ax, events, label):
    """Vertical lines at the events; labelled once, for the legend."""
    for name, at in events:
        text, colour, style = EVENTS.get(name, (name, "grey", ":"))
        ax.axvline(at, color=colour, linestyle=style, linewidth=1, label=text if label else None)


def plot_throughput(ax, scheme, rows, events):
    """GET/s, SET/s and failed attempts/s over time."""
    t = [int(r["t_s"]) + 0.5 for r in rows]  # a second's ops, drawn mid-second
    ax.plot(t, column(rows, "get_ops"), label="GET/s", color="tab:blue")
    ax.plot(t, column(rows, "set_ops"), label="SET/s", color="tab:orange")
    ax.plot(t, column(rows, "errors"), label="errors/s", color="tab:red", linewidth=0.8)
    draw_events(ax, events, label=True)
    ax.set_title(f"{scheme}: throughput")
    ax.set_ylabel("operations per second")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    probe = ax.twinx()  # the probe runs ~100 times fewer operations
    probe.plot(t, column(rows, "probe_ok"), label="probe done/s (other nodes' keys)", color="grey", linewidth=0.8)
    probe.plot(t, column(rows, "probe_errors"), label="probe failed/s", color="grey", linestyle="--", linewidth=0.8)
    probe.set_ylabel("probe operations per second", color="grey")
    probe.set_ylim(bottom=0)
    lines, labels = ax.get_legend_handles_labels()
    more, more_labels = probe.get_legend_handles_labels()
    ax.legend(lines + more, labels + more_labels, fontsize=7, loc="lower left")


def plot_latency(ax, scheme, rows, events):
    """GET and SET p99 (p50 dotted) in ms, log scale."""
    t = [int(r["t_s"]) + 0.5 for r in rows]
    ax.plot(t, column(rows, "get_p99_ms"), label="GET p99", color="tab:blue")
    ax.plot(t, column(rows, "set_p99_ms"), label="SET p99", color="tab:orange")
    ax.plot(t, column(rows, "get_p50_ms"), label="GET p50", color="tab:blue", linestyle=":", linewidth=0.8)
    ax.plot(t, column(rows, "set_p50_ms"), label="SET p50", color="tab:orange", linestyle=":", linewidth=0.8)
    draw_events(ax, events, label=False)
    ax.set_title(f"{scheme}: latency")
    ax.set_ylabel("ms (log scale)")
    ax.set_xlabel("seconds since the workload started")
    ax.set_yscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left")


def main(argv):
    """Read the CSVs and write the PNG."""
    if len(argv) != 4:
        sys.exit(__doc__)
    series, events = read_series(argv[1]), read_events(argv[2])
    schemes = list(series)
    if not schemes:
        sys.exit(f"{argv[1]}: no rows")
    fig, axes = plt.subplots(2, len(schemes), figsize=(6.5 * len(schemes), 8), squeeze=False)
    for i, scheme in enumerate(schemes):
        plot_throughput(axes[0][i], scheme, series[scheme], events[scheme])
        plot_latency(axes[1][i], scheme, series[scheme], events[scheme])
    fig.suptitle("memgest: kill -9 of one node of 6 (+1 spare) under a steady 50/50 GET/SET load")
    fig.tight_layout()
    fig.savefig(argv[3], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
