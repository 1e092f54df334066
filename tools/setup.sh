#!/usr/bin/env bash
# Installs the Debian packages acceltune builds with. Idempotent: installs only what is missing,
# and refreshes the package lists only when something is.
set -euo pipefail

packages=(
  cmake g++ gcc make pkg-config
  nlohmann-json3-dev   # JSON: spaces, studies, trials
  libfmt-dev           # formatting
  libmuparser-dev      # constraint expressions
  libcli11-dev         # command line
  libeigen3-dev        # the Gaussian process of the bayes strategy
  libnlopt-dev libnlopt-cxx-dev  # its hyper-parameter fits (L-BFGS)
  libgtest-dev         # tests
  libbenchmark-dev     # engine benchmarks (not run as tests)
  iproute2             # network namespaces and veth pairs (tcp-stream --netns, two-host tests)
  iperf3               # acceltune verify: the plain client of tcp-stream studies
  libucx-dev ucx-utils # the ucx kernel; ucx_perftest for its cross-check
  libopenmpi-dev openmpi-bin  # the mpi-coll kernel and distributed studies under mpirun
  libibverbs-dev       # the verbs kernel (RDMA)
  libsodium-dev        # authenticated control channels (serve, --peer, NCCL rank control)
  libhwloc-dev         # acceltune probe: sockets, cores, NUMA nodes, GPU and NIC affinity
  chromium             # only for test_report: renders the HTML report headless (the test skips without it)
)

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
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
