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

// The certified gain's sibling: the export plan loaded the way a job loads it, by a plain client
// of the family, interleaved with the library's defaults (tuner/delivery.hpp, `acceltune verify`).
struct Delivered {
  double ratio = 0, ci_low = 0, ci_high = 0;  // plan / defaults, 95% interval
  double value = 0, default_value = 0;        // the client's medians over the rounds
  int rounds = 0;
  bool slower = false;   // the interval lies below 1.0: the plan costs the job time at this size
  bool faster = false;   // the interval lies above 1.0
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
  std::optional<double> predicted_low, predicted_high;  // the model's 95% interval, when it gives one
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
  std::optional<Delivered> delivered;  // absent: not verified (BestTable::delivery says why)
};

// How a param reaches a job, as the export formats declare it.
enum class Scope {
  per_size,     // a per-size file carries it (an Open MPI rules file, the NCCL tuner table)
  job,          // one value for the whole job (an environment variable, a sysctl, the MTU)
  application,  // only the application sets it (streams, write size): advice, not loaded by a job
};
const char* to_string(Scope s);

// What a study's exports load: one job-wide assignment chosen jointly over all sizes, and per-size
// choices conditioned on it (SizeBest::chosen_config). Every exporter, `exec`, the loader and
// `verify` write and load this one plan.
struct Plan {
  Json job = Json::object();  // job-wide params -> values
  bool job_is_default = true;
  std::map<std::string, Scope> scopes;  // every param's scope
  std::string chosen_by = "observed";   // "certified" when certification chose it
  std::vector<std::string> notes;       // fallbacks and why, in words
};

// The delivered measurement of the plan, for the whole table.
struct Delivery {
  std::string state = "not verified";  // or "measured"
  std::string why;                     // why not verified, or what it measured with
  std::string client;                  // how the job was started
  std::string fingerprint;             // the machine it was measured on
  std::string at;                      // UTC time
  int rounds = 0;
  // The plan's verdict (tuner/verdict.hpp: "ships", "worse", "fails", "no gain", "undecided") and
  // the figure that decided it; empty in tables measured before verdicts.
  std::string verdict;
  std::string verdict_why;
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

// The version best.json is written in; older tables (no "schema") are read too.
inline constexpr int kBestSchema = 2;

struct BestTable {
  std::string space;
  std::string kernel;
  std::string unit;
  // What a value is where the unit does not say it all (the kernel's measurement details
  // "value_is", e.g. "busbw from the mean of the ranks' times (nccl-tests' default)"); empty when
  // the unit says it.
  std::string value_is;
  std::vector<SizeBest> sizes;
  // The trial with the best objective over all sizes: what a single-valued export uses.
  std::optional<int64_t> overall_trial;
  Json overall_config = Json::object();
  double overall_value = 0;
  std::optional<double> default_overall_value;
  std::vector<SizeRange> ranges;
  // The plan's job-wide assignment over the library defaults: what a single-valued export (env)
  // holds. Per-size params stay at their defaults here; a per-size file carries them.
  Json export_config = Json::object();
  Plan plan;
  Delivery delivery;
  bool certified = false;
  std::map<std::string, std::string> env;  // param name -> environment variable
  Json default_config = Json::object();
  int64_t trials = 0, trials_ok = 0;
  std::string recommended_by = "observed";  // or "posterior-mean"
  // The study record (study.json: space definition, workload, fingerprint) when the table was read
  // from a study directory, for exports that name the collective, the topology or the machine. Not
  // part of best.json.
  Json study = Json::object();
  // The study directory the table was read from (where the plan's per-size files live); not part
  // of best.json.
  std::string dir;

  Json to_json() const;
  // Reads best.json of any schema; a field of the wrong type is an input error naming it.
  static Expected<BestTable> from_json(const Json& j);

 private:
  static Expected<BestTable> from_json_unchecked(const Json& j);
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

// Groups adjacent sizes by chosen config into ranges; the export config is the plan's job-wide
// assignment over the defaults.
void finish_ranges(BestTable& b);

struct ParamRef {
  std::string kernel, name, env;  // env: the param's variable, empty when the kernel applies it
};

struct EmitterInfo {
  std::string description;
  std::function<Expected<std::string>(const BestTable&)> emit;
  // The params this format carries and how (per size range, or one value for the job); nullopt
  // for a param it does not carry. A param no format carries per size or job-wide is the
  // application's.
  std::function<std::optional<Scope>(const ParamRef&)> carries;
  // A format that carries params per size: its file's name in the study's plan/ folder, and the
  // variables that make a job read it from a path.
  std::string plan_file;
  std::function<std::vector<std::pair<std::string, std::string>>(const std::string& path)> switch_on;
};
using EmitterRegistry = Registry<EmitterInfo>;

Expected<std::string> emit(const std::string& format, const BestTable& best);

// The header lines every KEY=VALUE export starts with: what was searched, and the hardware
// fingerprint (fingerprint_header).
std::string export_header(const BestTable& best);
// The part of export_header that says what proves the plan and what became of it: the delivered
// verdict with its best and worst size (or why nothing was delivered), the certified figures, the
// plan's notes (its fallbacks and why); comment lines.
std::string verdict_lines(const BestTable& best);

// A delivered measurement in one line: its best size with the interval, its worst beside it, and
// the sizes where it is slower ("1.88x [1.74, 2.03] at 4K, worst 0.81x [0.70, 0.93] at 1M; slower
// at 1M"); empty when no size was measured.
std::string delivered_range_text(const std::map<uint64_t, Delivered>& sizes);
// The table's delivered figures by size (the sizes a delivered measurement reached).
std::map<uint64_t, Delivered> delivered_sizes(const BestTable& best);
// The certified gain of a plan in one line: its best significant size, and its worst certified
// size where the plan loads something (the job-wide part changes every size) when that is
// another; empty when no size has a significant certified gain. `as_planned` false: over every
// certified size, whether or not the plan kept its choice (the gain certification found before a
// delivered measurement sent the plan back to the defaults).
std::string certified_range_text(const BestTable& best, bool as_planned = true);

// The one figure of the config a size exports, and the default's beside it, named by what they
// are: certification's medians where it measured that config, else the search's median (or its
// best single measurement where no model ranked the trials). Every table shows these; any other
// figure (a model estimate, another trial's measurement) is named as such.
struct ExportedFigure {
  Json config;
  std::optional<int64_t> trial;  // the trial whose config it is; none for the default or the job-wide part
  std::optional<double> value, default_value;
  std::string what;  // "certified medians", "the default's certified median", "the search's median", ...
};
ExportedFigure exported_figure(const BestTable& best, const SizeBest& s);

// The fingerprint lines of an export, from the study record: "# acceltune fingerprint: ID" (for
// people and `compare`) and "# acceltune fingerprint_fields: {...}", the fields the runtime loader
// checks (loader_fields in fingerprint.hpp). Empty when the study has no fingerprint.
std::string fingerprint_header(const Json& study);

}  // namespace acceltune
