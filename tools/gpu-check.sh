#!/usr/bin/env bash
# The GPU check: runs acceltune's GPU code from the bundle that tools/gpu-bundle.sh packs, on a
# bare machine with a CUDA GPU (NVIDIA driver, CUDA toolkit, NCCL from the toolkit or from Python
# wheels; none of the packages acceltune builds with).
#
#   gpu-bundle/gpu-check.sh        # or tools/gpu-check.sh, which uses ./gpu-bundle
#
# Steps, all under one deadline (GPU_CHECK_DEADLINE seconds, default 270, at most 300):
#   preflight   the GPU and driver; which libcudart and libnccl (toolkit lib64, the Python wheels'
#               nvidia/*/lib, the system's library path), NCCL's version (ncclGetVersion, through
#               acceltune probe); every library of every bundled program resolves inside the
#               bundle or to glibc, CUDA or NCCL
#   unit-tests  the bundled CPU tests (spaces, NCCL tuner plugin)
#   gpu-tests   cuda-copy and nccl on the GPU (test_gpu)
#   copy-h2d, copy-d2h, copy-d2d
#               cuda-copy at 256M: the library default against a short search's certified best,
#               each as a share of the link's limit
#   nccl-init   a one-rank NCCL communicator through `acceltune bench` with the tuner plugin and a
#               table loaded; NCCL's own log (NCCL_DEBUG_FILE) must say "TUNER/Plugin: Using acceltune"
# Without a GPU, preflight and the unit tests run and every GPU step is reported as skipped.
#
# Output in $OUT (default ./gpu-check-out): summary.txt, one line per step written as the step
# ends (and on SIGTERM), and gpu-check-logs.tar.gz with every log and study.
# Environment: BUNDLE (the bundle; default: beside this script, else ./gpu-bundle), OUT,
# GPU_CHECK_DEADLINE. Exit status: 0 every step passed; 1 a step failed or timed out; 2 no
# bundle or bad usage; 4 nothing failed but GPU steps were skipped (not verified here: README's
# exit-code table).
set -u

# ------------------------------------------------------------------------------------------------
# One step, run by the parent below as `gpu-check.sh --step NAME` under `timeout`. A step prints
# its log on stdout/stderr and may write a one-line note to $WORK/NAME.note; exit 0 passed,
# 77 skipped, anything else failed.

note() { echo "$*" >"$WORK/$STEP.note"; }

# The counts from a GoogleTest run's output.
gtest_counts() {
  local log=$1 passed skipped failed
  passed=$(grep -o '^\[  PASSED  \] [0-9]*' "$log" | awk '{s += $4} END {print s + 0}')
  skipped=$(grep -o '^\[  SKIPPED \] [0-9]* test' "$log" | awk '{s += $4} END {print s + 0}')
  failed=$(grep -o '^\[  FAILED  \] [0-9]* test' "$log" | awk '{s += $4} END {print s + 0}')
  echo "$passed passed, $skipped skipped, $failed failed"
}

# The tests of the bundled programs that run without a GPU: the GPU spaces' (tests/test_gpu_spaces.cpp,
# built into test_unit) and the NCCL tuner plugin's (tests/test_nccl_plugin.cpp, in test_integration).
# tests/test_gpu_bundle.sh checks that every suite of those files is named here.
CPU_TESTS_UNIT='GpuSpaces.*'
CPU_TESTS_PLUGIN='NcclPlugin.*:NcclTunerTable.*:ChunkSizeVersion.*:EveryVersion.*'

# A bundled GoogleTest program, the tests FILTER selects (all without one).
run_gtest() {
  local t=$1 filter=${2:-*}
  echo "== $t ($filter)"
  "$BUNDLE/bin/$t" --gtest_brief=0 --gtest_filter="$filter" --gtest_output="xml:$WORK/$t.xml"
}

