// Which families of paths this node can tune and how bring-up splits its time among them.
#include "tools/bringup/families.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "kernels/shared/child_process.hpp"
#include "kernels/tcp/netns.hpp"

namespace acceltune::bringup {
namespace {

// The first note of a probe section ("gpus: no CUDA GPU: ..."), without the section's name.
std::string probe_note(const Json& probe, const std::string& section) {
  if (!probe.contains("notes") || !probe["notes"].is_array()) return "";
  const std::string prefix = section + ": ";
  for (const auto& n : probe["notes"]) {
    if (n.is_string() && n.get<std::string>().rfind(prefix, 0) == 0) return n.get<std::string>().substr(prefix.size());
  }
  return "";
}

Study study(const std::string& family, const std::string& space, double weight, double minimum = 10) {
  Study s;
  s.family = family;
  s.space = space;
  s.weight = weight;
  s.minimum_seconds = minimum;
  return s;
}

}  // namespace

NodeFacts node_facts(const Json& probe, bool try_netns) {
  NodeFacts n;
  n.gpus = probe.contains("gpus") && probe["gpus"].is_array() ? static_cast<int>(probe["gpus"].size()) : 0;
  n.gpu_why = probe_note(probe, "gpus");
  n.rdma_devices = probe.contains("rdma") && probe["rdma"].is_array() ? static_cast<int>(probe["rdma"].size()) : 0;
  n.rdma_why = probe_note(probe, "rdma");
  const Json cpu = probe.value("cpu", Json::object());
  n.cores = std::max(1, cpu.value("usable_cores", cpu.value("logical_cores", 1)));
  n.mpirun = find_on_path(std::getenv("ACCELTUNE_MPIRUN") ? std::getenv("ACCELTUNE_MPIRUN") : "mpirun").has_value();
  if (!try_netns) {
    n.netns_why = "not tried";
  } else if (!may_manage_netns()) {
    n.netns_why = "network namespaces need root (or CAP_SYS_ADMIN and CAP_NET_ADMIN)";
  } else {
    auto pair = NetnsPair::create();
    n.netns = pair.has_value();
    if (!pair) n.netns_why = pair.error().message;
  }
  return n;
}

const std::vector<std::string>& family_names() {
  static const std::vector<std::string> names = {"host", "tcp", "ucx", "mpi", "cuda", "nccl", "rdma"};
  return names;
}

Expected<std::vector<Family>> pick_families(const NodeFacts& node, const std::vector<std::string>& only,
                                            const std::vector<std::string>& skip) {
  const auto& names = family_names();
  std::string known;
  for (const auto& k : names) known += (known.empty() ? "" : ", ") + k;
  for (const auto* list : {&only, &skip}) {
    for (const auto& f : *list) {
      if (std::find(names.begin(), names.end(), f) == names.end()) {
        return input_error("{} names an unknown family '{}' (known: {})", list == &only ? "--only" : "--skip", f, known);
      }
    }
  }
  std::vector<Family> out;
  auto add = [&](const std::string& name, const std::string& what) -> Family& {
    out.push_back(Family{name, what, {}, ""});
    return out.back();
  };

  Family& host = add("host", "host memory copies: the memory reference (no library reads their params)");
  host.studies.push_back(study("host", "host-copy", 1));

  Family& tcp = add("tcp", "TCP streams: socket buffers, MTU, congestion control, streams");
  tcp.studies.push_back(study("tcp", "tcp-stream", 2));
  if (node.netns) {
    tcp.studies.back().args = {"--netns"};
    tcp.what += " (between two network namespaces)";
  } else {
    tcp.what += fmt::format(" (over loopback: {})", node.netns_why);
  }

  Family& ucx = add("ucx", "UCX transports and protocol thresholds, within the node and over TCP");
  ucx.studies.push_back(study("ucx", "ucx-shm", 1));
  ucx.studies.push_back(study("ucx", "ucx-tcp", 1));

  Family& mpi = add("mpi", fmt::format("MPI_Allreduce at {} ranks: Open MPI's algorithm, segment and messaging layer",
                                       std::max(2, node.cores)));
  if (node.mpirun) {
    Study s = study("mpi", "mpi-allreduce", 3, 20);
    s.space_override = Json{{"ranks", std::max(2, node.cores)}};
    mpi.studies.push_back(s);
  } else {
    mpi.skipped = "mpirun is not on PATH (Debian: openmpi-bin)";
  }

  Family& cuda = add("cuda", "CUDA copies host to device, device to host, device to device");
  Family& nccl = add("nccl", "NCCL collectives across the node's GPUs");
  if (node.gpus == 0) {
    const std::string why = "no GPU" + (node.gpu_why.empty() ? std::string() : ": " + node.gpu_why);
    cuda.skipped = why;
    nccl.skipped = why;
  } else {
    for (const char* s : {"cuda-copy", "cuda-copy-d2h", "cuda-copy-d2d"}) cuda.studies.push_back(study("cuda", s, 1));
    if (node.gpus >= 2) {
      cuda.studies.push_back(study("cuda", "cuda-copy-peer", 1));
      nccl.studies.push_back(study("nccl", "nccl-allreduce", 2, 20));
      for (const char* s : {"nccl-allgather", "nccl-reduce-scatter", "nccl-broadcast", "nccl-reduce", "nccl-alltoall",
                            "nccl-sendrecv"}) {
        nccl.studies.push_back(study("nccl", s, 1, 20));
      }
    } else {
      nccl.skipped = "one GPU: a one-rank communicator has no algorithm or protocol for NCCL to choose";
    }
  }

  Family& rdma = add("rdma", "RDMA verbs: queue depths, inline size, path MTU, operations");
  if (node.rdma_devices == 0) {
    rdma.skipped = "no RDMA device" + (node.rdma_why.empty() ? std::string() : ": " + node.rdma_why);
  } else {
    for (const char* s : {"verbs", "verbs-read", "verbs-send", "verbs-write-lat"}) rdma.studies.push_back(study("rdma", s, 1));
  }

  for (auto& f : out) {
    if (!f.skipped.empty()) {
      f.studies.clear();
      continue;
    }
    if (!only.empty() && std::find(only.begin(), only.end(), f.name) == only.end()) f.skipped = "not named by --only";
    if (std::find(skip.begin(), skip.end(), f.name) != skip.end()) f.skipped = "named by --skip";
    if (!f.skipped.empty()) f.studies.clear();
  }
  return out;
}

std::vector<Study> studies_to_run(const std::vector<Family>& families) {
  std::vector<Study> out;
  for (const auto& f : families) out.insert(out.end(), f.studies.begin(), f.studies.end());
  return out;
}

double minimum_seconds(const std::vector<Study>& studies) {
  double s = 0;
  for (const auto& x : studies) s += x.minimum_seconds;
  return s;
}

double share_seconds(const std::vector<Study>& remaining, double left) {
  if (remaining.empty()) return 0;
  double total = 0;
  for (const auto& s : remaining) total += s.weight;
  const double share = total > 0 ? left * remaining.front().weight / total : left;
  return std::max(share, remaining.front().minimum_seconds);
}

}  // namespace acceltune::bringup
