// acceltune bringup, step three: one bundle for every job of the node from the studies it ran.
// Every job-wide variable of every study goes into one environment (acceltune.env); where studies
// want different values for one variable, each study's choice is measured through the plain
// clients of every study that reads the variable and the best across them is kept; the merged
// environment is then measured against the defaults through every study's client. The per-size
// files (Open MPI rules, the NCCL tuner table), the UCX subset, the reviewed TCP script and a
// job wrapper sit beside it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "results/compare.hpp"
#include "tools/bringup/families.hpp"
#include "tuner/best.hpp"
#include "tuner/verify.hpp"
#include "tuner/duration.hpp"

namespace acceltune::bringup {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// A study's wish for one variable.
struct Wish {
  std::string study;  // space name
  std::string value;
};

// One line of acceltune.env.
struct EnvLine {
  std::string var, value;
  std::vector<std::string> from;  // the studies that wanted this value
  std::string why;                // the comment above it
  bool left_out = false;          // written commented out, with `why`
  bool is_file = false;           // a path to a bundle file (job.sh names it relative to itself)
};

// What each finished study brings, read from its plan (tuner/plan.hpp).
struct Contribution {
  const StudyData* study = nullptr;
  EnvVars vars;     // its plan's variables, per-size file paths pointing into the bundle
  EnvVars pinned;   // its space's measurement context (UCX_TLS=tcp of ucx-tcp): not exported
  std::vector<std::pair<std::string, std::string>> files;  // bundle file name, the plan file it copies
  std::string gain;  // "certified 1.31x [1.10, 1.52] at 1M" or why none
};
Expected<Contribution> contribution_of(const StudyData& study, const std::string& bundle_dir);

// Whether a study's job reads a variable: its own plan sets it, or its family reads it
// (tuner/family.hpp: UCX_* for ucx, and for Open MPI when its plan runs pml=ucx; NCCL_* for nccl).
bool reads(const Contribution& c, const std::string& var);

// A variable that leaves a job across nodes without a network, as a family says (UCX_TLS naming
// only shared-memory transports, measured on one node). Such a value is written commented out,
// saying why.
std::string single_node_only(const std::string& var, const std::string& value);

// The variables wanted with more than one value, each with its wishes.
std::map<std::string, std::vector<Wish>> conflicts(const std::vector<Contribution>& contributions);

// The candidate environments for the conflicting variables: one per study that wants any of them
// (its values; a conflicting variable it does not set is left to the library), and one leaving
// every conflicting variable to the library. Names say which.
std::vector<std::pair<std::string, EnvVars>> conflict_variants(const std::vector<Contribution>& contributions,
                                                               const std::map<std::string, std::vector<Wish>>& conflicting);

// The geometric mean of a measurement's per-size ratios, and whether any size is slower.
struct Score {
  double geomean = 1;
  bool slower = false;
};
Score score_of(const std::map<uint64_t, Delivered>& delivered);

// The variant to keep given each variant's scores across the studies that read it: none slower
// first, then the highest geometric mean of the scores; the last variant (all to the library)
// when every other one is slower somewhere.
size_t choose_variant(const std::vector<std::vector<Score>>& scores_per_variant);

// The delivered figures of the merged bundle for one study: measured, or why not.
struct BundleDelivery {
  std::string study;
  std::string state = "not verified";  // or "measured"
  std::string why;
  std::map<uint64_t, Delivered> sizes;
  bool out_of_time = false;  // not measured: the time limit had passed
  bool failed = false;       // its job failed under the bundle (`why`)
};

struct Bundle {
  std::vector<EnvLine> env;
  std::vector<std::string> notes;  // conflicts and how they were settled, left-out variables
  std::vector<BundleDelivery> delivered;
};

struct MergeOptions {
  int rounds = 3;
  std::function<void(const std::string& what)> progress;
  // No round of a measurement starts after it (each keeps at least two): the bring-up's time limit.
  Deadline deadline;
};

// A line from a study of a family whose paths share one environment (FamilyInfo::
// one_env_for_all_paths) stays in the bundle only when every space of that family was measured
// under it (`measured`: the spaces measured); otherwise it is written commented out, naming the
// paths it would govern unmeasured. `family_of_space`: each contributing study's family.
void leave_out_unmeasured_paths(Bundle& out, const std::map<std::string, std::string>& family_of_space,
                                const std::set<std::string>& measured);

// Merges the contributions into one environment, settling conflicts by measurement, and measures
// the merged environment through every study's client. Measurement failures become notes.
Bundle merge_and_verify(const std::vector<Contribution>& contributions, const MergeOptions& options);

// The bundle's environment as written (acceltune.env's active lines, its files where the bundle lies
// now) measured through the client of every study it loads something into, interleaved with the
// defaults: `acceltune verify BUNDLE`. A study it loads nothing into says so, unmeasured.
std::vector<BundleDelivery> measure_bundle(const std::vector<Contribution>& contributions, const EnvVars& env,
                                           const MergeOptions& options);

// The files of the bundle.
std::string env_file_text(const Bundle& bundle, const std::string& header);
// A family's subset of acceltune.env (ucx.env: its UCX_* variables).
std::string env_subset_text(const Bundle& bundle, const std::string& header, const BundleFile& file);
// The bundle file a family names, nullptr for none.
const BundleFile* find_bundle_file(const std::string& name);

// The files the families fill (tuner/family.hpp's BundleFile). First, before the merged
// measurement (the environment names them): the per-size plan files, NCCL's tables one after
// another, and for a family that filled none its file saying why.
std::map<std::string, std::string> plan_files_text(const std::vector<Family>& families,
                                                   const std::vector<Contribution>& contributions,
                                                   const std::string& header);
// Then, from the merged bundle: the environment subsets and the exports of a family's last
// finished study (the reviewed TCP script), each saying why when empty.
struct BundleText {
  std::string name, text;
  bool script = false;
};
std::vector<BundleText> merged_files_text(const std::vector<Family>& families, const std::vector<StudyData>& studies,
                                          const Bundle& merged, const std::string& header);
// job.sh: sets every variable (bundle files relative to the script's own folder) and runs its
// arguments; an Open MPI launcher gets `-x VAR` for each so remote ranks see them too.
std::string job_script_text(const Bundle& bundle);

}  // namespace acceltune::bringup
