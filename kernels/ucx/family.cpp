// The ucx family: UCX transports and protocol thresholds within the node and over TCP. UCX reads
// every UCX_* variable of a job, whichever library started it.
#include "tuner/family.hpp"

namespace acceltune {
namespace {

// UCX_TLS naming only transports within a node (measured on one node) leaves a job across nodes
// unable to connect.
std::string ucx_single_node_only(const std::string& var, const std::string& value) {
  if (var != "UCX_TLS" || value.empty() || value == "all" || value[0] == '^') return "";
  for (const char* net : {"tcp", "rc", "ud", "dc", "ib", "rdmacm", "gga"}) {
    std::string list = "," + value + ",";
    if (list.find(std::string(",") + net) != std::string::npos) return "";
  }
  return fmt::format("{}={} names no network transport: measured within one node, it leaves a job across nodes "
                     "unable to connect; for single-node jobs it may be uncommented",
                     var, value);
}

}  // namespace
}  // namespace acceltune

ACCELTUNE_REGISTER(::acceltune::FamilyInfo, "ucx",
                   (::acceltune::FamilyInfo{
                       .what = "UCX transports and protocol thresholds, within the node and over TCP",
                       .order = 30,
                       .kernels = {"ucx"},
                       .spaces = {"ucx-shm", "ucx-tcp"},
                       .bringup = ::acceltune::always_runs(
                           "UCX transports and protocol thresholds, within the node and over TCP",
                           {{"ucx", "ucx-shm", nullptr, {}, 1, 10}, {"ucx", "ucx-tcp", nullptr, {}, 1, 10}}),
                       .env_prefixes = {"UCX_"},
                       .single_node_only = ::acceltune::ucx_single_node_only,
                       .one_env_for_all_paths = true,
                       .bundle_files = {{.name = "ucx.env",
                                         .env_prefix = "UCX_",
                                         .about = "The UCX variables of acceltune.env, for UCX_* environments and "
                                                  "ucx_perftest.",
                                         .when_empty = "no UCX variable: UCX keeps its own defaults"}},
                       .links = {"host-memory", "loopback", "veth", "nic"},
                       .far_ends = {"ucx"}}))
