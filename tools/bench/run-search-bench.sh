#!/usr/bin/env bash
# The search benchmark of docs/benchmarks.md, on landscapes no strategy was tuned on: held-out
# instances of the seeded landscape family (tools/bench/landscape_family.hpp; the strategies were
# tuned on seeds 1-40) and the host-copy landscape recorded on the development machine.
# acceltune's strategies and Optuna's multivariate TPE run on the same instances with the same
# counting. Needs a build with the benchmarks (tools/build.sh --tests) and Debian's python3-optuna
# for the TPE rows.
# usage: tools/bench/run-search-bench.sh [FAMILY_SEEDS] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
family=${1:-101:140}
out=${2:-build/search-bench}
bench=build/tools/acceltune-search-bench
mkdir -p "$out"
rm -rf "$out/family"
# Writing the instances prints one line each (on stderr); the later runs' copies are left out.
"$bench" --family "$family" --write-family "$out/family" >/dev/null
quiet() { grep -v '^family-' >&2; }
host=tools/bench/landscapes/host-copy-16M.csv
echo "# $(date -u +%Y-%m-%dT%H:%MZ) family=$family"
# Optuna runs beside acceltune's strategies (one core each); its rows are printed after theirs.
have_optuna=0
if /usr/bin/python3 -c 'import optuna' 2>/dev/null; then
  have_optuna=1
  (/usr/bin/python3 tools/bench/optuna_bench.py "$out"/family/*.csv --group all --max-evals 300 | tail -n +2
   /usr/bin/python3 tools/bench/optuna_bench.py "$host" --seeds 20 --max-evals 300 | tail -n +2) >"$out/tpe.txt" &
fi
"$bench" --family "$family" --max-evals 100 --strategies bayes --json "$out/family.json" 2> >(quiet)
# The published baseline and local search run longer; they cost no model time.
"$bench" --family "$family" --max-evals 300 --recommend-until 0 --strategies coordinate,local 2> >(quiet) | tail -n +2
# Random needs far more evaluations to reach 98%; it costs nothing to run longer.
"$bench" --family "$family" --max-evals 3000 --recommend-until 0 --strategies random 2> >(quiet) | tail -n +2
"$bench" "$host" --seeds 20 --max-evals 200 --strategies bayes,halving-bayes,local,coordinate,halving | tail -n +2
"$bench" "$host" --seeds 20 --max-evals 1000 --recommend-until 0 --strategies random | tail -n +2
if ((have_optuna)); then
  wait
  cat "$out/tpe.txt"
else
  echo "(python3-optuna is not installed: no TPE rows)"
fi
