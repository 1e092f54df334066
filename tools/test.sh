#!/usr/bin/env bash
# Runs the test suite of ./build in stages, fastest first, each stage a set of ctest labels with
# its share of the CI budget; prints each stage's time and stops at the first stage that fails.
#
#   tools/test.sh                    every stage, in order
#   tools/test.sh fast mpi           only these stages
#   tools/test.sh --keep-going       every stage even after a failure
#   tools/test.sh --list             the stages, their labels and shares
#   tools/test.sh --build DIR        another build folder than ./build
# Build first with tools/build.sh --tests. Arguments after -- go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

# stage | ctest labels | share of the CI budget in seconds | what it holds
STAGES=(
  "fast|unit,integration|300|the core, strategies, spaces, the command line, kernels on this host, plugin, loader"
  "netns|netns|90|two hosts in network namespaces: tcp-stream, delivered gains through acceltune-tcp-client and ucx_perftest (root)"
  "mpi|mpi|150|mpi-coll under mpirun, delivered gains through the plain MPI client"
  "slow|slow|420|one whole bring-up of this node; a 4-rank search that verify loads"
  "bundle|bundle|90|the GPU bundle packed, moved and run without the build tree"
  "hardware|gpu,rdma|60|GPU and RDMA kernels on their hardware (they skip, with the reason, without it)"
  "docs|docs|420|every command block of README.md and docs/ as a user pastes it"
)

usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }

keep_going=0
build=build
wanted=()
ctest_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --keep-going) keep_going=1 ;;
    --build) [ $# -ge 2 ] || { echo "test: --build needs a folder" >&2; exit 2; }; build=$2; shift ;;
    --list)
      printf '%-9s %-18s %6s  %s\n' stage labels share "what"
      for s in "${STAGES[@]}"; do
        IFS='|' read -r name labels share what <<<"$s"
        printf '%-9s %-18s %5ss  %s\n' "$name" "$labels" "$share" "$what"
      done
      exit 0 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; ctest_args=("$@"); break ;;
    -*) echo "test: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) wanted+=("$1") ;;
  esac
  shift
done

[ -f "$build/CTestTestfile.cmake" ] || { echo "test: no test build in $build; run tools/build.sh --tests first" >&2; exit 2; }

all_labels=()
for s in "${STAGES[@]}"; do
  IFS='|' read -r name labels _ _ <<<"$s"
  IFS=',' read -r -a stage_labels <<<"$labels"
  all_labels+=("${stage_labels[@]}")
done
for w in "${wanted[@]}"; do
  printf '%s\n' "${STAGES[@]}" | cut -d'|' -f1 | grep -qx "$w" ||
    { echo "test: no stage '$w' (tools/test.sh --list)" >&2; exit 2; }
done

# A test in no stage would never run: refuse it.
label_re="^($(IFS='|'; echo "${all_labels[*]}"))\$"
orphans=$(ctest --test-dir "$build" -N -LE "$label_re" | grep -c 'Test *#' || true)
if [ "$orphans" -ne 0 ]; then
  echo "test: $orphans tests carry no stage's label:" >&2
  ctest --test-dir "$build" -N -LE "$label_re" | grep 'Test *#' >&2
  exit 2
fi

summary=()
failed=()
total_start=$SECONDS
for s in "${STAGES[@]}"; do
  IFS='|' read -r name labels share what <<<"$s"
  if [ ${#wanted[@]} -gt 0 ] && ! printf '%s\n' "${wanted[@]}" | grep -qx "$name"; then continue; fi
  re="^($(echo "$labels" | tr ',' '|'))\$"
  echo "== stage $name (labels $labels; share ${share} s): $what"
  start=$SECONDS
  rc=0
  ctest --test-dir "$build" -L "$re" --output-on-failure -j"$(nproc)" "${ctest_args[@]}" || rc=$?
  took=$((SECONDS - start))
  verdict=passed
  [ $rc -eq 0 ] || { verdict=FAILED; failed+=("$name"); }
  over=""
  [ "$took" -le "$share" ] || over=" (over its share of ${share} s)"
  echo "== stage $name: $verdict in ${took} s$over"
  summary+=("$(printf '%-9s %-7s %5d s  share %4d s%s' "$name" "$verdict" "$took" "$share" "$over")")
  if [ $rc -ne 0 ] && [ $keep_going -eq 0 ]; then break; fi
done

echo "== stages"
printf '%s\n' "${summary[@]}"
echo "== tests: $((SECONDS - total_start)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
  echo "test: failed: ${failed[*]}" >&2
  exit 1
fi
