#!/usr/bin/python3
"""The peer side of the search benchmark: Optuna's multivariate TPE on the same landscape CSVs
and seeds, scored the same way as acceltune-search-bench (the incumbent is the config with the
best observed noisy value, scored by its true value; every run starts with the default config;
every trial counts, repeated and invalid ones included, as each would cost a measurement).

usage: optuna_bench.py LANDSCAPE.csv [...] [--seeds 20] [--max-evals 200]
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
    params = [i for i in range(len(header)) if i not in (obj, std)]

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
    table = {}
    for r in body:
        key = tuple(r[i] for i in params)
        table[key] = (float(r[obj]), float(r[std]) if std is not None else 0.0)
    names = [header[i] for i in params]
    default = tuple(body[0][i] for i in params)
    return names, domains, table, default


def quantile(xs, q):
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def run(names, domains, table, default, seed, max_evals):
    rng = np.random.default_rng(seed)
    optimum = max(v for v, _ in table.values())
    numeric = {n: all(_isnum(x) for x in domains[n]) for n in names}
    best_seen, best_true, fractions = -math.inf, 0.0, []

    def objective(trial):
        nonlocal best_seen, best_true
        key = []
        for n in names:
            if numeric[n]:  # ordinal: an integer index, so TPE sees the order
                key.append(domains[n][trial.suggest_int(n, 0, len(domains[n]) - 1)])
            else:
                key.append(trial.suggest_categorical(n, domains[n]))
        key = tuple(key)
        if key not in table:
            fractions.append(best_true / optimum)
            return float("nan")  # an invalid config: a failed trial
        value, std = table[key]
        noisy = value + std * rng.standard_normal()
        if noisy > best_seen:
            best_seen, best_true = noisy, value
        fractions.append(best_true / optimum)
        return noisy

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
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--max-evals", type=int, default=200)
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    print(f"{'landscape':16} {'strategy':8} {'seeds':>5} {'configs':>7} {'evals to 95% (IQR)':>18} "
          f"{'evals to 98% (IQR)':>18} {'@25':>6} {'@50':>6} {'@100':>6} {'s/run':>8}")
    for path in args.landscapes:
        names, domains, table, default = load(path)
        res = {k: [] for k in ("to95", "to98", "at25", "at50", "at100", "secs")}
        for seed in range(1, args.seeds + 1):
            f, secs = run(names, domains, table, default, seed, args.max_evals)

            def first(goal):
                return next((i + 1 for i, x in enumerate(f) if x >= goal), args.max_evals + 1)

            res["to95"].append(first(0.95))
            res["to98"].append(first(0.98))
            for n in (25, 50, 100):
                res[f"at{n}"].append(f[min(n, len(f)) - 1])
            res["secs"].append(secs)

        def evals(xs):
            show = lambda x: f">{args.max_evals}" if x > args.max_evals else f"{x:.0f}"
            return f"{show(quantile(xs, 0.5))} ({show(quantile(xs, 0.25))}-{show(quantile(xs, 0.75))})"

        base = os.path.splitext(os.path.basename(path))[0]
        print(f"{base:16} {'tpe':8} {args.seeds:5d} {len(table):7d} {evals(res['to95']):>18} {evals(res['to98']):>18} "
              f"{statistics.median(res['at25']):6.3f} {statistics.median(res['at50']):6.3f} "
              f"{statistics.median(res['at100']):6.3f} {statistics.median(res['secs']):8.2f}", flush=True)


if __name__ == "__main__":
    main()
