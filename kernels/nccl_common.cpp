#include "kernels/nccl_common.hpp"

#include <algorithm>
#include <cstdlib>

extern char** environ;

namespace acceltune {

const std::vector<std::string>& nccl_op_names() {
  static const std::vector<std::string> names = {"allreduce", "allgather", "reduce_scatter", "broadcast",
                                                 "reduce",    "alltoall",  "sendrecv"};
  return names;
}

std::optional<NcclOp> nccl_op_from_string(std::string_view name) {
  const auto& names = nccl_op_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<NcclOp>(i);
  }
  return std::nullopt;
}

std::string_view to_string(NcclOp op) { return nccl_op_names()[static_cast<size_t>(op)]; }

double nccl_busbw_factor(NcclOp op, int nranks) {
  const double n = nranks;
  switch (op) {
    case NcclOp::allreduce: return 2.0 * (n - 1) / n;
    case NcclOp::allgather:
    case NcclOp::reduce_scatter:
    case NcclOp::alltoall: return (n - 1) / n;
    case NcclOp::broadcast:
    case NcclOp::reduce:
    case NcclOp::sendrecv: return 1.0;
  }
  return 1.0;
}

uint64_t nccl_effective_bytes(NcclOp op, uint64_t bytes, int nranks) {
  uint64_t elements = bytes / sizeof(float);
  const bool split = op == NcclOp::allgather || op == NcclOp::reduce_scatter || op == NcclOp::alltoall;
  if (split) elements = elements / static_cast<uint64_t>(nranks) * static_cast<uint64_t>(nranks);
  return elements * sizeof(float);
}

const std::vector<std::string>& nccl_algorithms() {
  static const std::vector<std::string> a = {"default", "Ring", "Tree", "CollNetDirect", "CollNetChain", "NVLS",
                                             "NVLSTree", "PAT"};
  return a;
}

const std::vector<std::string>& nccl_protocols() {
  static const std::vector<std::string> p = {"default", "LL", "LL128", "Simple"};
  return p;
}

std::string nccl_hardware_excludes(NcclOp op, const std::string& algo, const std::string& proto,
                                   const NcclHardware& hw) {
  (void)op;
  if ((algo == "NVLS" || algo == "NVLSTree") && !hw.multicast) {
    return "NVLS needs NVSwitch multicast (NVLink SHARP), which this GPU lacks";
  }
  if (algo.rfind("CollNet", 0) == 0 && !hw.collnet) return "CollNet needs a SHARP network plugin, which is not loaded";
  // LL128 relies on 128-byte stores arriving whole, which NCCL guarantees from Volta on only.
  if (proto == "LL128" && hw.compute_major < 7) return "LL128 needs a Volta or newer GPU";
  return "";
}

void nccl_unset_default_env() {
  std::vector<std::string> names;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || kv.rfind("NCCL_", 0) != 0) continue;
    const std::string v = kv.substr(eq + 1);
    if (v == "default" || v.empty()) names.push_back(kv.substr(0, eq));
  }
  for (const auto& n : names) ::unsetenv(n.c_str());
}

}  // namespace acceltune
