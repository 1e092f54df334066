#!/usr/bin/env bash
# The search benchmark of docs/benchmarks.md: acceltune's strategies and Optuna's multivariate
# TPE on the same landscapes and seeds. Needs a build (tools/build.sh) and python3-optuna.
# usage: tools/bench/run-search-bench.sh [SEEDS] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=${1:-20}
out=${2:-build/search-bench}
mkdir -p "$out"
python3 tools/bench/make_landscapes.py "$out" --seeds 1,2,3 >/dev/null
lands=(tools/bench/landscapes/host-copy-16M.csv "$out"/synthetic-1.csv "$out"/synthetic-2.csv "$out"/synthetic-3.csv)
echo "# $(date -u +%Y-%m-%dT%H:%MZ) seeds=$seeds"
build/tools/acceltune-search-bench "${lands[@]}" --seeds "$seeds" --max-evals 200 --strategies bayes,halving-bayes,local,halving
# Random needs far more evaluations before it reaches 98%; it costs nothing to run longer.
build/tools/acceltune-search-bench "${lands[@]}" --seeds "$seeds" --max-evals 5000 --strategies random | tail -n +2
/usr/bin/python3 tools/bench/optuna_bench.py "${lands[@]}" --seeds "$seeds" --max-evals 300 | tail -n +2
