#!/usr/bin/env bash
# Configures and builds acceltune in ./build (Release with debug info).
# Without --tests it builds the product only: the acceltune command, the runtime loader, the NCCL
# tuner plugin and the MPI client `verify` starts. With --tests it builds the test programs and
# benchmarks too. Other arguments go to the CMake configure step, e.g. -DACCELTUNE_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."

with_tests=0
args=()
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    -h|--help)
      sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
      exit 0 ;;
    *) args+=("$arg") ;;
  esac
done

# Ninja when it is installed (tools/setup.sh installs it); an existing build folder keeps the
# generator it was configured with.
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then
  args=(-G Ninja "${args[@]}")
fi
if [ "$with_tests" -eq 1 ]; then
  args+=(-DACCELTUNE_BUILD_TESTS=ON)
fi

start=$SECONDS
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${args[@]}" >/dev/null
if [ "$with_tests" -eq 1 ]; then
  cmake --build build -j"$(nproc)"
  echo "build: product, tests and benchmarks in $((SECONDS - start)) s"
else
  cmake --build build -j"$(nproc)" --target product
  echo "build: product in $((SECONDS - start)) s (the tests: tools/build.sh --tests)"
fi
