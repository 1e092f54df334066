// A family of paths (host memory, TCP, UCX, MPI, CUDA, NCCL, RDMA, ...) describes itself: the
// kernels and shipped spaces it brings, the unit of its objective, its part in bring-up, the
// variables its jobs read, the bundle files it fills, the links it crosses, its far ends, its
// delivery client and the export formats that apply to it. Each family registers its descriptor
// from its own folder (kernels/<family>/family.cpp), as UCX's components do; bring-up, the bundle,
// links, the fingerprint, results and compare iterate the registry and never branch on a
// family's or a kernel's name. The rules a descriptor names live in their own registries, filled
// from the same folder: link ceilings and fingerprint fields (probe/), far-end handlers
// (PeerHandler), delivery clients (DeliveryClient, by kernel).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tuner/registry.hpp"
#include "tuner/value.hpp"

namespace acceltune {

class Space;

// One search bring-up runs for a family.
struct FamilyStudy {
  std::string family{};
  std::string space{};                // a shipped space's name
  Json space_override = nullptr;    // fields set in a copy of the space (mpi: "ranks")
  std::vector<std::string> args{};    // further `search` arguments (--netns)
  double weight = 1;                // share of the time limit
  double minimum_seconds = 10;      // less than this cannot even measure the defaults
};

// What a family's part in bring-up reads of the node: counts from the probe, and what each
// family's own availability test observed (`observed["mpirun"]`, `observed["netns"]`), so a test
// can state a node without having it.
struct NodeFacts {
  int gpus = 0;
  std::string gpu_why{};   // the probe's note when it found none
  int rdma_devices = 0;
  std::string rdma_why{};
  int cores = 1;         // usable cores: the ranks of a collective study
  Json observed = Json::object();
  // observed[key] as a bool / string, false / "" when absent.
  bool has(const std::string& key) const;
  std::string text(const std::string& key) const;
  // Why a family that needs a GPU (an RDMA device) does not run here: "no GPU: <probe's note>";
  // empty when the node has one.
  std::string without_gpus() const;
  std::string without_rdma() const;
};

// A family's part in bring-up on one node: what it tunes there and its studies, or why it
// does not run.
struct FamilyRole {
  std::string what{};                  // one line: what it tunes (and how, on this node)
  std::vector<FamilyStudy> studies{};
  std::string skipped{};               // why it does not run here; empty when it runs
};

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// A file of the bring-up bundle a family fills. Exactly one source:
//   plan_format    the per-size file of its studies' plans in that format (Open MPI rules)
//   export_format  an export of its last finished study in that format (a reviewed script)
//   env_prefix     the merged environment's variables with that prefix (ucx.env)
struct BundleFile {
  std::string name{};           // "ompi-rules.conf"
  std::string plan_format{};
  std::string export_format{};
  std::string env_prefix{};
  std::string about{};         // env_prefix: the comment line above its variables
  std::string when_empty{};     // the comment written when no study filled it
  bool script = false;        // written executable, with a #!/bin/sh line and `exit 0` when empty
};

struct FamilyInfo {
  std::string what{};                 // what it tunes, one line
  int order = 50;                   // bring-up runs families in increasing order
  bool listed = true;               // test families stay out of listings and of bring-up unless named
  std::vector<std::string> kernels{};  // the kernels it registers
  std::vector<std::string> spaces{};   // its shipped spaces (kernels/<family>/spaces/NAME.json)
  // The unit of its kernels' objective for a space (results and compare read it without making a
  // kernel); empty: "GB/s".
  std::function<std::string(const Space&)> unit{};
  // Fills what its availability test needs into facts.observed (tries commands, makes and removes
  // a namespace when `may_try` allows); may be empty.
  std::function<void(NodeFacts& facts, bool may_try)> observe{};
  // Its part in bring-up on a node.
  std::function<FamilyRole(const NodeFacts&)> bringup{};
  // The variables its jobs read: every variable with one of these prefixes, and those `also_reads`
  // adds given a plan's variables (Open MPI reads UCX_* when its plan runs pml=ucx).
  std::vector<std::string> env_prefixes{};
  std::function<bool(const EnvVars& plan, const std::string& var)> also_reads{};
  // Why a value of one of its variables cannot go into a job across nodes (measured within one
  // node), empty when it can.
  std::function<std::string(const std::string& var, const std::string& value)> single_node_only{};
  // Its spaces measure different paths that one environment governs (UCX's shared memory and its
  // network): a bundle line from one of its studies ships only when every one of its spaces was
  // measured under the bundle.
  bool one_env_for_all_paths = false;
  std::vector<BundleFile> bundle_files{};
  std::vector<std::string> links{};         // the link kinds its studies cross (probe/links.hpp rules)
  std::vector<std::string> far_ends{};      // PeerHandler names of its far end
  std::vector<std::string> exports{};       // export formats written for its studies only
  std::vector<std::string> fingerprint{};   // fingerprint fields it adds (probe/fingerprint.hpp)
  // Non-empty when no library reads its params: why, in a line. Its studies check a path against
  // its ceiling, and their best configs are advice for programs that do the work themselves, shown
  // apart from the gains a job loads.
  std::string advice{};
};
using FamilyRegistry = Registry<FamilyInfo>;

// A part in bring-up that does not depend on the node: `what`, and these studies on every node.
std::function<FamilyRole(const NodeFacts&)> always_runs(std::string what, std::vector<FamilyStudy> studies);

// The families in bring-up order (ties by name).
std::vector<std::pair<std::string, const FamilyInfo*>> families_in_order();
// The family a kernel belongs to; nullptr for none (a test kernel registered alone).
const FamilyInfo* family_of_kernel(const std::string& kernel);
// The family's name of a kernel, "" for none.
std::string family_name_of_kernel(const std::string& kernel);
// The unit of a space's objective, from its kernel's family ("GB/s" when it says none).
std::string unit_of(const Space& space);
// Whether an export format written for one family's studies only applies to `kernel`: formats no
// family claims apply to every kernel.
bool format_applies(const std::string& format, const std::string& kernel);
// Whether a job of `kernel`'s family reads `var`, given its plan's variables.
bool family_reads(const std::string& kernel, const EnvVars& plan, const std::string& var);

}  // namespace acceltune
