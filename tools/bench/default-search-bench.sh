#!/usr/bin/env bash
# The default search (the space's strategy: bayes) against random search on a shipped space,
# interleaved: the two studies advance in turns of STEP trials (each turn resumes its study), so
# the machine's drift falls on both alike and both get the same trials. At the end each study is
# certified the default way and its table printed, so the two sets of certified gains come from
# one run. Needs a build (tools/build.sh).
# usage: tools/bench/default-search-bench.sh [SPACE] [BUDGET] [STEP] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
space=${1:-host-copy}
budget=${2:-200}
step=${3:-20}
out=${4:-build/default-search-bench}
bin=build/tools/acceltune
rm -rf "$out"
mkdir -p "$out"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) space=$space budget=$budget step=$step"
declare -A seconds=([default]=0 [random]=0)
n=0
while ((n < budget)); do
  n=$((n + step > budget ? budget : n + step))
  for who in default random; do
    args=(search --space "$space" --budget "$n" --out "$out/$who" --certify-top 0)
    [[ $who == random ]] && args+=(--strategy random)
    [[ -e $out/$who/study.json ]] && args+=(--resume)
    t0=$(date +%s.%N)
    "$bin" "${args[@]}" >/dev/null
    seconds[$who]=$(awk -v a="${seconds[$who]}" -v b="$t0" -v c="$(date +%s.%N)" 'BEGIN { printf "%.1f", a + c - b }')
  done
  echo "# $n trials each: default ${seconds[default]} s, random ${seconds[random]} s of searching"
done
for who in default random; do
  echo
  echo "## $who"
  args=(search --space "$space" --budget "$budget" --out "$out/$who" --resume)
  [[ $who == random ]] && args+=(--strategy random)
  "$bin" "${args[@]}"
done
