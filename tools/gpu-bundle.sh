#!/usr/bin/env bash
# Packs what the GPU check runs into a relocatable folder (default ./gpu-bundle, git-ignored) for
# a bare GPU machine: one with the NVIDIA driver, the CUDA toolkit and NCCL (from the toolkit or
# Python wheels), but none of the Debian packages acceltune builds with.
#
#   tools/gpu-bundle.sh                      # Release build with CUDA and NCCL in build-gpubundle/, then pack
#   tools/gpu-bundle.sh --from-build build   # pack an existing build tree instead of building
#   tools/gpu-bundle.sh --out DIR            # where the bundle goes (replaced if it exists)
#
# The bundle:
#   bin/       acceltune and the test programs the check runs, stripped
#   lib/       the NCCL tuner plugin, the runtime loader (libacceltune) and every library `ldd`
#              names for them, except glibc, the CUDA runtime and driver, and NCCL (found on the
#              GPU machine by gpu-check.sh); the C++ runtime in lib/compat, for a machine whose
#              own is older than the bundle needs
#   share/acceltune/spaces/   the shipped spaces (where acceltune looks beside its binary)
#   gpu-check.sh              the check (tools/gpu-check.sh)
#   machine-libs.txt          the libraries the GPU machine provides (tools/gpu-machine-libs.txt)
#   MANIFEST.txt              what was built from which commit, and each file's size
# Nothing in it names a path of the build machine: acceltune finds its spaces beside itself, and
# the test programs read ACCELTUNE_BINARY, ACCELTUNE_SPACES_PATH and ACCELTUNE_NCCL_PLUGIN, which
# gpu-check.sh sets. The bundle must stay within 48 MiB (the GPU machine receives at most 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

BUILD=$ROOT/build-gpubundle
OUTDIR=$ROOT/gpu-bundle
DO_BUILD=1
JOBS=$(nproc)
LIMIT_MIB=48

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --from-build) BUILD=$(cd "$2" && pwd); DO_BUILD=0; shift 2 ;;
    --out) OUTDIR=$2; shift 2 ;;
    -j) JOBS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-bundle: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

# The test programs the check runs (each also runs here without a GPU, skipping what needs one; of
# test_unit and test_integration the check runs the GPU spaces' and the plugin's tests).
TESTS=(test_gpu test_unit test_integration)

if [ $DO_BUILD -eq 1 ]; then
  echo "gpu-bundle: building in $BUILD (Release, CUDA architectures 80;90)"
  mkdir -p "$BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="80;90" \
    -DACCELTUNE_WITH_CUDA=ON -DACCELTUNE_WITH_NCCL=ON -DACCELTUNE_WERROR=OFF -DACCELTUNE_TEST_SEAMS=OFF >"$BUILD/configure.log" 2>&1 ||
    { tail -20 "$BUILD/configure.log" >&2; echo "gpu-bundle: configure failed (log: $BUILD/configure.log)" >&2; exit 1; }
  cmake --build "$BUILD" -j"$JOBS" --target acceltune nccl_tuner_acceltune acceltune_loader "${TESTS[@]}"
fi

cache=$BUILD/CMakeCache.txt
[ -f "$cache" ] || { echo "gpu-bundle: $BUILD is not a build tree (no CMakeCache.txt)" >&2; exit 2; }
with() { grep -q "^ACCELTUNE_WITH_$1:BOOL=ON" "$cache"; }
if ! with CUDA || ! with NCCL; then
  echo "gpu-bundle: warning: $BUILD was configured without CUDA or NCCL; the bundle's GPU steps will say so" >&2
fi

# The files to bundle, and where each goes.
declare -A PLACE=()
PLACE[$BUILD/tools/acceltune]=bin/acceltune
for t in "${TESTS[@]}"; do PLACE[$BUILD/tests/$t]=bin/$t; done
PLACE[$BUILD/tools/nccl-plugin/libnccl-tuner-acceltune.so]=lib/libnccl-tuner-acceltune.so
loader=$(ls "$BUILD"/tools/loader/libacceltune.so.*.*.* 2>/dev/null | head -1 || true)
[ -n "$loader" ] && PLACE[$loader]=lib/$(objdump -p "$loader" | awk '/SONAME/ {print $2}')
for src in "${!PLACE[@]}"; do
  [ -f "$src" ] || { echo "gpu-bundle: $src is missing; build it first (or drop --from-build)" >&2; exit 1; }