step_preflight() {
  cat "$WORK/discovery.log"
  echo "== bundle: $BUNDLE"
  head -5 "$BUNDLE/MANIFEST.txt" 2>/dev/null
  echo "== libraries of the bundled programs (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  ldd_report | sort -u >"$WORK/libraries.txt"
  cat "$WORK/libraries.txt"
  local missing outside
  missing=$(grep -c '^MISSING' "$WORK/libraries.txt")
  outside=$(grep -c '^OUTSIDE' "$WORK/libraries.txt")
  echo "== acceltune probe --json (also in probe.json)"
  # Once: each run initialises CUDA, which costs the deadline a second or two.
  "$BUNDLE/bin/acceltune" probe --json >"$WORK/probe.json" 2>"$WORK/probe.err"
  local probe_rc=$?
  cat "$WORK/probe.json" "$WORK/probe.err"
  local nccl
  nccl=$(grep -o '"nccl": *"[^"]*"' "$WORK/probe.json" | head -1 | sed 's/.*: *"//; s/"$//')
  echo "== NCCL version (ncclGetVersion): ${nccl:-unknown}"
  note "libcudart ${CUDART:-not found}; libnccl ${NCCL_LIB:-not found}; NCCL ${nccl:-unknown};" \
    "libraries: $missing unresolved, $outside outside the bundle; probe exit $probe_rc"
  [ "$missing" -eq 0 ] && [ "$outside" -eq 0 ] && [ $probe_rc -eq 0 ]
}

# Libraries a bundled program may take from the machine: those of the list (glibc, the CUDA
# runtime and driver, NCCL), and the C++ runtime where the machine's is new enough.
machine_lib() {
  local p
  while read -r p; do
    case $p in ''|'#'*) continue ;; esac
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    [[ $1 == $p ]] && return 0
  done <"$MACHINE_LIBS"
  return 1
}
outside_ok() {
  case $1 in
    libstdc++.so*|libgcc_s.so*) [ -z "$COMPAT" ] && return 0 ;;
  esac
  machine_lib "$1"
}

