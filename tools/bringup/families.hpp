// acceltune bringup, step one: which families of paths this node can tune, each as the studies
// it runs, and how the time limit is split among them. Pure but for node_facts, which reads the
// probe, the PATH and whether network namespaces can be made.
#pragma once

#include <string>
#include <vector>

#include "tuner/expected.hpp"
#include "tuner/value.hpp"

namespace acceltune::bringup {

// One search of the bring-up.
struct Study {
  std::string family;
  std::string space;                // a shipped space's name
  Json space_override = nullptr;    // fields set in a copy of the space (mpi: "ranks")
  std::vector<std::string> args;    // further `search` arguments (--netns)
  double weight = 1;                // share of the time limit
  double minimum_seconds = 10;      // less than this cannot even measure the defaults
};

struct Family {
  std::string name;      // host, tcp, ucx, mpi, cuda, nccl, rdma
  std::string what;      // what it tunes, one line
  std::vector<Study> studies;
  std::string skipped;   // why it does not run here; empty when it runs
};

// What the choice of families reads.
struct NodeFacts {
  int gpus = 0;
  std::string gpu_why;   // the probe's note when it found none
  int rdma_devices = 0;
  std::string rdma_why;
  int cores = 1;         // usable cores: the ranks of the MPI study
  bool mpirun = false;
  bool netns = false;    // network namespaces can be made here (root, iproute2)
  std::string netns_why;
};

// From a probe (probe_fingerprint) and this machine's PATH; `try_netns` makes and removes a
// namespace to see whether it may.
NodeFacts node_facts(const Json& probe, bool try_netns);

// Every family name, in the order bring-up runs them.
const std::vector<std::string>& family_names();

// Every family, those this node lacks with `skipped` set (and those --only leaves out or --skip
// names, saying so). An unknown name in `only` or `skip` is bad input naming the known ones.
Expected<std::vector<Family>> pick_families(const NodeFacts& node, const std::vector<std::string>& only,
                                            const std::vector<std::string>& skip);

// The studies of the families that run, in order.
std::vector<Study> studies_to_run(const std::vector<Family>& families);

// The least time limit that measures at least the defaults of every study.
double minimum_seconds(const std::vector<Study>& studies);

// The share of `left` seconds for the first of `remaining` studies, by weight: what an earlier
// study left unused flows to the later ones.
double share_seconds(const std::vector<Study>& remaining, double left);

}  // namespace acceltune::bringup
