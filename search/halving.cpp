// halving: successive halving where fidelity is measurement effort. A bracket measures 27 new
// configs at 1/9 of the effort (time cap and samples), keeps the best third for 1/3 of the
// effort and the best third of those for a full measurement; then the next bracket starts.
// New configs come from a proposer: random ("halving") or Bayesian ("halving-bayes"), told
// the screening results. Only full measurements enter the best-per-size table.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

constexpr int kEta = 3;
constexpr int kRungs = 3;  // efforts 1/9, 1/3, 1
constexpr int kBracket = 27;

class Halving final : public Strategy {
 public:
  Halving(const Space& space, std::unique_ptr<Strategy> proposer) : space_(space), proposer_(std::move(proposer)) {}

  std::optional<Config> ask() override {
    for (int guard = 0; guard < 4; ++guard) {
      // Promotions first: a rung whose members are all measured sends its best on.
      for (int r = 1; r < kRungs; ++r) {
        const auto& below = rungs_[static_cast<size_t>(r - 1)];
        const size_t wanted = below.size() / kEta;
        if (below.size() < rung_size(r - 1) || !all_measured(below, effort_of(r - 1))) continue;
        for (const auto& key : best_of(below, effort_of(r - 1), wanted)) {
          auto& rung = rungs_[static_cast<size_t>(r)];
          if (std::find(rung.begin(), rung.end(), key) == rung.end()) rung.push_back(key);
          if (!measured(key, effort_of(r))) {
            effort_ = effort_of(r);
            return configs_.at(key);
          }
        }
      }
      // The top rung done: a new bracket.
      if (rungs_[0].size() >= rung_size(0) && all_measured(rungs_[kRungs - 1], 1.0) &&
          rungs_[kRungs - 1].size() >= rung_size(kRungs - 1)) {
        for (auto& r : rungs_) r.clear();
      }
      if (rungs_[0].size() < rung_size(0)) {
        auto c = proposer_->ask();
        if (!c) {
          // The proposer ran dry: shrink this bracket to what it has.
          if (rungs_[0].empty()) return std::nullopt;
          exhausted_ = true;
          continue;
        }
        const std::string key = space_.key(*c);
        configs_.emplace(key, *c);
        rungs_[0].push_back(key);
        effort_ = effort_of(0);
        return c;
      }
      if (exhausted_) return std::nullopt;
    }
    return std::nullopt;
  }

  void tell(const Trial& t) override {
    configs_.emplace(t.key, t.config);
    const double v = t.state == State::ok && t.value ? *t.value : -std::numeric_limits<double>::infinity();
    auto& r = results_[t.key];
    r[t.effort] = v;
    if (t.effort >= 1.0 - 1e-9 && t.number == 0) {
      proposer_->tell(t);  // the default, measured fully by the study before any ask
      return;
    }
    if (std::abs(t.effort - effort_of(0)) < 1e-9) {
      proposer_->tell(t);
      // On resume the brackets are rebuilt from the stored screening trials.
      if (std::find(rungs_[0].begin(), rungs_[0].end(), t.key) == rungs_[0].end()) {
        if (rungs_[0].size() >= rung_size(0) && all_measured(rungs_[kRungs - 1], 1.0)) {
          for (auto& x : rungs_) x.clear();
        }
        rungs_[0].push_back(t.key);
      }
    }
  }

  double effort() const override { return effort_; }

 private:
  static double effort_of(int rung) { return std::pow(static_cast<double>(kEta), rung - (kRungs - 1)); }
  size_t rung_size(int r) const {
    size_t n = exhausted_ ? std::max<size_t>(rungs_[0].size(), 1) : kBracket;
    for (int i = 0; i < r; ++i) n = std::max<size_t>(n / kEta, 1);
    return n;
  }
  bool measured(const std::string& key, double effort) const {
    auto it = results_.find(key);
    if (it == results_.end()) return false;
    for (const auto& [e, v] : it->second) {
      if (e >= effort - 1e-9) return true;
    }
    return false;
  }
  bool all_measured(const std::vector<std::string>& keys, double effort) const {
    return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return measured(k, effort); });
  }
  double value_at(const std::string& key, double effort) const {
    const auto& r = results_.at(key);
    double best_e = -1, v = -std::numeric_limits<double>::infinity();
    for (const auto& [e, x] : r) {
      if (e >= effort - 1e-9 && (best_e < 0 || e < best_e)) {
        best_e = e;
        v = x;
      }
    }
    return v;
  }
  std::vector<std::string> best_of(const std::vector<std::string>& keys, double effort, size_t n) const {
    std::vector<std::string> sorted = keys;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](const std::string& a, const std::string& b) { return value_at(a, effort) > value_at(b, effort); });
    sorted.erase(std::remove_if(sorted.begin(), sorted.end(),
                                [&](const std::string& k) { return !std::isfinite(value_at(k, effort)); }),
                 sorted.end());
    if (sorted.size() > std::max<size_t>(n, 1)) sorted.resize(std::max<size_t>(n, 1));
    return sorted;
  }

  const Space& space_;
  std::unique_ptr<Strategy> proposer_;
  std::unordered_map<std::string, Config> configs_;
  std::unordered_map<std::string, std::map<double, double>> results_;
  std::vector<std::string> rungs_[kRungs];
  double effort_ = 1.0;
  bool exhausted_ = false;
};

Expected<std::unique_ptr<Strategy>> make_halving(const Space& space, uint64_t seed, const std::string& proposer) {
  ACCELTUNE_TRY_ASSIGN(std::unique_ptr<Strategy> p, make_strategy(proposer, space, seed));
  return std::unique_ptr<Strategy>(new Halving(space, std::move(p)));
}

}  // namespace

ACCELTUNE_REGISTER(StrategyInfo, "halving",
                   (StrategyInfo{"successive halving on measurement effort, random proposals",
                                 [](const Space& space, uint64_t seed) { return make_halving(space, seed, "random"); }}))
ACCELTUNE_REGISTER(StrategyInfo, "halving-bayes",
                   (StrategyInfo{"successive halving on measurement effort, Bayesian proposals",
                                 [](const Space& space, uint64_t seed) { return make_halving(space, seed, "bayes"); }}))

}  // namespace acceltune
