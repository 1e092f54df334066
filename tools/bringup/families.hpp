// acceltune bringup, step one: which families of paths this node can tune, each as the studies
// it runs, and how the time limit is split among them. Pure but for node_facts, which reads the
// probe, the PATH and whether network namespaces can be made.
#pragma once

#include <string>
#include <vector>

#include "tuner/expected.hpp"
#include "tuner/family.hpp"
#include "tuner/value.hpp"

namespace acceltune::bringup {

// One search of the bring-up, as its family's descriptor gives it (tuner/family.hpp).
using Study = FamilyStudy;
using acceltune::NodeFacts;

// A family on this node: its role there, and why it is skipped (by the node, --only or --skip).
struct Family {
  std::string name;      // the registered family (host, tcp, ucx, mpi, cuda, nccl, rdma, ...)
  std::string what;      // what it tunes, one line
  std::vector<Study> studies;
  std::string skipped;   // why it does not run here; empty when it runs
};

// From a probe (probe_fingerprint), and each family's own availability test (observe): a
// command on PATH, whether a network namespace can be made (only with `may_try`).
NodeFacts node_facts(const Json& probe, bool may_try);

// Every listed family with a part in bring-up, in the order bring-up runs them.
const std::vector<std::string>& family_names();

// Every listed family, those this node lacks with `skipped` set (and those --only leaves out or
// --skip names, saying so); a family hidden from listings (a test family) only when --only names
// it. An unknown name in `only` or `skip` is bad input naming the listed ones.
Expected<std::vector<Family>> pick_families(const NodeFacts& node, const std::vector<std::string>& only,
                                            const std::vector<std::string>& skip);

// The study a plain `acceltune search` (no --space) runs on this node, and why: the first study
// bring-up would run here whose result a job loads by itself: its family's jobs read its params
// through variables (env_prefixes), one study's plan loads alone (not one_env_for_all_paths), a plain
// client proves its delivered gain, and the family runs here. Without one, the first study that
// runs (the memory-path check), saying so. `why` names the choice and each family passed over.
struct DefaultSearch {
  Study study;
  std::string why;
};
DefaultSearch default_search(const NodeFacts& node);

// The studies of the families that run, in order.
std::vector<Study> studies_to_run(const std::vector<Family>& families);

// The least time limit that measures at least the defaults of every study.
double minimum_seconds(const std::vector<Study>& studies);

// The share of `left` seconds for the first of `remaining` studies, by weight: what an earlier
// study left unused flows to the later ones.
double share_seconds(const std::vector<Study>& remaining, double left);

}  // namespace acceltune::bringup