# One line per library of every bundled program: MISSING (not found), OUTSIDE (found outside the
# bundle, and not glibc, CUDA or NCCL) or "machine" (glibc, CUDA, NCCL from the machine).
ldd_report() {
  local f name arrow path
  for f in "$BUNDLE"/bin/* "$BUNDLE"/lib/*.so*; do
    [ -L "$f" ] && continue
    while read -r name arrow path _; do
      if [ "$arrow" != "=>" ]; then
        outside_ok "$name" || echo "OUTSIDE  $(basename "$f"): $name"
        continue
      fi
      case $path in
        not) echo "MISSING  $(basename "$f"): $name not found" ;;
        "$BUNDLE"/*) ;;
        *) if outside_ok "$name"; then echo "machine  $name => $path"
           else echo "OUTSIDE  $(basename "$f"): $name => $path (should come from the bundle)"; fi ;;
      esac
    done < <(ldd "$f" 2>&1 | grep -v 'statically linked')
  done
}

step_unit_tests() {
  local rc=0
  { run_gtest test_unit "$CPU_TESTS_UNIT" || rc=1; run_gtest test_integration "$CPU_TESTS_PLUGIN" || rc=1; } \
    >"$WORK/unit-tests.out" 2>&1
  cat "$WORK/unit-tests.out"
  note "$(gtest_counts "$WORK/unit-tests.out")"
  return $rc
}

step_gpu_tests() {
  run_gtest test_gpu >"$WORK/gpu-tests.out" 2>&1
  local rc=$?
  cat "$WORK/gpu-tests.out"
  # Why tests skipped: the line after GoogleTest's "Skipped".
  local reasons
  reasons=$(grep -A1 ': Skipped$' "$WORK/gpu-tests.out" | grep -v ': Skipped$\|^--$' | cut -c1-80 | sort -u |
    paste -sd ';' -)
  note "$(gtest_counts "$WORK/gpu-tests.out")${reasons:+ (skips: $reasons)}"
  [ $rc -eq 0 ] || return 1
  # A GPU test that skips because it finds no GPU, on a machine that has one, did not run.
  if grep -A1 ': Skipped$' "$WORK/gpu-tests.out" | grep -q 'needs a CUDA GPU\|none found'; then
    echo "gpu-check: GPU tests skipped for want of a GPU on a machine that has one"
    return 1
  fi
}

# The link limit a copy figure is compared with, in GB/s, and how it was found.
link_limit() {
  local dir=$1
  if [ "$dir" = d2d ]; then
    # Device memory: the vendor's figure counts bytes read and written; a copy moves each byte twice.
    case $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) in
      *H200*) echo "4800 HBM3e, H200 (bytes read and written: a copy of N bytes moves 2N)" ;;
      *) echo "0 no published memory bandwidth known to this check" ;;
    esac
    return
  fi
  local gen width
  gen=$(nvidia-smi --query-gpu=pcie.link.gen.max --format=csv,noheader 2>/dev/null | head -1 | tr -dc 0-9)
  width=$(nvidia-smi --query-gpu=pcie.link.width.max --format=csv,noheader 2>/dev/null | head -1 | tr -dc 0-9)
  local rate
  case $gen in 1) rate=2.5 ;; 2) rate=5 ;; 3) rate=8 ;; 4) rate=16 ;; 5) rate=32 ;; 6) rate=64 ;; *) rate= ;; esac
  if [ -n "$rate" ] && [ -n "$width" ]; then
    echo "$(awk -v r="$rate" -v w="$width" 'BEGIN { printf "%.0f", r * w / 8 }') PCIe Gen$gen x$width, per direction before protocol overhead"
  else
    echo "64 PCIe Gen5 x16 assumed (nvidia-smi did not say), per direction before protocol overhead"
  fi
}

step_copy() {
  local dir=$1 space
  case $dir in h2d) space=cuda-copy ;; d2h) space=cuda-copy-d2h ;; d2d) space=cuda-copy-d2d ;; esac
  local study=$WORK/copy-$dir-study
  rm -rf "$study"
  "$BUNDLE/bin/acceltune" search --space "$space" --strategy bayes --budget 14 --time-limit 25 --sizes 256M \
    --seed 1 --max-seconds 0.3 --certify-top 2 --certify-rounds 3 --no-telemetry --out "$study" || return 1
  "$BUNDLE/bin/acceltune" best "$study"
  local limit
  limit=$(link_limit "$dir")
  echo "link limit: $limit GB/s"
  local line
  line=$(python3 - "$study/best.json" "$dir" "$limit" <<'EOF'
import json, sys
best = json.load(open(sys.argv[1]))
d2d = sys.argv[2] == "d2d"
limit = float(sys.argv[3].split()[0])
s = best["sizes"][0]
c = s.get("certified") or {}
cands = {k.get("trial"): k for k in c.get("candidates", [])}
k = cands.get(c.get("trial"))
if c.get("value") is not None:  # the medians behind the certified interval
    default, top, how = c["default_value"], c["value"], "certified"
elif k:
    default, top, how = k["default_value"], k["value"], "certified"
else:
    default, top, how = s.get("default_value"), s.get("value"), "searched, not certified"
def share(v):
    if not v or limit <= 0:
        return "-"
    return f"{100 * (2 * v if d2d else v) / limit:.0f}%"
ratio = c.get("ratio")
gain = f"{ratio:.2f}x [{c.get('ci_low', 0):.2f}, {c.get('ci_high', 0):.2f}]" if ratio else "-"
sig = "" if c.get("significant") else " (no significant gain)"
print(f"default {default:.1f} GB/s ({share(default)}), {how} best {top:.1f} GB/s ({share(top)}), "
      f"gain {gain}{sig}; limit {sys.argv[3]}")
EOF
  ) || line="best.json could not be read (python3 missing?); see the log"
  echo "$line"
  note "$line"
}

step_nccl_init() {
  local table=$WORK/nccl-tuner.conf
  # One row per collective the bench runs, for one node and one rank: the plugin reads it at init
  # (and says how many rows apply). NCCL never asks a tuner about a one-rank communicator.
  cat >"$table" <<'EOF'
# acceltune nccl-tuner table (GPU check): collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff
allreduce,0,67108864,ring,simple,-1,1,1,-1,-1
EOF
  rm -f "$WORK"/nccl-debug.*
  env NCCL_TUNER_PLUGIN="$BUNDLE/lib/libnccl-tuner-acceltune.so" ACCELTUNE_NCCL_TUNER_TABLE="$table" \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING NCCL_DEBUG_FILE="$WORK/nccl-debug.%h.%p.log" \
    "$BUNDLE/bin/acceltune" bench --space nccl-allreduce --sizes 1M,64M --max-seconds 0.5
  local rc=$?
  echo "== NCCL's log: tuner lines"
  grep -h 'TUNER\|acceltune tuner' "$WORK"/nccl-debug.* 2>/dev/null | head -20
  local using
  using=$(grep -h 'TUNER/Plugin: Using acceltune' "$WORK"/nccl-debug.* 2>/dev/null | head -1 | sed 's/^.*NCCL INFO //')
  if [ -z "$using" ]; then
    note "bench exit $rc; no 'TUNER/Plugin: Using acceltune' in NCCL's log"
    return 1
  fi
  note "bench exit $rc; NCCL: $using (one rank: NCCL does not ask the tuner)"
  [ $rc -eq 0 ]
}

# The list of what the machine provides: in the bundle, or beside this script in the source tree.
here=$(dirname "$0")
MACHINE_LIBS=$here/machine-libs.txt
[ -f "$MACHINE_LIBS" ] || MACHINE_LIBS=$here/gpu-machine-libs.txt

# `gpu-check.sh --machine-lib NAME`: exit 0 when the GPU machine provides NAME (gpu-bundle.sh and
# the bundle test ask this).
if [ "${1:-}" = "--machine-lib" ]; then
  machine_lib "$2"
  exit $?
fi

if [ "${1:-}" = "--step" ]; then
  STEP=$2
  case $STEP in
    preflight) step_preflight ;;
    unit-tests) step_unit_tests ;;
    gpu-tests) step_gpu_tests ;;
    copy-h2d|copy-d2h|copy-d2d) step_copy "${STEP#copy-}" ;;
    nccl-init) step_nccl_init ;;
    *) echo "gpu-check: unknown step $STEP" >&2; exit 2 ;;
  esac
  exit $?
fi

# ------------------------------------------------------------------------------------------------
# The parent: finds the bundle and the libraries, runs the steps under the deadline.

case ${1:-} in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") ;;
  *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

T0=$SECONDS
DEADLINE=${GPU_CHECK_DEADLINE:-270}
[ "$DEADLINE" -gt 300 ] && DEADLINE=300
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
if [ -z "${BUNDLE:-}" ]; then
  if [ -x "$(dirname "$SELF")/bin/acceltune" ]; then BUNDLE=$(dirname "$SELF")
  else BUNDLE=$(pwd)/gpu-bundle; fi
fi
if [ ! -x "$BUNDLE/bin/acceltune" ]; then
  echo "gpu-check: no bundle at $BUNDLE (run tools/gpu-bundle.sh, or set BUNDLE)" >&2
  exit 2
fi
BUNDLE=$(cd "$BUNDLE" && pwd)
OUT=${OUT:-$(pwd)/gpu-check-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/acceltune-gpu-check.XXXXXX")
SUMMARY=$OUT/summary.txt
export BUNDLE WORK

# The first file among these that exists, and how it was found.
find_lib() {
  local name=$1 dir
  shift
  for dir in "$@"; do
    if [ -e "$dir/$name" ]; then echo "$dir/$name"; return 0; fi
  done
  "$LDCONFIG" -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}'
}
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)

{
  echo "== machine"
  date -u
  uname -srm
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max \
      --format=csv 2>&1 | head -9
  else
    echo "nvidia-smi: not installed"
  fi
  command -v nvcc >/dev/null && nvcc --version | tail -2
  # Where CUDA 13 and NCCL may be: the toolkit, then the Python wheels, then the system's path.
  TOOLKIT_DIRS=()
  for d in ${CUDA_HOME:+"$CUDA_HOME"} /usr/local/cuda /usr/local/cuda-13*; do
    [ -d "$d" ] && TOOLKIT_DIRS+=("$d/lib64" "$d/lib" "$d/targets/x86_64-linux/lib")
  done
  if command -v nvcc >/dev/null; then TOOLKIT_DIRS+=("$(dirname "$(command -v nvcc)")/../lib64"); fi
  WHEEL_DIRS=()
  if command -v python3 >/dev/null; then
    while IFS= read -r d; do
      [ -d "$d" ] || continue
      for lib in "$d"/*/lib "$d"/*/*/lib; do [ -d "$lib" ] && WHEEL_DIRS+=("$lib"); done
    done < <(python3 - 2>/dev/null <<'EOF'
import importlib.util, site, sys, os
seen = []
spec = importlib.util.find_spec("nvidia")
if spec and spec.submodule_search_locations:
    seen += list(spec.submodule_search_locations)
for p in site.getsitepackages() + [site.getusersitepackages()] + sys.path:
    d = os.path.join(p, "nvidia")
    if os.path.isdir(d) and d not in seen:
        seen.append(d)
print("\n".join(seen))
EOF
    )
  fi
  echo "== looked for libcudart and libnccl in: ${TOOLKIT_DIRS[*]} ${WHEEL_DIRS[*]} (then ldconfig)"
} >"$WORK/discovery.log" 2>&1
CUDART=$(find_lib libcudart.so.13 "${TOOLKIT_DIRS[@]}" "${WHEEL_DIRS[@]}")
NCCL_LIB=$(find_lib libnccl.so.2 "${TOOLKIT_DIRS[@]}" "${WHEEL_DIRS[@]}")
{
  echo "libcudart: ${CUDART:-not found}"
  echo "libnccl: ${NCCL_LIB:-not found}"
} >>"$WORK/discovery.log"
export CUDART NCCL_LIB COMPAT

