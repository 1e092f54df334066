// coordinate: the field's published method (AutoCCL), as a strategy to beat and the one a user
// would otherwise pick for NCCL. It enumerates the categorical sub-spaces first (algorithm x
// protocol, say), default's first, then the others in a seeded order; in each it starts from the
// best ordered values known so far and walks the ordered params in turn (channels, threads, chunk
// size): along one param it steps while a step improves, first up, then down, then moves to the
// next param; a pass over every param without an improvement ends the sub-space. After every
// sub-space it restarts from random points.
//
// Its statistic is AutoCCL's: the mean of the fastest 75% of a measurement's samples (a trial's
// value scaled by its median over that mean, per size, geometric over sizes), so a slow outlier
// sample does not decide a step. It is used inside the strategy only; reports keep medians.
// Unlike `local`, which probes one step in every direction from the current point, this walks one
// param at a time to its end before the next.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

// The trial's objective by the mean of the fastest 75% of each size's samples.
double fastest_three_quarters(const Trial& t) {
  if (t.state != State::ok || !t.value) return -std::numeric_limits<double>::infinity();
  double log_ratio = 0;
  int sizes = 0;
  for (const auto& m : t.measurements) {
    if (m.samples_seconds.size() < 4 || !(m.median_seconds > 0)) continue;
    std::vector<double> s = m.samples_seconds;
    std::sort(s.begin(), s.end());
    const size_t keep = std::max<size_t>(1, s.size() * 3 / 4);
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += s[i];
    const double mean = sum / static_cast<double>(keep);
    if (!(mean > 0)) continue;
    log_ratio += std::log(m.median_seconds / mean);
    ++sizes;
  }
  return sizes ? *t.value * std::exp(log_ratio / sizes) : *t.value;
}

class Coordinate final : public Strategy {
 public:
  Coordinate(const Space& space, uint64_t seed) : space_(space), rng_(hash_combine(seed, "coordinate")) {
    for (size_t k = 0; k < space.params().size(); ++k) {
      if (is_ordered(space.params()[k].kind)) ordered_.push_back(k);
      else categorical_.push_back(k);
    }
    combos_ = categorical_combos();
  }

  std::optional<Config> ask() override {
    for (int guard = 0; guard < 100000; ++guard) {
      if (!current_) {
        auto start = next_start();
        if (!start) return std::nullopt;
        const std::string key = space_.key(*start);
        if (auto it = values_.find(key); it != values_.end()) {
          begin_descent(*start, it->second);
          continue;
        }
        pending_start_ = key;
        return start;
      }
      if (ordered_.empty()) {
        current_.reset();
        continue;
      }
      // The next step along the param being walked.
      Config c = *current_;
      const size_t k = ordered_[param_];
      const int64_t i = static_cast<int64_t>(c.index[k]) + dir_;
      if (i < 0 || i >= static_cast<int64_t>(space_.params()[k].values.size())) {
        advance();
        continue;
      }
      c.index[k] = static_cast<uint32_t>(i);
      if (!space_.is_valid(c)) {
        advance();
        continue;
      }
      const std::string key = space_.key(c);
      if (auto it = values_.find(key); it != values_.end()) {
        // Measured already (another sub-space's walk, or the default): decide on what it gave.
        step_result(c, it->second);
        continue;
      }
      pending_step_ = key;
      return c;
    }
    return std::nullopt;
  }

  void tell(const Trial& t) override {
    const double v = fastest_three_quarters(t);
    values_[t.key] = v;
    if (!best_ || v > best_value_) {
      best_ = t.config;
      best_value_ = v;
    }
    if (t.key == pending_start_) {
      pending_start_.clear();
      begin_descent(t.config, v);
    } else if (t.key == pending_step_) {
      pending_step_.clear();
      step_result(t.config, v);
    }
  }

 private:
  void begin_descent(const Config& c, double v) {
    current_ = c;
    current_value_ = v;
    param_ = 0;
    dir_ = +1;
    moved_ = false;
    improved_in_pass_ = false;
  }

  void step_result(const Config& c, double v) {
    if (v > current_value_) {
      current_ = c;
      current_value_ = v;
      moved_ = true;
      improved_in_pass_ = true;  // keep walking the same way
      return;
    }
    advance();
  }

  // The walk along this param in this direction ended: down next if up never moved, else the
  // next param; after the last, another pass if this one improved, else the sub-space is done.
  void advance() {
    if (dir_ == +1 && !moved_) {
      dir_ = -1;
      return;
    }
    dir_ = +1;
    moved_ = false;
    if (++param_ < ordered_.size()) return;
    param_ = 0;
    if (improved_in_pass_) {
      improved_in_pass_ = false;
      return;
    }
    current_.reset();
  }

  // Every combination of the categorical params' values (at most 4096), the default's first.
  std::vector<std::vector<uint32_t>> categorical_combos() {
    std::vector<std::vector<uint32_t>> all;
    if (categorical_.empty()) return all;
    std::vector<uint32_t> cur(categorical_.size(), 0);
    while (all.size() < 4096) {
      all.push_back(cur);
      size_t i = 0;
      for (; i < cur.size(); ++i) {
        if (++cur[i] < space_.params()[categorical_[i]].values.size()) break;
        cur[i] = 0;
      }
      if (i == cur.size()) break;
    }
    for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng_.below(i)]);
    const Config d = space_.default_config();
    std::vector<uint32_t> def;
    for (size_t k : categorical_) def.push_back(d.index[k]);
    auto it = std::find(all.begin(), all.end(), def);
    if (it != all.end()) std::rotate(all.begin(), it, it + 1);
    return all;
  }

  // The next sub-space from the best ordered values known (the default's before anything is
  // known), then random valid points.
  std::optional<Config> next_start() {
    while (next_combo_ < combos_.size() || (combos_.empty() && !single_done_)) {
      Config c = best_ ? *best_ : space_.default_config();
      if (!combos_.empty()) {
        const auto& cmb = combos_[next_combo_++];
        for (size_t j = 0; j < categorical_.size(); ++j) c.index[categorical_[j]] = cmb[j];
      } else {
        single_done_ = true;
      }
      if (auto v = space_.nearest_valid(c)) return v;
    }
    for (int attempt = 0; attempt < 100000; ++attempt) {
      Config c = space_.from_ordinal(rng_.below(space_.cartesian_size()));
      if (space_.is_valid(c) && !values_.count(space_.key(c))) return c;
    }
    return std::nullopt;
  }

  const Space& space_;
  Rng rng_;
  std::vector<size_t> ordered_, categorical_;
  std::vector<std::vector<uint32_t>> combos_;
  size_t next_combo_ = 0;
  bool single_done_ = false;
  std::unordered_map<std::string, double> values_;  // by the strategy's own statistic
  std::optional<Config> best_, current_;
  double best_value_ = -std::numeric_limits<double>::infinity();
  double current_value_ = -std::numeric_limits<double>::infinity();
  size_t param_ = 0;
  int dir_ = +1;
  bool moved_ = false, improved_in_pass_ = false;
  std::string pending_start_, pending_step_;
};

}  // namespace

ACCELTUNE_REGISTER_STRATEGY("coordinate",
                            "AutoCCL's method: every categorical sub-space, coordinate descent along each ordered "
                            "param in turn, random restarts; the mean of the fastest 75% of samples",
                            Coordinate)

}  // namespace acceltune
