#!/usr/bin/env bash
# The GPU check, for a machine with a CUDA GPU (one H200 takes about 5 minutes): builds with
# CUDA and NCCL, runs the `gpu` tests, a short cuda-copy search, an nccl-allreduce search whose
# best table the NCCL tuner plugin then serves to a run with NCCL_DEBUG=INFO (so the log shows
# the plugin in use), and prints a summary table. Logs go under $OUT when it is set, else
# under ./gpu-check-logs. Exit status: 0 when every step passed.
#
#   tools/gpu-check.sh            # build dir: build-gpucheck (BUILD=DIR to change)
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
LOGS=${OUT:-$ROOT/gpu-check-logs}
BUILD=${BUILD:-$ROOT/build-gpucheck}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$LOGS"
BIN=$BUILD/tools/acceltune
PLUGIN=$BUILD/tools/nccl-plugin/libnccl-tuner-acceltune.so
SUMMARY=()
FAILED=0

# step NAME SECONDS COMMAND...: runs with a time limit, logs to $LOGS/NAME.log, records the outcome.
step() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "== $name" >&2
  timeout --kill-after=10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  local took=$((SECONDS - t0))
  local state=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    state="timeout(${limit}s)"
  elif [ $rc -ne 0 ]; then
    state="failed(rc=$rc)"
  fi
  [ "$state" = ok ] || FAILED=1
  SUMMARY+=("$(printf '%-22s %-16s %5ss  %s' "$name" "$state" "$took" "$LOGS/$name.log")")
  tail -n 3 "$LOGS/$name.log" >&2
  return $rc
}

{
  date -u
  nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
  nvidia-smi topo -m 2>&1 | head -20
  nvcc --version 2>&1 | tail -2
} >"$LOGS/machine.log" 2>&1

step configure 180 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACCELTUNE_WERROR=ON \
  -DACCELTUNE_WITH_CUDA=ON -DACCELTUNE_WITH_NCCL=ON
TARGETS=(acceltune test_gpu test_gpu_spaces)
if grep -q nccl_tuner_acceltune "$ROOT/tools/nccl-plugin/CMakeLists.txt" 2>/dev/null; then TARGETS+=(nccl_tuner_acceltune); fi
step build 300 cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}"

step gpu-tests 150 ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 120
step gpu-space-tests 60 ctest --test-dir "$BUILD" -R 'GpuSpaces' --output-on-failure --timeout 60

# A short cuda-copy search: host-to-device, the default (pageable, one call) against the rest.
rm -rf "$LOGS/cuda-copy-study"
step cuda-copy-search 120 "$BIN" search --space cuda-copy --strategy random --budget 24 --sizes 1M,64M --seed 1 \
  --out "$LOGS/cuda-copy-study"
step cuda-copy-best 20 "$BIN" best "$LOGS/cuda-copy-study"
step cuda-copy-d2d-bench 30 "$BIN" bench --space cuda-copy-d2d --sizes 256M --set engine=sm

# nccl: a short allreduce search, its best table exported for the tuner plugin, then one run
# with the plugin loaded. One GPU makes a one-rank communicator (busbw factor 0, so algbw).
rm -rf "$LOGS/nccl-study"
step nccl-search 150 "$BIN" search --space nccl-allreduce --strategy random --budget 8 --sizes 1M,64M --seed 1 \
  --out "$LOGS/nccl-study"
step nccl-best 20 "$BIN" best "$LOGS/nccl-study"
step nccl-export 20 "$BIN" export "$LOGS/nccl-study" --format nccl-tuner -o "$LOGS/nccl-tuner.csv"
if [ -f "$PLUGIN" ]; then
  step nccl-with-plugin 60 env NCCL_TUNER_PLUGIN="$PLUGIN" NCCL_TUNER_CONFIG_FILE="$LOGS/nccl-tuner.csv" \
    ACCELTUNE_NCCL_TUNER_TABLE="$LOGS/nccl-tuner.csv" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV \
    "$BIN" bench --space nccl-allreduce --sizes 1M,64M
  if grep -qi "tuner" "$LOGS/nccl-with-plugin.log"; then
    grep -i "tuner" "$LOGS/nccl-with-plugin.log" | head -5 >"$LOGS/plugin-lines.log"
    SUMMARY+=("$(printf '%-22s %-16s %5s   %s' plugin-in-log ok - "$(head -1 "$LOGS/plugin-lines.log" | cut -c1-100)")")
  else
    FAILED=1
    SUMMARY+=("$(printf '%-22s %-16s %5s   %s' plugin-in-log failed - "no tuner line in the NCCL log")")
  fi
else
  FAILED=1
  SUMMARY+=("$(printf '%-22s %-16s %5s   %s' nccl-with-plugin failed - "plugin not built: $PLUGIN")")
fi

{
  echo
  echo "acceltune GPU check ($(date -u +%FT%TZ), $(nvidia-smi -L 2>/dev/null | head -1 | cut -c1-60))"
  printf '%-22s %-16s %6s  %s\n' step state time log
  for line in "${SUMMARY[@]}"; do echo "$line"; done
  echo
  echo "-- cuda-copy best (h2d):"
  cat "$LOGS/cuda-copy-best.log" 2>/dev/null
  echo "-- nccl-allreduce best:"
  cat "$LOGS/nccl-best.log" 2>/dev/null
} | tee "$LOGS/summary.txt"
exit $FAILED