# The bundle's C++ runtime (lib/compat) only where the machine's is older than the bundle needs;
# a newer one serves the bundle and whatever else the check starts.
needs=$(cat "$BUNDLE/lib/compat/GLIBCXX" 2>/dev/null)
system_cxx=$("$LDCONFIG" -p 2>/dev/null | awk '$1 == "libstdc++.so.6" {print $NF; exit}')
COMPAT=""
if [ -n "$needs" ] && ! { [ -n "$system_cxx" ] && grep -qa "$needs" "$system_cxx"; }; then
  COMPAT=$BUNDLE/lib/compat
fi
echo "libstdc++: bundle needs ${needs:-nothing}; machine's: ${system_cxx:-none}; using" \
  "$([ -n "$COMPAT" ] && echo "the bundle's" || echo "the machine's")" >>"$WORK/discovery.log"
LD_LIBRARY_PATH=$BUNDLE/lib${COMPAT:+:$COMPAT}
for lib in "$CUDART" "$NCCL_LIB"; do
  [ -n "$lib" ] || continue
  case ":$LD_LIBRARY_PATH:" in *":$(dirname "$lib"):"*) ;; *) LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$lib") ;; esac
done
export LD_LIBRARY_PATH
# The bundle's programs find each other through these (tests/helpers.hpp).
export ACCELTUNE_BINARY=$BUNDLE/bin/acceltune
export ACCELTUNE_SPACES_PATH=$BUNDLE/share/acceltune/spaces
export ACCELTUNE_NCCL_PLUGIN=$BUNDLE/lib/libnccl-tuner-acceltune.so
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

