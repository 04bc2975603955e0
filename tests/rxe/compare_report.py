#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarises compare.sh runs: per size, the plugin's bandwidth and
ping-pong p50 as ratios to NCCL's IB transport measured in the same run, and
to perftest's limit, as medians over the runs (with each run's value)."""
import json
import os
import re
import statistics
import sys


def perftest(path):
    """The first result row of a perftest client output, by column name."""
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    head = None
    for line in lines:
        if line.strip().startswith("#bytes"):
            # names hold spaces ("BW peak[MB/sec]") and some are one space
            # apart ("#bytes #iterations"): a name ends with ']' or is '#...'
            head, name = [], ""
            for tok in line.split():
                name = f"{name} {tok}".strip()
                if tok.endswith("]") or tok.startswith("#"):
                    head.append(name)
                    name = ""
        elif head and re.match(r"^\s*\d+\s+\d+", line):
            return dict(zip(head, line.split()))
    return None


def fmt_size(n):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def med(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    each = "/".join(f"{v:.2f}" for v in values)
    return f"{statistics.median(values):.2f} ({each})"


def shape(dirs):
    """NCCL's shape (shape.json of each run): per direction, size and
    channel count, both transports' GB/s (medians over the runs) and the
    same-run ratio (median, with each run's)."""
    cells = {}
    for d in dirs:
        try:
            rows = json.load(open(os.path.join(d, "shape.json")))["nccl_shape"]
        except (OSError, ValueError, KeyError):
            continue
        for r in rows:
            key = (r["direction"] != "one-way", r["size"], r["channels"])
            c = cells.setdefault(key, {"ours": [], "nccl": [], "ratio": []})
            c["ours"].append(r.get("ours_gbps"))
            c["nccl"].append(r.get("compare_gbps"))
            c["ratio"].append(r.get("ratio"))
    if not cells:
        return
    print()
    print("| direction | size | channels | ours GB/s | NCCL IB GB/s | ours / NCCL IB (each run) |")
    print("|---|---|---|---|---|---|")
    for key in sorted(cells):
        c = cells[key]
        gb = [v for v in c["ours"] if v is not None], [v for v in c["nccl"] if v is not None]
        mid = [f"{statistics.median(v):.3f}" if v else "-" for v in gb]
        print(f"| {'both-ways' if key[0] else 'one-way'} | {fmt_size(key[1])} | {key[2]} | "
              f"{mid[0]} | {mid[1]} | {med(c['ratio'])} |")
    print("# NCCL's shape: a connection per channel, 8 in flight on each; GB/s received "
          "(both ways summed), medians over the runs")


def main(dirs):
    cells = {}  # (mode, size) -> lists
    clocks = set()
    for d in dirs:
        try:
            clocks.add(open(os.path.join(d, "clocksource")).read().strip())
        except OSError:
            pass
        try:
            rows = json.load(open(os.path.join(d, "bench.json")))["rows"]
        except (OSError, ValueError, KeyError):
            if not os.path.exists(os.path.join(d, "shape.json")):
                print(f"# {d}: no bench.json (see its bench.txt and console.log)")
            continue
        limits = {}
        for name in os.listdir(d):
            m = re.match(r"perf-write_bw-(\d+)\.txt$", name)
            row = perftest(os.path.join(d, name)) if m else None
            if row and "BW average[MB/sec]" in row:
                limits[int(m.group(1))] = float(row["BW average[MB/sec]"]) / 1000.0
        lat = perftest(os.path.join(d, "perf-write_lat-8.txt"))
        for r in rows:
            if r.get("comms") != 1 or not r.get("compare"):
                continue
            c = cells.setdefault((r["mode"], r["size"]), {"gbps": [], "p50": [], "limit": []})
            p, q = r["plugin"], r["compare"]
            if r["mode"] == "lat":
                c["gbps"].append(None)
                c["p50"].append(p["p50_us"]["median"] / q["p50_us"]["median"])
                if lat and r["size"] == 8 and "t_typical[usec]" in lat:
                    # perftest reports half a round trip
                    c["limit"].append(p["p50_us"]["median"] / (2 * float(lat["t_typical[usec]"])))
            else:
                c["gbps"].append(p["gbps"]["median"] / q["gbps"]["median"])
                c["p50"].append(None)
                lim = limits.get(r["size"])
                c["limit"].append(p["gbps"]["median"] / lim if lim else None)
    print(f"# clock source in the guests: {', '.join(sorted(clocks)) or 'unknown'}")
    if not cells:
        shape(dirs)
        return
    print("| mode | size | ours / NCCL IB GB/s | ours / NCCL IB p50 | ours / perftest |")
    print("|---|---|---|---|---|")
    for (mode, size) in sorted(cells, key=lambda k: (k[0] != "uni", k[1])):
        c = cells[(mode, size)]
        print(f"| {mode} | {fmt_size(size)} | {med(c['gbps'])} | {med(c['p50'])} | {med(c['limit'])} |")
    print("# ours / perftest: GB/s over ib_write_bw's average (uni), or p50 round trip over "
          "twice ib_write_lat's typical latency (lat 8 B); medians, each run's value in brackets")
    shape(dirs)


if __name__ == "__main__":
    main(sys.argv[1:])
