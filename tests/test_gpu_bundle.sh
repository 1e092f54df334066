#!/usr/bin/env bash
# The GPU bundle (tools/gpu-bundle.sh) runs from wherever it lands: packed from this build, moved
# to another folder and run with a scrubbed environment and only the bundle on LD_LIBRARY_PATH
# (as root, also with the source and build trees hidden behind empty mounts, so a path compiled
# into a program cannot be what makes it work):
# - every library of every bundled program resolves inside the bundle or to glibc, CUDA or NCCL;
# - the bundled `acceltune probe` and `spaces` run, and `spaces` finds the bundle's spaces;
# - the bundled unit tests pass, and the GPU tests skip with their reason;
# - gpu-check.sh without a GPU runs its preflight and unit tests, reports every GPU step as
#   skipped, leaves at most 8 files in $OUT, honours its deadline and writes its summary on SIGTERM.
#
#   tests/test_gpu_bundle.sh BUILD_DIR SOURCE_DIR
set -u

fail() { echo "FAIL: $*" >&2; FAILED=1; }
FAILED=0

# glibc, CUDA and NCCL: what the machine may provide (tools/gpu-machine-libs.txt, in the bundle).
machine_lib() { "$B/gpu-check.sh" --machine-lib "$1"; }

if [ "${1:-}" = "--inner" ]; then
  # ---- inside: the bundle at $2, nothing else of the build reachable --------------------------
  B=$2
  T=$3
  [ -f "$B/machine-libs.txt" ] || { echo "FAIL: the bundle lacks machine-libs.txt" >&2; exit 1; }
  echo "== libraries (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  for f in "$B"/bin/* "$B"/lib/*.so* "$B"/lib/compat/*.so*; do
    [ -L "$f" ] && continue
    while read -r name arrow path _; do
      [ "$arrow" = "=>" ] || continue
      case $path in
        "$B"/*) continue ;;
        not) fail "$(basename "$f"): $name is not found"; continue ;;
      esac
      machine_lib "$name" || fail "$(basename "$f"): $name resolves outside the bundle, to $path"
    done < <(ldd "$f")
  done

  echo "== acceltune probe, spaces"
  "$B/bin/acceltune" probe >"$T/probe.txt" 2>&1 || fail "acceltune probe: exit $? ($(tail -1 "$T/probe.txt"))"
  "$B/bin/acceltune" spaces >"$T/spaces.txt" 2>&1 || fail "acceltune spaces: exit $?"
  # Listed as runnable (a line of its own) or under the reason it cannot run here (a list).
  listed() { grep -qE "(^|[ ,])$1(,| |\$)" "$T/spaces.txt"; }
  listed cuda-copy || fail "acceltune spaces does not list the bundle's spaces: $(cat "$T/spaces.txt")"
  listed nccl-allreduce || fail "acceltune spaces does not list nccl-allreduce"

  export ACCELTUNE_BINARY=$B/bin/acceltune ACCELTUNE_SPACES_PATH=$B/share/acceltune/spaces
  export ACCELTUNE_NCCL_PLUGIN=$B/lib/libnccl-tuner-acceltune.so
  echo "== bundled tests"
  eval "$(grep '^CPU_TESTS_[A-Z]*=' "$B/gpu-check.sh")"
  run_filtered() {
    "$B/bin/$1" --gtest_filter="$2" >"$T/$1.txt" 2>&1 || fail "$1: exit $?: $(grep -m3 'Failure\|FAILED' "$T/$1.txt")"
    grep -m1 '^\[  PASSED  \]' "$T/$1.txt" || fail "$1 ($2): no test passed"
  }
  run_filtered test_unit "$CPU_TESTS_UNIT"
  run_filtered test_integration "$CPU_TESTS_PLUGIN"
  "$B/bin/test_gpu" >"$T/test_gpu.txt" 2>&1 || fail "test_gpu: exit $?: $(grep -m3 'Failure\|FAILED' "$T/test_gpu.txt")"
  ran=$(grep -o '^\[==========\] [0-9]* tests' "$T/test_gpu.txt" | tail -1 | awk '{print $2}')
  skipped=$(grep -o '^\[  SKIPPED \] [0-9]* test' "$T/test_gpu.txt" | awk '{print $4}')
  echo "test_gpu: ${ran:-?} tests, ${skipped:-0} skipped"
  [ -n "$ran" ] && [ "${skipped:-0}" = "$ran" ] || fail "test_gpu: not every test skipped without a GPU"
  grep -q 'needs a CUDA GPU\|none found' "$T/test_gpu.txt" || fail "test_gpu: the skips do not say why"
  unset ACCELTUNE_BINARY ACCELTUNE_SPACES_PATH ACCELTUNE_NCCL_PLUGIN

  echo "== gpu-check.sh without a GPU"
  t0=$SECONDS
  OUT=$T/out GPU_CHECK_DEADLINE=150 timeout 170 "$B/gpu-check.sh" >"$T/check.txt" 2>&1
  rc=$?
  cat "$T/check.txt"
  [ $rc -eq 4 ] || fail "gpu-check.sh: exit $rc, expected 4 (GPU steps skipped: not verified)"
  [ $((SECONDS - t0)) -le 150 ] || fail "gpu-check.sh ran past its deadline"
  for s in preflight unit-tests; do
    grep -q "^$s  *ok " "$T/out/summary.txt" || fail "gpu-check.sh: step $s did not pass"
  done
  for s in gpu-tests copy-h2d copy-d2h copy-d2d nccl-init; do
    grep -q "^$s  *skipped .*no GPU" "$T/out/summary.txt" || fail "gpu-check.sh: step $s is not reported as skipped"
  done
  grep -q '0 unresolved, 0 outside the bundle' "$T/out/summary.txt" || fail "gpu-check.sh: preflight found bad libraries"
  n=$(find "$T/out" -type f | wc -l)
  [ "$n" -le 8 ] || fail "gpu-check.sh left $n files in OUT (at most 8 come back)"
  tar -tzf "$T/out/gpu-check-logs.tar.gz" | grep -q 'preflight.log' || fail "the log tarball lacks preflight.log"

  echo "== gpu-check.sh with no time left: steps are skipped, not run"
  OUT=$T/out-late GPU_CHECK_DEADLINE=12 timeout 60 "$B/gpu-check.sh" >"$T/late.txt" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "gpu-check.sh with a 12 s deadline: exit $rc, expected 1"
  grep -q "no time left" "$T/out-late/summary.txt" || fail "gpu-check.sh: no step says it had no time left"

  echo "== gpu-check.sh stopped by SIGTERM"
  OUT=$T/out-term GPU_CHECK_DEADLINE=150 "$B/gpu-check.sh" >"$T/term.txt" 2>&1 &
  pid=$!
  for _ in $(seq 50); do
    grep -q '^preflight ' "$T/out-term/summary.txt" 2>/dev/null && break
    sleep 0.2
  done
  kill -TERM $pid
  wait $pid
  rc=$?
  [ $rc -eq 143 ] || fail "gpu-check.sh after SIGTERM: exit $rc, expected 143"
  grep -q 'interrupted by SIGTERM' "$T/out-term/summary.txt" || fail "the summary does not say the check was stopped"
  grep -q '^preflight ' "$T/out-term/summary.txt" || fail "the summary lost the finished step"
  [ -s "$T/out-term/gpu-check-logs.tar.gz" ] || fail "no log tarball after SIGTERM"
  pgrep -af "^$B/bin/" && fail "bundled programs outlived the stopped check"
  exit $FAILED
fi

# ---- outside: pack, move, run the inside with the trees hidden -----------------------------------
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)

# Every suite of the files whose tests the check runs without a GPU is in its filters.
for f in test_gpu_spaces test_nccl_plugin; do
  for suite in $(grep -ho '^TEST\(_F\|_P\)\?([A-Za-z0-9_]*' "$SRC/tests/$f.cpp" | sed 's/.*(//' | sort -u); do
    grep -q "^CPU_TESTS_[A-Z]*=.*[':]$suite\.\*" "$SRC/tools/gpu-check.sh" ||
      fail "tools/gpu-check.sh does not run the suite $suite of tests/$f.cpp (add it to a CPU_TESTS_ filter)"
  done
done
T=$(mktemp -d "${TMPDIR:-/tmp}/acceltune-bundle-test.XXXXXX")
trap 'rm -rf "$T"' EXIT

"$SRC/tools/gpu-bundle.sh" --from-build "$BUILD" --out "$T/packed/gpu-bundle" | tee "$T/pack.txt" || {
  echo "FAIL: gpu-bundle.sh: exit $?" >&2
  exit 1
}
grep -q 'MiB' "$T/pack.txt" || { echo "FAIL: gpu-bundle.sh does not print the size" >&2; exit 1; }
mkdir -p "$T/elsewhere"
mv "$T/packed/gpu-bundle" "$T/elsewhere/landed"
B=$T/elsewhere/landed
cp "$0" "$T/inner.sh"

ENV=(env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME="$T" TMPDIR="$T" LD_LIBRARY_PATH="$B/lib:$B/lib/compat")
if [ "$(id -u)" -eq 0 ] && unshare --mount true 2>/dev/null; then
  echo "== hiding $SRC and $BUILD behind empty mounts"
  hide="mount -t tmpfs none '$SRC'"
  case $BUILD/ in "$SRC"/*) ;; *) hide="$hide && mount -t tmpfs none '$BUILD'" ;; esac
  unshare --mount --propagation private sh -c "$hide && exec ${ENV[*]} bash '$T/inner.sh' --inner '$B' '$T'" || FAILED=1
else
  echo "== not hiding the source and build trees (needs root and unshare); the rest runs as usual"
  "${ENV[@]}" bash "$T/inner.sh" --inner "$B" "$T" || FAILED=1
fi
exit $FAILED
