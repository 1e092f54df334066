#!/usr/bin/env bash
# Installs the Debian packages acceltune needs, in two parts: what the product builds and runs
# with (the default), and with --tests also what only the test suite and the benchmarks need.
# Idempotent: installs only what is missing, and refreshes the package lists only when something is.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tools/setup.sh [--tests]
  (no option)  the packages the acceltune command, the runtime loader and the NCCL plugin need
  --tests      those too, and what only the tests and benchmarks need (GoogleTest, Google
               Benchmark, Chromium for the report check, ccache for faster rebuilds, pmccabe
               for the size check)
EOF
}

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

product=(
  cmake g++ gcc make pkg-config
  ninja-build          # the build tool tools/build.sh prefers (make works too)
  nlohmann-json3-dev   # JSON: spaces, studies, trials
  libfmt-dev           # formatting
  libmuparser-dev      # constraint expressions
  libcli11-dev         # command line
  libeigen3-dev        # the Gaussian process of the bayes strategy
  libnlopt-dev libnlopt-cxx-dev  # its hyper-parameter fits (L-BFGS)
  iproute2             # network namespaces and veth pairs (tcp-stream --netns, two-host tests)
  iperf3               # the TCP cross-check and fidelity benchmarks (tools/bench/)
  libucx-dev ucx-utils # the ucx kernel; ucx_perftest for its cross-check
  libopenmpi-dev openmpi-bin  # the mpi-coll kernel and distributed studies under mpirun
  libibverbs-dev       # the verbs kernel (RDMA)
  libsodium-dev        # authenticated control channels (serve, --peer, NCCL rank control)
  libhwloc-dev         # acceltune probe: sockets, cores, NUMA nodes, GPU and NIC affinity
)
tests=(
  libgtest-dev         # the test suite
  libbenchmark-dev     # engine benchmarks (built with the tests, not run as tests)
  ccache               # used by the build when present: rebuilds after a change or a fresh clone
  pmccabe              # function lengths for the size check (tests/check_sizes.sh)
  chromium             # only for the report's check: renders the HTML report headless (it skips without it)
)

packages=("${product[@]}")
[ "$with_tests" -eq 1 ] && packages+=("${tests[@]}")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root or install sudo; missing: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
start=$SECONDS
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: installed ${#missing[@]} packages in $((SECONDS - start)) s"
