// Noise-aware recommendations: which measured config is truly best at each size. With a few
// percent of noise the best observed value is often a lucky near-optimum; a model of the
// objective over all the trials (search/recommend.cpp: a Gaussian process, best posterior mean)
// pools what neighbouring configs say about each one. Without a recommender, or with too little
// data for a model, the ranking is by observed value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/registry.hpp"
#include "tuner/trial.hpp"

namespace acceltune {

struct RankedTrial {
  int64_t trial = 0;       // the trial's number
  double predicted = 0;    // the model's estimate of its value at that size, in the kernel's unit
  double observed = 0;     // what was measured
  // The model's 95% interval for the config's value (of its mean, not of one measurement), for the
  // first few of each size; absent when ranked by observed value.
  std::optional<double> low, high;
};
// Per size: every full-effort trial measured ok there, the recommended first.
using Ranking = std::map<uint64_t, std::vector<RankedTrial>>;

struct RecommenderInfo {
  std::string description;
  std::function<Expected<Ranking>(const Space& space, const std::vector<Trial>& trials,
                                  const std::vector<uint64_t>& sizes, uint64_t seed)>
      rank;
};
using RecommenderRegistry = Registry<RecommenderInfo>;

// By observed value, best first.
Ranking rank_by_observed(const std::vector<Trial>& trials, const std::vector<uint64_t>& sizes);

// The "posterior-mean" recommender when it is linked and has data enough; otherwise (or when it
// fails) by observed value. `method` says which one ranked.
Ranking rank_measured(const Space& space, const std::vector<Trial>& trials, const std::vector<uint64_t>& sizes,
                      uint64_t seed, std::string* method = nullptr);

}  // namespace acceltune
