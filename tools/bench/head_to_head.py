#!/usr/bin/python3
"""Two studies' exported configs measured head to head: per message size, the library default,
study A's config and study B's config (from each best.json's ranges) are measured in rounds
interleaved D A B, then B A D, one `acceltune bench` each, so a drift of the machine falls on all
three alike and every ratio has the same default under it. Prints per size the median of the
per-round ratios A/D, B/D and A/B with a distribution-free 95% interval of the median (order
statistics of the rounds). These are gains inside acceltune (its own measurement), not delivered.

Two certifications run one after the other each measure the default anew; on a drifting machine
the default's value differs between them, so their certified gains are not comparable at the
second digit. This puts both configs on one set of rounds.

usage: head_to_head.py SPACE STUDY_A STUDY_B [--rounds N] [--max-seconds S] [--sizes B,B] [--raw] [--bin PATH]
"""
import argparse
import json
import math
import statistics
import subprocess
import sys


def config_at(best, nbytes):
    for r in best.get("ranges", []):
        if r["min_bytes"] <= nbytes <= r["max_bytes"]:
            return r["config"]
    return best["default_config"]


def measure(binary, space, config, nbytes, max_seconds):
    args = [binary, "bench", "--space", space, "--sizes", str(nbytes), "--json", "--max-seconds", str(max_seconds)]
    for k, v in config.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        args += ["--set", f"{k}={v}"]
    # A failed measurement exits non-zero and still prints its JSON; it counts as missing.
    out = subprocess.run(args, capture_output=True, text=True).stdout
    try:
        measurements = json.loads(out)["measurements"]
    except (ValueError, KeyError):
        return math.nan
    for m in measurements:
        if m.get("bytes") == nbytes and m.get("state") == "ok":
            return float(m["value"])
    return math.nan


def median_interval(xs):
    """Median and the order-statistic interval [x_(k), x_(n+1-k)] covering it with >= 95%."""
    xs = sorted(x for x in xs if math.isfinite(x))
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, math.nan
    below = 0.0
    k = 0
    # Largest k with P(Binomial(n, 1/2) < k) <= 2.5%.
    while k < n:
        nxt = below + math.comb(n, k) / 2**n
        if nxt > 0.025:
            break
        below = nxt
        k += 1
    k = max(k, 1)
    return statistics.median(xs), xs[k - 1], xs[n - k]


def size_name(b):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


def main():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("space")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--max-seconds", type=float, default=0.5)
    p.add_argument("--sizes", help="comma-separated byte counts (default: the study's sizes)")
    p.add_argument("--raw", action="store_true", help="print every round's three values")
    p.add_argument("--bin", default="build/tools/acceltune")
    o = p.parse_args()
    with open(f"{o.a}/best.json") as f:
        best_a = json.load(f)
    with open(f"{o.b}/best.json") as f:
        best_b = json.load(f)
    default = best_a["default_config"]
    print(f"{o.rounds} rounds per size, interleaved default, A, B (then reversed); A = {o.a}, B = {o.b}")
    print(f"{'size':>6} {'default':>9} {'A':>9} {'B':>9}  {'A/default [95%]':>22}  {'B/default [95%]':>22}  {'A/B [95%]':>22}")
    sizes = [s["bytes"] for s in best_a["sizes"]]
    if o.sizes:
        sizes = [int(b) for b in o.sizes.split(",")]
    for nbytes in sizes:
        configs = [default, config_at(best_a, nbytes), config_at(best_b, nbytes)]
        values = [[], [], []]
        for r in range(o.rounds):
            order = [0, 1, 2] if r % 2 == 0 else [2, 1, 0]
            for i in order:
                values[i].append(measure(o.bin, o.space, configs[i], nbytes, o.max_seconds))
            if o.raw:
                print(f"  {size_name(nbytes)} round {r + 1}: default {values[0][-1]:.4g}  A {values[1][-1]:.4g}  B {values[2][-1]:.4g}")
        ratio = lambda i, j: [x / y for x, y in zip(values[i], values[j]) if y > 0]
        cells = []
        for i, j in ((1, 0), (2, 0), (1, 2)):
            m, lo, hi = median_interval(ratio(i, j))
            cells.append(f"{m:.2f}x [{lo:.2f}, {hi:.2f}]")
        med = [statistics.median(v) for v in values]
        print(f"{size_name(nbytes):>6} {med[0]:>9.3g} {med[1]:>9.3g} {med[2]:>9.3g}  {cells[0]:>22}  {cells[1]:>22}  {cells[2]:>22}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