GPU_REASON=""
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  GPU_REASON="no GPU: nvidia-smi lists none"
  command -v nvidia-smi >/dev/null || GPU_REASON="no GPU: nvidia-smi is not installed"
fi

RESERVE=10  # seconds kept for packing the logs
SETSID=$(command -v setsid || true)  # a step in a session of its own, so SIGTERM reaches all of it
FAILED=0
SKIPPED_GPU=0
CURRENT=""
CURRENT_PID=""
STEP_T0=0

{
  echo "acceltune GPU check, $(date -u +%FT%TZ), $(nvidia-smi -L 2>/dev/null | head -1 | cut -c1-70)"
  echo "bundle: $(sed -n 2p "$BUNDLE/MANIFEST.txt" 2>/dev/null); deadline ${DEADLINE}s"
  printf '%-11s %-16s %6s  %s\n' step state time note
} >"$SUMMARY"
cat "$SUMMARY"

record() {  # NAME STATE SECONDS NOTE
  local line
  line=$(printf '%-11s %-16s %5ss  %s' "$1" "$2" "$3" "$4")
  echo "$line" >>"$SUMMARY"
  echo "$line"
}

pack() {
  tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$WORK" . 2>/dev/null && rm -rf "$WORK"
  # Nothing of the bundle outlives the check (a stopped step's programs, workers, ranks).
  pkill -KILL -f "^$BUNDLE/bin/" 2>/dev/null
  local i
  for i in $(seq 30); do
    pgrep -f "^$BUNDLE/bin/" >/dev/null || break
    sleep 0.1
  done
}

