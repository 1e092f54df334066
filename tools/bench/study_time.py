#!/usr/bin/python3
"""Where a study's wall time went, from its events.jsonl: the time inside the study's loop (from
each start or resume that ran trials to its end), the time measuring (the trials' own cost) and the rest of the
loop, which is the strategy's time (its model) and the runner's bookkeeping.

usage: study_time.py STUDY_DIR [...]
"""
import datetime
import json
import sys


def seconds(e):
    return datetime.datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(f"{'study':24} {'trials':>6} {'in loop s':>10} {'measuring s':>12} {'strategy+rest s':>16} {'share':>6}")
    for d in sys.argv[1:]:
        with open(f"{d}/events.jsonl") as f:
            events = [json.loads(line) for line in f if line.strip()]
        loop = measuring = 0.0
        trials = 0
        opened = None
        ran = False  # a resume that only certifies runs no trial: not counted
        for e in events:
            kind = e.get("event")
            if kind in ("start", "resume"):
                opened, ran = seconds(e), False
            elif kind == "end" and opened is not None:
                if ran:
                    loop += seconds(e) - opened
                opened = None
            elif kind == "trial_finish":
                measuring += float(e.get("cost_seconds", 0))
                trials += 1
                ran = True
        rest = loop - measuring
        share = f"{100 * rest / loop:.0f}%" if loop > 0 else "-"
        print(f"{d[-24:]:24} {trials:>6} {loop:>10.1f} {measuring:>12.1f} {rest:>16.1f} {share:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
