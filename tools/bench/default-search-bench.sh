#!/usr/bin/env bash
# The default search (the space's strategy: bayes) against random search on a shipped space,
# interleaved: the two studies advance in turns (each turn resumes its study), so the machine's
# drift falls on both alike. Turns of STEP trials give both the same trials; with BUDGET and STEP
# in seconds (60s, 10s) each turn is STEP seconds of wall time for each, the model's time and the
# resume's rebuild included, so both get the same time and the model pays for itself. At the end
# each study is certified the default way and its table printed, so the two sets of certified
# gains come from one run. Needs a build (tools/build.sh).
# usage: tools/bench/default-search-bench.sh [SPACE] [BUDGET|SECONDSs] [STEP|SECONDSs] [OUT_DIR] [-- SEARCH_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/../.."
space=${1:-host-copy}
budget=${2:-200}
step=${3:-20}
out=${4:-build/default-search-bench}
extra=()
if (($# > 4)) && [[ $5 == -- ]]; then extra=("${@:6}"); fi
timed=0
if [[ $budget == *s ]]; then
  [[ $step == *s ]] || { echo "default-search-bench: a budget in seconds needs a step in seconds" >&2; exit 2; }
  timed=1
  budget=${budget%s}
  step=${step%s}
fi
bin=build/tools/acceltune
rm -rf "$out"
mkdir -p "$out"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) space=$space budget=$budget step=$step$( ((timed)) && echo ' (seconds)')"
declare -A seconds=([default]=0 [random]=0)
trials() { if [[ -e $1/trials.jsonl ]]; then wc -l <"$1/trials.jsonl"; else echo 0; fi; }
n=0
while ((n < budget)); do
  n=$((n + step > budget ? budget : n + step))
  for who in default random; do
    if ((timed)); then
      args=(search --space "$space" --budget 100000 --time-limit "$step" --out "$out/$who" --certify-top 0)
    else
      args=(search --space "$space" --budget "$n" --out "$out/$who" --certify-top 0)
    fi
    args+=("${extra[@]}")
    [[ $who == random ]] && args+=(--strategy random)
    [[ -e $out/$who/study.json ]] && args+=(--resume)
    t0=$(date +%s.%N)
    "$bin" "${args[@]}" >/dev/null
    seconds[$who]=$(awk -v a="${seconds[$who]}" -v b="$t0" -v c="$(date +%s.%N)" 'BEGIN { printf "%.1f", a + c - b }')
  done
  if ((timed)); then
    echo "# turn to ${n} s: default ${seconds[default]} s, $(trials "$out/default") trials; random ${seconds[random]} s, $(trials "$out/random") trials"
  else
    echo "# $n trials each: default ${seconds[default]} s, random ${seconds[random]} s of searching"
  fi
done
for who in default random; do
  echo
  echo "## $who"
  if ((timed)); then
    # No more trials: the budget is what the study holds.
    args=(search --space "$space" --budget "$(trials "$out/$who")" --out "$out/$who" --resume "${extra[@]}")
  else
    args=(search --space "$space" --budget "$budget" --out "$out/$who" --resume "${extra[@]}")
  fi
  [[ $who == random ]] && args+=(--strategy random)
  "$bin" "${args[@]}"
done
echo
echo "## where the time went (inside each study's loop; the rest is the strategy's model and bookkeeping)"
/usr/bin/python3 tools/bench/study_time.py "$out/default" "$out/random"
echo
echo "## the model's estimates against certification's re-measurement of the same configs"
/usr/bin/python3 tools/bench/estimate_check.py "$out/default" "$out/random"
