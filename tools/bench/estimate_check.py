#!/usr/bin/python3
"""The model's estimate of each recommended config against its re-measurement: per size, the
estimate and its 95% interval from best.json (the search's model, inside acceltune) beside the
value certification measured for the same config later, interleaved with the default.

usage: estimate_check.py STUDY_DIR [...]
"""
import json
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    inside = total = 0
    print(f"{'study':24} {'size':>6} {'trial':>6} {'estimate [95% interval]':>28} {'re-measured':>12}  inside")
    for d in sys.argv[1:]:
        with open(f"{d}/best.json") as f:
            best = json.load(f)
        for s in best.get("sizes", []):
            model = s.get("model") or {}
            if s.get("predicted") is None or model.get("ci_low") is None:
                continue
            cert = s.get("certified") or {}
            again = next((c.get("value") for c in cert.get("candidates", []) if c.get("trial") == s.get("best_trial")), None)
            if again is None:
                continue
            ok = model["ci_low"] <= again <= model["ci_high"]
            inside += ok
            total += 1
            est = f"{s['predicted']:.4g} [{model['ci_low']:.4g}, {model['ci_high']:.4g}]"
            print(f"{d[-24:]:24} {s['size']:>6} {s['best_trial']:>6} {est:>28} {again:>12.4g}  {'yes' if ok else 'no'}")
    if total:
        print(f"{inside} of {total} re-measurements inside the estimate's interval")
    return 0


if __name__ == "__main__":
    sys.exit(main())
