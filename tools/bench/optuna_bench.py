#!/usr/bin/python3
"""The peer side of the search benchmark: Optuna's multivariate TPE on the same landscape CSVs
and seeds, scored the same way as acceltune-search-bench (per size, the incumbent is the config
with the best observed noisy value, scored by its true value; with several sizes the fraction of
the optimum is the least over sizes; every run starts with the default config; every trial counts,
repeated and invalid ones included, as each would cost a measurement). TPE optimises what a
study's trial value is: the geometric mean over sizes of the noisy values.

usage: optuna_bench.py LANDSCAPE.csv [...] [--seeds 20] [--max-evals 100] [--group family]
Needs Debian's python3-optuna.
"""
import argparse
import csv
import math
import os
import statistics
import time

import warnings

import numpy as np
import optuna


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    obj = header.index("objective")
    std = header.index("objective_std") if "objective_std" in header else None
    size = header.index("bytes") if "bytes" in header else None
    params = [i for i in range(len(header)) if i not in (obj, std, size)]

    def num(s):
        try:
            return float(s)
        except ValueError:
            return None

    domains = {}
    for i in params:
        col = [r[i] for r in body]
        if all(num(c) is not None for c in col):
            domains[header[i]] = sorted(set(col), key=float)  # ordinal: keep the order
        else:
            seen = []
            for c in col:
                if c not in seen:
                    seen.append(c)
            domains[header[i]] = seen
    # table[config] = {bytes: (value, std)}; a sized landscape has one row per config and size.
    table = {}
    for r in body:
        key = tuple(r[i] for i in params)
        b = int(float(r[size])) if size is not None else 0
        table.setdefault(key, {})[b] = (float(r[obj]), float(r[std]) if std is not None else 0.0)
    sizes = sorted({b for v in table.values() for b in v})
    table = {k: v for k, v in table.items() if len(v) == len(sizes)}  # measurable at every size
    names = [header[i] for i in params]
    default = tuple(body[0][i] for i in params)
    return names, domains, table, default, sizes


def quantile(xs, q):
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def run(names, domains, table, default, sizes, seed, max_evals):
    rng = np.random.default_rng(seed)
    optimum = {b: max(v[b][0] for v in table.values()) for b in sizes}
    numeric = {n: all(_isnum(x) for x in domains[n]) for n in names}
    best_seen = {b: -math.inf for b in sizes}
    best_true = {b: 0.0 for b in sizes}
    fractions = []

    def fraction():
        return min(best_true[b] / optimum[b] for b in sizes)

    def objective(trial):
        key = []
        for n in names:
            if numeric[n]:  # ordinal: an integer index, so TPE sees the order
                key.append(domains[n][trial.suggest_int(n, 0, len(domains[n]) - 1)])
            else:
                key.append(trial.suggest_categorical(n, domains[n]))
        key = tuple(key)
        if key not in table:
            fractions.append(fraction())
            return float("nan")  # an invalid config: a failed trial
        log_sum = 0.0
        for b in sizes:
            value, std = table[key][b]
            noisy = value + std * rng.standard_normal()
            if noisy > best_seen[b]:
                best_seen[b], best_true[b] = noisy, value
            log_sum += math.log(max(noisy, 1e-300))
        fractions.append(fraction())
        return log_sum / len(sizes)  # the geometric mean over sizes, as a study's trial value

    sampler = optuna.samplers.TPESampler(multivariate=True, seed=seed)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.enqueue_trial({n: (domains[n].index(d) if numeric[n] else d) for n, d in zip(names, default)})
    start = time.monotonic()
    study.optimize(objective, n_trials=max_evals)
    return fractions, time.monotonic() - start


def _isnum(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("landscapes", nargs="+")
    ap.add_argument("--seeds", type=int, default=20, help="runs per landscape (seeds 1..N)")
    ap.add_argument("--max-evals", type=int, default=100)
    ap.add_argument("--group", help="pool every landscape into one row with this name; each run's seed is "
                    "the number in the file name (family-N.csv); files named family-N-CLASS.csv make a row per "
                    "class, and this name the row over all of them")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    print(f"{'landscapes':14} {'strategy':14} {'runs':>4}  {'obs to 95% med/p75/max':17} {'obs to 98%':17} "
          f"{'rec to 95%':17} {'rec to 98%':17} {'@25':>5} {'@50':>5} {'@100':>5} {'s/run':>6}")
    jobs = []  # (group, path, seed)
    for path in args.landscapes:
        base = os.path.splitext(os.path.basename(path))[0]
        if args.group:
            parts = base.split("-", 2)  # family, N[, CLASS]
            digits = "".join(ch for ch in parts[1 if len(parts) > 1 else 0] if ch.isdigit())
            jobs.append((parts[2] if len(parts) > 2 else args.group, path, [int(digits) if digits else 1]))
        else:
            jobs.append((base, path, list(range(1, args.seeds + 1))))
    order = ["smooth", "rugged", "multi-size", "noisy"]
    groups = []
    for g, _, _ in jobs:
        if g not in groups:
            groups.append(g)
    groups.sort(key=lambda g: order.index(g) if g in order else len(order))
    if args.group and len(groups) > 1:
        groups.append(args.group)  # the row over all of them
    done = {}  # group -> results, each run once
    for group in groups:
        if group in done:
            res = done[group]
        elif group == args.group and len(groups) > 1:
            res = {k: [x for g in groups[:-1] for x in done[g][k]] for k in done[groups[0]]}
        else:
            res = {k: [] for k in ("to95", "to98", "at25", "at50", "at100", "secs")}
            for g, path, seeds in jobs:
                if g != group:
                    continue
                names, domains, table, default, sizes = load(path)
                for seed in seeds:
                    f, secs = run(names, domains, table, default, sizes, seed, args.max_evals)

                    def first(goal):
                        return next((i + 1 for i, x in enumerate(f) if x >= goal), args.max_evals + 1)

                    res["to95"].append(first(0.95))
                    res["to98"].append(first(0.98))
                    for n in (25, 50, 100):
                        res[f"at{n}"].append(f[min(n, len(f)) - 1])
                    res["secs"].append(secs)
            done[group] = res

        def evals(xs):
            show = lambda x: f">{args.max_evals}" if x > args.max_evals else f"{x:.0f}"
            return f"{show(quantile(xs, 0.5))}/{show(quantile(xs, 0.75))}/{show(max(xs))}"

        print(f"{group:14} {'tpe':14} {len(res['to95']):4d}  {evals(res['to95']):17} {evals(res['to98']):17} "
              f"{'-':17} {'-':17} {statistics.median(res['at25']):5.3f} {statistics.median(res['at50']):5.3f} "
              f"{statistics.median(res['at100']):5.3f} {statistics.median(res['secs']):6.2f}", flush=True)


if __name__ == "__main__":
    main()
