#!/usr/bin/env python3
"""Turns finished studies of one message size (DIR/trials.jsonl) into a landscape CSV for the
replay kernel: one column per param, `objective` and `objective_std`. With several studies of
the same space (best measured in different orders, so the machine's slow drift averages out
instead of becoming structure), each config's objective is the median over the studies and its
std the median within-study spread ((p90 - p10) / 2.563, the 10-90% width of a normal): the
noise one measurement sees. Configs that failed anywhere are left out, so they are invalid
in the landscape. The default config (trial 0) goes first.

usage: study_to_landscape.py STUDY_DIR [STUDY_DIR ...] OUT.csv
"""
import json
import statistics
import sys


def read(study):
    out, names, first = {}, None, None
    with open(f"{study}/trials.jsonl") as f:
        for line in f:
            if not line.strip():
                continue
            t = json.loads(line)
            names = names or list(t["config"].keys())
            key = tuple(t["config"][n] for n in names)
            if t["number"] == 0:
                first = key
            if t["state"] != "ok" or len(t["measurements"]) != 1:
                out[key] = None
                continue
            m = t["measurements"][0]
            out[key] = (m["value"], max((m["value_p90"] - m["value_p10"]) / 2.563, 0.0))
    return names, first, out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    studies, out = sys.argv[1:-1], sys.argv[-1]
    runs = [read(s) for s in studies]
    names, first = runs[0][0], runs[0][1]
    keys = [k for k in runs[0][2] if all(r[2].get(k) is not None for r in runs)]
    keys.sort(key=lambda k: 0 if k == first else 1)
    with open(out, "w") as f:
        f.write(",".join(names + ["objective", "objective_std"]) + "\n")
        for k in keys:
            vals = [r[2][k][0] for r in runs]
            stds = [r[2][k][1] for r in runs]
            cells = [("true" if x else "false") if isinstance(x, bool) else str(x) for x in k]
            f.write(",".join(cells) + f",{statistics.median(vals):.6g},{statistics.median(stds):.4g}\n")
    print(f"{out}: {len(keys)} configs from {len(runs)} studies")


if __name__ == "__main__":
    main()