on_term() {
  if [ -n "$CURRENT" ]; then
    kill -TERM -- "-$CURRENT_PID" 2>/dev/null || kill -TERM "$CURRENT_PID" 2>/dev/null
    record "$CURRENT" "interrupted" $((SECONDS - STEP_T0)) "SIGTERM at $((SECONDS - T0))s of ${DEADLINE}s"
  fi
  echo "interrupted by SIGTERM after $((SECONDS - T0))s" >>"$SUMMARY"
  pack
  exit 143
}
trap on_term TERM INT

# step NAME LIMIT [needs-gpu]: runs `gpu-check.sh --step NAME` with at most LIMIT seconds, cut to
# what the deadline leaves.
step() {
  local name=$1 limit=$2 needs_gpu=${3:-}
  if [ -n "$needs_gpu" ] && [ -n "$GPU_REASON" ]; then
    record "$name" skipped 0 "$GPU_REASON"
    SKIPPED_GPU=1
    return
  fi
  local left=$((DEADLINE - RESERVE - (SECONDS - T0)))
  if [ $left -lt 5 ]; then
    record "$name" skipped 0 "no time left before the ${DEADLINE}s deadline"
    FAILED=1
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  CURRENT=$name
  STEP_T0=$SECONDS
  rm -f "$WORK/$name.note"
  $SETSID timeout --kill-after=5 "$limit" "$SELF" --step "$name" >"$WORK/$name.log" 2>&1 &
  CURRENT_PID=$!
  wait $CURRENT_PID
  local rc=$?
  CURRENT=""
  local took=$((SECONDS - STEP_T0)) state note
  note=$(cat "$WORK/$name.note" 2>/dev/null)
  case $rc in
    0) state=ok ;;
    77) state=skipped ;;
    124|137) state="timeout(${limit}s)"; FAILED=1 ;;
    *) state="failed(rc=$rc)"; FAILED=1
       [ -n "$note" ] || note=$(grep -v '^\s*$' "$WORK/$name.log" | tail -1 | cut -c1-150) ;;
  esac
  record "$name" "$state" "$took" "$note"
}

step preflight 60
step unit-tests 60
step gpu-tests 100 gpu
step copy-h2d 40 gpu
step copy-d2h 40 gpu
step copy-d2d 40 gpu
step nccl-init 40 gpu

total=$((SECONDS - T0))
if [ $FAILED -ne 0 ]; then verdict="FAILED"; rc=1
elif [ $SKIPPED_GPU -ne 0 ]; then verdict="GPU steps skipped ($GPU_REASON)"; rc=4
else verdict="all steps passed"; rc=0; fi
echo "$verdict in ${total}s of ${DEADLINE}s; logs: gpu-check-logs.tar.gz" >>"$SUMMARY"
pack
tail -1 "$SUMMARY"
exit $rc
