// The best-per-size table of a study, and the emitters that turn it into files that the
// communication libraries read.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/registry.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

struct SizeBest {
  uint64_t bytes = 0;
  std::optional<int64_t> best_trial;
  Json best_config = Json::object();
  double best_value = 0, best_p10 = 0, best_p90 = 0;
  std::optional<double> default_value;
  std::optional<double> ratio;  // best / default
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
  std::map<std::string, std::string> env;  // param name -> environment variable
  Json default_config = Json::object();
  int64_t trials = 0, trials_ok = 0;

  Json to_json() const;
  static Expected<BestTable> from_json(const Json& j);
};

// Per size, the best ok measurement over all trials; trial 0 (the default) is the reference.
BestTable compute_best(const Space& space, const Workload& workload, const std::vector<Trial>& trials,
                       const std::string& unit);

struct EmitterInfo {
  std::string description;
  std::function<Expected<std::string>(const BestTable&)> emit;
};
using EmitterRegistry = Registry<EmitterInfo>;

Expected<std::string> emit(const std::string& format, const BestTable& best);

}  // namespace acceltune
