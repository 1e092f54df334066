#!/usr/bin/env bash
# Configures and builds acceltune in ./build (Release with debug info, all tests).
# Extra arguments go to the CMake configure step, e.g. -DACCELTUNE_WERROR=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
