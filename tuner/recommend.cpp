// The definitions behind tuner/recommend.hpp: noise-aware recommendations.
#include "tuner/recommend.hpp"

#include <algorithm>

namespace acceltune {

Ranking rank_by_observed(const std::vector<Trial>& trials, const std::vector<uint64_t>& sizes) {
  Ranking r;
  for (uint64_t bytes : sizes) {
    auto& list = r[bytes];
    for (const auto& t : trials) {
      const Measurement* m = t.at_size(bytes);
      if (!m || m->state != State::ok || t.effort < 1.0 || !std::isfinite(m->value)) continue;
      list.push_back({t.number, m->value, m->value, std::nullopt, std::nullopt});
    }
    std::stable_sort(list.begin(), list.end(),
                     [](const RankedTrial& a, const RankedTrial& b) { return a.observed > b.observed; });
  }
  return r;
}

Ranking rank_measured(const Space& space, const std::vector<Trial>& trials, const std::vector<uint64_t>& sizes,
                      uint64_t seed, std::string* method) {
  if (const RecommenderInfo* info = RecommenderRegistry::instance().find("posterior-mean")) {
    auto r = info->rank(space, trials, sizes, seed);
    if (r && !r->empty()) {
      if (method) *method = "posterior-mean";
      return *r;
    }
  }
  if (method) *method = "observed";
  return rank_by_observed(trials, sizes);
}

}  // namespace acceltune
