// Probe section "versions": the communication libraries this machine would run, asked at run
// time (so the probe tells what a job loads, not only what acceltune was built with): NCCL
// (ncclGetVersion), UCX (ucp_get_version), MPI (MPI_Get_library_version, which may be called
// before MPI_Init). A library that does not load is "absent". The paths found at build time are
// tried after the system's search path.
#include <algorithm>
#include <string>

#include "probe/util.hpp"
#include "probe/fingerprint.hpp"

#ifndef ACCELTUNE_PROBE_NCCL_PATH
#define ACCELTUNE_PROBE_NCCL_PATH ""
#endif

namespace acceltune {
namespace {

std::string nccl_version() {
  void* h = probe_util::open_first({"libnccl.so.2", "libnccl.so", ACCELTUNE_PROBE_NCCL_PATH});
  auto get = probe_util::symbol<int (*)(int*)>(h, "ncclGetVersion");
  int code = 0;
  if (!get || get(&code) != 0 || code <= 0) return "absent";
  // 2.9 and later: major*10000 + minor*100 + patch; before: major*1000 + minor*100 + patch.
  if (code >= 20900) return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

std::string ucx_version() {
  void* h = probe_util::open_first({"libucp.so.0", "libucp.so"});
  auto get = probe_util::symbol<void (*)(unsigned*, unsigned*, unsigned*)>(h, "ucp_get_version");
  if (!get) return "absent";
  unsigned major = 0, minor = 0, release = 0;
  get(&major, &minor, &release);
  return fmt::format("{}.{}.{}", major, minor, release);
}

std::string mpi_version() {
  // Open MPI's library, then MPICH's (and its derivatives').
  void* h = probe_util::open_first({"libmpi.so.40", "libmpi.so.12", "libmpi.so"});
  auto get = probe_util::symbol<int (*)(char*, int*)>(h, "MPI_Get_library_version");
  if (!get) return "absent";
  std::string buf(8192, '\0');  // MPI_MAX_LIBRARY_VERSION_STRING is at most 8192 in the common MPIs
  int len = 0;
  if (get(buf.data(), &len) != 0 || len <= 0) return "absent";
  buf.resize(static_cast<size_t>(std::min<int>(len, 8191)));
  // "Open MPI v4.1.4, package: Debian OpenMPI, ..." or "MPICH Version:\t4.0.2\nMPICH Release date: ..."
  std::string first = buf.substr(0, buf.find_first_of("\n,"));
  while (!first.empty() && (first.back() == ' ' || first.back() == '\t' || first.back() == '\0')) first.pop_back();
  for (char& c : first) {
    if (c == '\t') c = ' ';
  }
  return first;
}

void probe_versions(Json& probe) {
  Json& v = probe["versions"];
  v["nccl"] = nccl_version();
  v["ucx"] = ucx_version();
  v["mpi"] = mpi_version();
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::ProbeSection, "versions",
                   (::acceltune::ProbeSection{"NCCL, UCX and MPI versions, asked at run time", 45,
                                              ::acceltune::probe_versions}))
