// The best-per-size table of a study, and the emitters that turn it into files that the
// communication libraries read.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/recommend.hpp"
#include "tuner/registry.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

// A top config re-measured interleaved with the default (A B A B ...) after the search.
struct Candidate {
  int64_t trial = 0;
  Json config = Json::object();
  double ratio = 0, ci_low = 0, ci_high = 0;  // candidate / default, 95% interval
  double value = 0, default_value = 0;         // medians over the rounds
  int rounds = 0;                              // rounds where both measured ok
};

struct SizeBest {
  uint64_t bytes = 0;
  // What the search recommends at this size: the measured config ranked first (by the model's
  // posterior mean when the table was computed with a ranking, else by observed value), with the
  // value it measured; `predicted` is the model's estimate of it.
  std::optional<int64_t> best_trial;
  Json best_config = Json::object();
  double best_value = 0, best_p10 = 0, best_p90 = 0;
  std::optional<double> predicted;
  // The best single measurement, which with noise is often a lucky near-optimum.
  std::optional<int64_t> observed_trial;
  double observed_value = 0;
  std::optional<double> default_value;
  std::optional<double> ratio;  // best / default
  // Certification: the winner among the re-measured candidates, and whether its gain is
  // significant (the interval excludes 1.0). With several candidates the winner is chosen on
  // their rounds (`candidates`) and its ratio and interval come from fresh rounds of the winner
  // against the default alone (`confirmed`): the rounds that picked a winner flatter it.
  bool certified = false;
  std::vector<Candidate> candidates;
  std::optional<int64_t> certified_trial;
  std::optional<double> certified_ratio, ci_low, ci_high;
  bool significant = false;
  bool confirmed = false;        // the interval is from rounds that played no part in the choice
  int certified_rounds = 0;      // the rounds behind the interval
  double certified_value = 0, certified_default_value = 0;  // their medians
  // What an export uses at this size: the certified winner when significant, the library
  // default when not, the search's best when the study was not certified.
  Json chosen_config = Json::object();
  bool chosen_is_default = false;
};

// Adjacent sizes that share a chosen config, as the byte range that NCCL tuner tables, Open MPI
// rules and MPICH selection files use: [min_bytes, max_bytes], the first range from 0 and the
// last to the largest 64-bit value, boundaries just below the next range's first size.
struct SizeRange {
  uint64_t min_bytes = 0, max_bytes = 0;
  std::vector<uint64_t> sizes;
  Json config = Json::object();
  bool is_default = false;
};

struct BestTable {
  std::string space;
  std::string kernel;
  std::string unit;
  std::vector<SizeBest> sizes;
  // The trial with the best objective over all sizes: what a single-valued export uses.
  std::optional<int64_t> overall_trial;
  Json overall_config = Json::object();
  double overall_value = 0;
  std::optional<double> default_overall_value;
  std::vector<SizeRange> ranges;
  // The config a single-valued export (env) uses: the one chosen for the most sizes.
  Json export_config = Json::object();
  bool certified = false;
  std::map<std::string, std::string> env;  // param name -> environment variable
  Json default_config = Json::object();
  int64_t trials = 0, trials_ok = 0;
  std::string recommended_by = "observed";  // or "posterior-mean"
  // The study record (study.json: space definition, workload, fingerprint) when the table was read
  // from a study directory, for exports that name the collective, the topology or the machine. Not
  // part of best.json.
  Json study = Json::object();

  Json to_json() const;
  static Expected<BestTable> from_json(const Json& j);
};

// Per size, the recommended measured config (the first of `ranking` there when given, else the
// best ok measurement); trial 0 (the default) is the reference. The chosen configs are the
// search's recommendations until certification replaces them.
BestTable compute_best(const Space& space, const Workload& workload, const std::vector<Trial>& trials,
                       const std::string& unit, const Ranking* ranking = nullptr,
                       const std::string& ranked_by = "observed");
// compute_best with the noise-aware ranking of rank_measured (seeded by the study's seed); the
// ranking goes to `ranking` when given, for certification to re-measure its top.
BestTable compute_recommended_best(const Space& space, const Workload& workload, const std::vector<Trial>& trials,
                                   const std::string& unit, uint64_t seed, Ranking* ranking = nullptr);

// Groups adjacent sizes by chosen config into ranges and picks the export config.
void finish_ranges(BestTable& b);

struct EmitterInfo {
  std::string description;
  std::function<Expected<std::string>(const BestTable&)> emit;
};
using EmitterRegistry = Registry<EmitterInfo>;

Expected<std::string> emit(const std::string& format, const BestTable& best);

// The header lines every KEY=VALUE export starts with: what was searched, and the hardware
// fingerprint (fingerprint_header).
std::string export_header(const BestTable& best);

// The fingerprint lines of an export, from the study record: "# acceltune fingerprint: ID" (for
// people and `compare`) and "# acceltune fingerprint_fields: {...}", the fields the runtime loader
// checks (loader_fields in fingerprint.hpp). Empty when the study has no fingerprint.
std::string fingerprint_header(const Json& study);

}  // namespace acceltune