done

# Libraries found on the GPU machine, never bundled (tools/gpu-machine-libs.txt).
MACHINE_LIBS=$ROOT/tools/gpu-machine-libs.txt
system_lib() { "$ROOT/tools/gpu-check.sh" --machine-lib "$1"; }

# Replace only an earlier bundle (or an empty folder), never a folder that holds anything else.
if [ -e "$OUTDIR" ] && [ ! -f "$OUTDIR/MANIFEST.txt" ] && [ -n "$(ls -A "$OUTDIR" 2>/dev/null)" ]; then
  echo "gpu-bundle: $OUTDIR exists and is not a bundle; give another --out" >&2
  exit 2
fi
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR/bin" "$OUTDIR/lib" "$OUTDIR/share/acceltune/spaces"
for src in "${!PLACE[@]}"; do
  dst=$OUTDIR/${PLACE[$src]}
  strip --strip-unneeded -o "$dst" "$src"
done
[ -n "$loader" ] && ln -s "$(basename "${PLACE[$loader]}")" "$OUTDIR/lib/libacceltune.so"
cp "$BUILD"/spaces/*.json "$OUTDIR/share/acceltune/spaces/"
cp "$ROOT/tools/gpu-check.sh" "$OUTDIR/gpu-check.sh"
cp "$MACHINE_LIBS" "$OUTDIR/machine-libs.txt"
chmod +x "$OUTDIR/gpu-check.sh"

# Every library ldd names for the bundled programs (ldd lists the whole closure).
declare -A DEPS=()
for src in "${!PLACE[@]}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    system_lib "$name" && continue
    [ "$path" = "not" ] && { echo "gpu-bundle: $src needs $name, which is not found here" >&2; exit 1; }
    DEPS[$name]=$path
  done < <(ldd "$src")
done
# The C++ runtime goes to lib/compat, which gpu-check.sh uses only where the machine's is older
# than the newest GLIBCXX version the bundle needs (a newer one must win: NCCL and CUDA may need it).
mkdir -p "$OUTDIR/lib/compat"
for name in "${!DEPS[@]}"; do
  case $name in libstdc++.so*|libgcc_s.so*) dir=lib/compat ;; *) dir=lib ;; esac
  strip --strip-unneeded -o "$OUTDIR/$dir/$name" "$(readlink -f "${DEPS[$name]}")"
done
objdump -T "$OUTDIR"/bin/* "$OUTDIR"/lib/*.so* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1 \
  >"$OUTDIR/lib/compat/GLIBCXX"

commit=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
{
  echo "acceltune GPU bundle"
  echo "commit: $commit"
  echo "packed: $(date -u +%FT%TZ)"
  echo "build: $(grep '^CMAKE_BUILD_TYPE:' "$cache" | cut -d= -f2), CUDA $(with CUDA && echo on || echo off)," \
    "NCCL $(with NCCL && echo on || echo off), CUDA architectures $(grep '^CMAKE_CUDA_ARCHITECTURES:' "$cache" | cut -d= -f2 | grep . || echo '80;90 (the project default)')"
  echo "found on the GPU machine, not bundled: glibc, libcudart, libcuda, libnvidia-*, libnccl (machine-libs.txt)"
  echo "lib/compat (used only where the machine's C++ runtime lacks $(cat "$OUTDIR/lib/compat/GLIBCXX")): libstdc++, libgcc_s"
  echo
  (cd "$OUTDIR" && find . -type f -printf '%10s  %P\n' | sort -k2)
} >"$OUTDIR/MANIFEST.txt"

bytes=$(du -sb "$OUTDIR" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "gpu-bundle: $OUTDIR: $mib MiB ($(find "$OUTDIR" -type f | wc -l) files, ${#DEPS[@]} bundled libraries)"
if [ "$bytes" -gt $((LIMIT_MIB * 1048576)) ]; then
  echo "gpu-bundle: the bundle is larger than $LIMIT_MIB MiB; the GPU machine receives at most 64 MiB in all" >&2
  exit 1
fi
