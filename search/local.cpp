// local: coordinate descent in the spirit of AutoCCL. The categorical params split the space
// into sub-spaces (algorithm x protocol, say); within one, it probes one step along each
// ordered axis from the current point, moves while a probe improves, and stops when every
// one-step probe of the current point has failed. It then restarts in the next categorical
// sub-space from the best point's ordered values, and after all of them from random points.
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

class Local final : public Strategy {
 public:
  Local(const Space& space, uint64_t seed) : space_(space), rng_(hash_combine(seed, "local")) {
    for (size_t k = 0; k < space.params().size(); ++k) {
      if (is_ordered(space.params()[k].kind)) ordered_.push_back(k);
      else categorical_.push_back(k);
    }
  }

  std::optional<Config> ask() override {
    for (int guard = 0; guard < 100000; ++guard) {
      if (!current_) {
        auto start = restart_point();
        if (!start) return std::nullopt;
        if (!values_.count(space_.key(*start))) {
          restart_pending_ = space_.key(*start);
          return start;
        }
        current_ = *start;
        continue;
      }
      // One-step probes of the current point; the last improving direction first.
      std::vector<std::pair<size_t, int>> probes;
      if (last_move_) probes.push_back(*last_move_);
      for (size_t k : ordered_) {
        for (int dir : {+1, -1}) {
          if (!last_move_ || last_move_->first != k || last_move_->second != dir) probes.emplace_back(k, dir);
        }
      }
      for (auto [k, dir] : probes) {
        Config c = *current_;
        const int64_t i = static_cast<int64_t>(c.index[k]) + dir;
        if (i < 0 || i >= static_cast<int64_t>(space_.params()[k].values.size())) continue;
        c.index[k] = static_cast<uint32_t>(i);
        if (!space_.is_valid(c) || values_.count(space_.key(c))) continue;
        probe_ = {k, dir};
        return c;
      }
      // Every probe failed: a local optimum of this sub-space.
      current_.reset();
      last_move_.reset();
    }
    return std::nullopt;
  }

  void tell(const Trial& t) override {
    const double v = t.value && t.state == State::ok ? *t.value : -std::numeric_limits<double>::infinity();
    values_[t.key] = v;
    if (!best_ || v > best_value_) {
      best_ = t.config;
      best_value_ = v;
    }
    if (t.key == restart_pending_) {
      restart_pending_.clear();
      current_ = t.config;
      current_value_ = v;
      last_move_.reset();
      return;
    }
    if (!current_) {
      // The first trial told (the default) is the first starting point.
      if (!started_) {
        started_ = true;
        current_ = t.config;
        current_value_ = v;
        visited_combos_.push_back(combo(t.config));
      }
      return;
    }
    if (v > current_value_) {
      current_ = t.config;
      current_value_ = v;
      last_move_ = probe_;
    }
  }

 private:
  std::vector<uint32_t> combo(const Config& c) const {
    std::vector<uint32_t> out;
    for (size_t k : categorical_) out.push_back(c.index[k]);
    return out;
  }

  // The next sub-space not yet descended, from the best point's ordered values; then random.
  std::optional<Config> restart_point() {
    if (!best_) {
      started_ = true;
      return space_.default_config();
    }
    if (!categorical_.empty() && !combos_done_) {
      std::vector<std::vector<uint32_t>> all;
      std::vector<uint32_t> cur(categorical_.size(), 0);
      while (true) {
        all.push_back(cur);
        size_t i = 0;
        for (; i < cur.size(); ++i) {
          if (++cur[i] < space_.params()[categorical_[i]].values.size()) break;
          cur[i] = 0;
        }
        if (i == cur.size() || all.size() > 4096) break;
      }
      for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[rng_.below(i)]);
      for (const auto& cmb : all) {
        if (std::find(visited_combos_.begin(), visited_combos_.end(), cmb) != visited_combos_.end()) continue;
        visited_combos_.push_back(cmb);
        Config c = *best_;
        for (size_t j = 0; j < categorical_.size(); ++j) c.index[categorical_[j]] = cmb[j];
        if (auto v = space_.nearest_valid(c)) return v;
      }
      combos_done_ = true;
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
  std::unordered_map<std::string, double> values_;
  std::optional<Config> best_, current_;
  double best_value_ = -std::numeric_limits<double>::infinity();
  double current_value_ = -std::numeric_limits<double>::infinity();
  std::optional<std::pair<size_t, int>> last_move_;
  std::pair<size_t, int> probe_{0, 0};
  std::string restart_pending_;
  bool started_ = false;
  bool combos_done_ = false;
  std::vector<std::vector<uint32_t>> visited_combos_;
};

}  // namespace

ACCELTUNE_REGISTER_STRATEGY("local", "coordinate descent per categorical sub-space, with restarts", Local)

}  // namespace acceltune
