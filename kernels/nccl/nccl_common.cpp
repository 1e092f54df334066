// The definitions behind kernels/nccl/nccl_common.hpp: what the nccl kernel knows without NCCL.
#include "kernels/nccl/nccl_common.hpp"

#include <algorithm>
#include <cstdlib>

extern char** environ;

namespace acceltune {

const std::vector<std::string>& nccl_op_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& row : collective_rows()) {
      if (row.nccl_kernel) out.emplace_back(row.name);
    }
    return out;
  }();
  return names;
}

std::optional<NcclOp> nccl_op_from_string(std::string_view name) {
  const CollectiveRow* row = find_collective(name);
  if (!row || !row->nccl_kernel) return std::nullopt;
  return row->op;
}

double nccl_busbw_factor(NcclOp op, int nranks) { return busbw_factor(collective_row(op), nranks); }

uint64_t nccl_effective_bytes(NcclOp op, uint64_t bytes, int nranks) {
  uint64_t elements = bytes / sizeof(float);
  if (collective_row(op).split) elements = elements / static_cast<uint64_t>(nranks) * static_cast<uint64_t>(nranks);
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
    return "NVLS needs NVSwitch multicast (NVLink SHARP) on every GPU, which this node lacks";
  }
  // NVLSTree is NVLS inside each node and a tree between nodes: NCCL disables it on one node.
  if (algo == "NVLSTree" && hw.nodes <= 1) return "NVLSTree runs between nodes; with one node NCCL disables it";
  // PAT runs with one GPU per node only.
  if (algo == "PAT" && hw.ranks_per_node > 1) return "PAT needs one GPU per node; NCCL disables it with more";
  if (algo.rfind("CollNet", 0) == 0 && !hw.collnet) return "CollNet needs a SHARP network plugin, which is not loaded";
  // LL128 relies on 128-byte stores arriving whole, which NCCL guarantees from Volta on only.
  if (proto == "LL128" && hw.compute_major < 7) return "LL128 needs a Volta or newer GPU";
  return "";
}

std::optional<RankTime> nccl_rank_time_from_string(std::string_view name) {
  if (name == "mean") return RankTime::mean;
  if (name == "slowest") return RankTime::slowest;
  return std::nullopt;
}

RankTimes nccl_combine_rank_times(const std::vector<double>& seconds) {
  RankTimes t;
  if (seconds.empty()) return t;
  for (double s : seconds) {
    t.mean += s;
    t.slowest = std::max(t.slowest, s);
  }
  t.mean /= static_cast<double>(seconds.size());
  return t;
}

std::string nccl_value_is(RankTime chosen, bool busbw) {
  return std::string(busbw ? "busbw" : "algbw") +
         (chosen == RankTime::mean ? " from the mean of the ranks' times (nccl-tests' default)"
                                   : " from the slowest rank's time (nccl-tests -a 3)");
}

int nccl_rank_count(const nlohmann::json& x, int local_gpus, std::string* why) {
  if (x.contains("ranks") && x["ranks"].is_number_integer()) return static_cast<int>(x["ranks"].get<int64_t>());
  const int nodes = x.contains("nodes") && x["nodes"].is_number_integer() ? static_cast<int>(x["nodes"].get<int64_t>()) : 1;
  if (nodes <= 1) return local_gpus;
  if (x.contains("gpus_per_node") && x["gpus_per_node"].is_number_integer() && x["gpus_per_node"].get<int64_t>() > 0) {
    return nodes * static_cast<int>(x["gpus_per_node"].get<int64_t>());
  }
  if (why) {
    *why = "with 'nodes' > 1, 'ranks': \"gpus\" needs 'gpus_per_node' (this node cannot count the other nodes' "
           "GPUs), or give 'ranks' as a number";
  }
  return 0;
}

std::string nccl_nothing_to_tune(int ranks) {
  if (ranks > 1) return "";
  return "nothing to tune with one rank: NCCL skips algorithm selection for a one-rank communicator and never "
         "asks a tuner about it; give the space 'ranks' of 2 or more (one per GPU), or measure one GPU with "
         "`acceltune bench`";
}

LauncherIdentity nccl_launcher_identity(const char* (*get)(const char*)) {
  auto first = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      const char* v = get(n);
      if (v && *v) {
        char* end = nullptr;
        const long x = std::strtol(v, &end, 10);
        if (end != v && *end == '\0' && x >= 0 && x < (1L << 24)) return static_cast<int>(x);
      }
    }
    return -1;
  };
  LauncherIdentity id;
  id.rank = first({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"});
  id.local_rank = first({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"});
  id.world_size = first({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"});
  return id;
}

int nccl_device_for(int local_rank, int visible_devices) {
  if (visible_devices <= 0) return 0;
  return std::max(local_rank, 0) % visible_devices;
}

LauncherKind nccl_launcher_kind(const std::string& version_text) {
  if (version_text.find("Open MPI") != std::string::npos || version_text.find("OpenRTE") != std::string::npos ||
      version_text.find("prterun") != std::string::npos) {
    return LauncherKind::open_mpi;
  }
  if (version_text.find("HYDRA") != std::string::npos || version_text.find("Hydra") != std::string::npos) {
    return LauncherKind::hydra;
  }
  return LauncherKind::other;
}

std::vector<std::string> nccl_forward_env_args(LauncherKind kind, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  if (names.empty()) return out;
  if (kind == LauncherKind::open_mpi) {
    for (const auto& n : names) {
      out.push_back("-x");
      out.push_back(n);
    }
  } else if (kind == LauncherKind::hydra) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
    out = {"-genvlist", list};
  }
  return out;
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
