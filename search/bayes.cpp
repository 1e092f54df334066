// bayes: Bayesian optimisation with a Gaussian process (search/gp.hpp) and noise-aware log
// expected improvement, maximised over every unevaluated valid config (or, in spaces of more
// than 1e5 configs, a large sample plus the neighbours of the best). When a study covers
// several message sizes, the size is an input of the model, so what one size teaches is shared
// with the others, and the acquisition sums the improvement expected at every size; every third
// ask is a trust-region step, which with several sizes takes each size in turn.
// The model's time is the user's: when trials are timed and a model pass costs more than a fifth
// of a trial, one pass picks up to eight configs apart from each other, and the model is refitted
// less often.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "search/gp.hpp"
#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

constexpr uint64_t kCandidateLimit = 100'000;
constexpr size_t kSampleSize = 20'000;
// One model ask in this many is a trust-region step around the incumbent (chosen on the landscape
// family's training seeds 1-40: every 2nd, 3rd or never; docs/benchmarks.md).
constexpr int kLocalEvery = 3;
// The model may take this share of a trial's time; above it, one pass picks several configs.
constexpr double kModelShare = 0.2;
constexpr size_t kMaxBatch = 8;

class Bayes final : public Strategy {
 public:
  Bayes(const Space& space, uint64_t seed) : space_(space), seed_(seed), rng_(hash_combine(seed, "bayes")) {
    for (size_t k = 0; k < space.params().size(); ++k) {
      if (is_ordered(space.params()[k].kind)) ordered_.push_back(k);
      else categorical_.push_back(k);
    }
    const size_t d = space.params().size();
    init_points_ = static_cast<int>(std::clamp<size_t>(d / 2 + 2, 4, 8));
  }

  std::optional<Config> ask() override {
    if (!built_) build();
    if (configs_.empty()) return std::nullopt;
    // What the last model pass picked beside its best, while still unmeasured.
    while (!queue_.empty()) {
      const size_t i = queue_.front();
      queue_.pop_front();
      if (!evaluated_[i]) return configs_[i];
    }
    std::optional<size_t> pick;
    if (static_cast<int>(ok_trials_) < init_points_) {
      pick = space_filling();
    } else {
      const auto start = std::chrono::steady_clock::now();
      batch_ = batch_size();
      pick = best_acquisition();
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      pass_seconds_ = pass_seconds_ > 0 ? 0.7 * pass_seconds_ + 0.3 * took : took;
    }
    if (!pick) pick = any_unevaluated();
    if (!pick) return std::nullopt;
    return configs_[*pick];
  }

  void tell(const Trial& t) override {
    told_.insert(t.key);
    if (t.cost_seconds > 0 && t.effort >= 1.0) {
      trial_seconds_ += t.cost_seconds;
      ++timed_trials_;
    }
    if (auto it = index_.find(t.key); it != index_.end()) evaluated_[it->second] = true;
    if (t.state != State::ok) return;  // infeasible: never proposed again, not a zero
    ++ok_trials_;
    for (const auto& m : t.measurements) {
      if (m.state != State::ok || !std::isfinite(m.value)) continue;
      if (std::find(sizes_.begin(), sizes_.end(), m.bytes) == sizes_.end()) {
        sizes_.push_back(m.bytes);
        std::sort(sizes_.begin(), sizes_.end());
        built_ = false;  // the candidate grid gains a size axis
      }
      pending_.push_back({t.config, m.bytes, m.value});
    }
  }

 private:
  struct Obs {
    Config config;
    uint64_t bytes;
    double value;
  };

  GpPoint point(const Config& c, uint64_t bytes) const { return enc_->point(c, bytes); }

  // The candidate configs, the model over configs x sizes, and the observations so far.
  void build() {
    built_ = true;
    queue_.clear();  // indices into the old candidate list
    configs_.clear();
    index_.clear();
    if (space_.count_is_exact() && space_.count_valid() <= kCandidateLimit) {
      space_.for_each_valid([&](const Config& c) {
        add_config(c);
        return true;
      });
    } else {
      sample_configs();
    }
    evaluated_.assign(configs_.size(), false);
    for (size_t i = 0; i < configs_.size(); ++i) evaluated_[i] = told_.count(space_.key(configs_[i])) > 0;
    if (sizes_.empty()) sizes_.push_back(0);
    enc_ = std::make_unique<PointEncoder>(space_, sizes_);
    gp_ = std::make_unique<CandidateGp>(enc_->ordered_dims(), enc_->categorical_dims(), /*quadratic=*/true);
    std::vector<GpPoint> cands;
    cands.reserve(configs_.size() * sizes_.size());
    for (const auto& c : configs_) {
      for (uint64_t b : sizes_) cands.push_back(point(c, b));
    }
    gp_->set_candidates(std::move(cands));
    std::vector<GpPoint> xs;
    for (const auto& o : observed_) xs.push_back(point(o.config, o.bytes));
    gp_->set_observations(std::move(xs));
    fitted_at_ = 0;
  }

  void add_config(const Config& c) {
    std::string k = space_.key(c);
    if (index_.count(k)) return;
    index_.emplace(std::move(k), configs_.size());
    configs_.push_back(c);
  }

  void sample_configs() {
    for (size_t attempt = 0; configs_.size() < kSampleSize && attempt < 50 * kSampleSize; ++attempt) {
      Config c = space_.from_ordinal(rng_.below(space_.cartesian_size()));
      if (space_.is_valid(c) && !told_.count(space_.key(c))) add_config(c);
    }
    // Neighbours of the best configs seen, where improvements are likeliest.
    std::vector<const Obs*> best;
    for (const auto& o : observed_) best.push_back(&o);
    std::sort(best.begin(), best.end(), [](const Obs* a, const Obs* b) { return a->value > b->value; });
    for (size_t i = 0; i < std::min<size_t>(best.size(), 8); ++i) {
      for (const auto& n : space_.neighbours(best[i]->config)) add_config(n);
    }
  }

  Eigen::VectorXd targets() const {
    std::vector<double> values;
    std::vector<uint64_t> bytes;
    for (const auto& o : observed_) {
      values.push_back(o.value);
      bytes.push_back(o.bytes);
    }
    return standardise(values, bytes).y;
  }

  void absorb_pending() {
    // Most of the data at once (a resumed study): one factorisation of all; otherwise one block
    // update (a pass's batch of trials, every size of each).
    const bool all = pending_.size() > 16 && 2 * pending_.size() > observed_.size();
    std::vector<GpPoint> xs;
    for (auto& o : pending_) {
      observed_.push_back(o);
      if (!all) xs.push_back(point(o.config, o.bytes));
    }
    pending_.clear();
    if (all) {
      for (const auto& o : observed_) xs.push_back(point(o.config, o.bytes));
      gp_->set_observations(std::move(xs));
    } else {
      gp_->add_observations(xs);
    }
  }

  std::optional<size_t> space_filling() {
    absorb_pending();
    // Greedy maximin over a random subset of the unevaluated configs.
    std::vector<size_t> pool;
    for (size_t i = 0; i < configs_.size(); ++i) {
      if (!evaluated_[i]) pool.push_back(i);
    }
    if (pool.empty()) return std::nullopt;
    for (size_t i = 0; i < std::min<size_t>(pool.size(), 2000); ++i) std::swap(pool[i], pool[i + rng_.below(pool.size() - i)]);
    pool.resize(std::min<size_t>(pool.size(), 2000));
    std::vector<const Config*> chosen;
    for (size_t i = 0; i < configs_.size(); ++i) {
      if (evaluated_[i]) chosen.push_back(&configs_[i]);
    }
    auto distance = [&](const Config& a, const Config& b) {
      const auto ea = space_.encode(a), eb = space_.encode(b);
      double d = 0;
      for (size_t k : ordered_) d += (ea[k] - eb[k]) * (ea[k] - eb[k]);
      for (size_t k : categorical_) d += a.index[k] != b.index[k] ? 1.0 : 0.0;
      return d;
    };
    size_t best = pool[0];
    double best_d = -1;
    for (size_t i : pool) {
      double dmin = std::numeric_limits<double>::infinity();
      for (const Config* c : chosen) dmin = std::min(dmin, distance(configs_[i], *c));
      if (dmin > best_d) {
        best_d = dmin;
        best = i;
      }
    }
    return best;
  }

  std::optional<size_t> best_acquisition() {
    absorb_pending();
    const size_t n = observed_.size();
    if (n == 0) return std::nullopt;
    Eigen::VectorXd y = targets();
    // Hyper-parameters are refitted while data is scarce, then as it grows by a fifth; by a half
    // while the model costs more than the trials (a refit rebuilds the factor of every candidate).
    const double growth = batch_ >= kMaxBatch / 2 ? 1.5 : 1.2;
    if (fitted_at_ == 0 || n <= 40 || static_cast<double>(n) >= growth * static_cast<double>(fitted_at_)) {
      // Few starts once the data is plentiful: the warm start from the last fit is then close.
      // Above kFitSample observations the hyper-parameters come from a sample of them, so a
      // refit costs about the same however long the study runs.
      gp_->fit_sampled(y, hash_combine(seed_, std::to_string(n)), n <= 40 ? 3 : n <= 120 ? 2 : 1,
                       CandidateGp::kFitSample);
      fitted_at_ = n;
    }
    Eigen::VectorXd mean, var, mean_obs;
    gp_->posterior(y, mean, var, &mean_obs);
    // Noise-aware incumbent: the best posterior mean among the observations, per size.
    const size_t S = sizes_.size();
    std::vector<double> incumbent(S, -std::numeric_limits<double>::infinity());
    for (size_t i = 0; i < n; ++i) {
      const size_t s = static_cast<size_t>(std::lower_bound(sizes_.begin(), sizes_.end(), observed_[i].bytes) - sizes_.begin());
      incumbent[s] = std::max(incumbent[s], mean_obs[static_cast<Eigen::Index>(i)]);
    }
    // Every kLocalEvery-th ask refines locally: the acquisition is maximised only over the trust
    // region around the incumbent config (with one size, the best posterior mean).
    ++model_asks_;
    std::optional<Config> centre;
    std::optional<size_t> only;  // the size whose EI alone counts in this step
    if (model_asks_ % kLocalEvery == 0 && S > 1) {
      // With several sizes they take turns: the region around that size's incumbent (its best
      // posterior mean), that size's expected improvement alone.
      const size_t s = static_cast<size_t>(model_asks_ / kLocalEvery) % S;
      double top = -std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < n; ++i) {
        if (observed_[i].bytes != sizes_[s]) continue;
        if (mean_obs[static_cast<Eigen::Index>(i)] > top) {
          top = mean_obs[static_cast<Eigen::Index>(i)];
          centre = observed_[i].config;
        }
      }
      only = s;
    } else if (model_asks_ % kLocalEvery == 0) {
      std::map<std::string, std::pair<double, int>> score;
      std::map<std::string, const Config*> cfg;
      for (size_t i = 0; i < n; ++i) {
        const std::string k = space_.key(observed_[i].config);
        auto& sc = score[k];
        sc.first += mean_obs[static_cast<Eigen::Index>(i)];
        sc.second += 1;
        cfg[k] = &observed_[i].config;
      }
      double top = -std::numeric_limits<double>::infinity();
      for (const auto& [k, sc] : score) {
        if (sc.second == static_cast<int>(sizes_.size()) && sc.first / sc.second > top) {
          top = sc.first / sc.second;
          centre = *cfg[k];
        }
      }
    }
    for (int radius = 1; radius <= 3; ++radius) {
      auto pick = maximise(mean, var, incumbent, centre ? &*centre : nullptr, radius, only);
      if (pick || !centre) return pick;
    }
    return maximise(mean, var, incumbent, nullptr, 0);
  }

  // Within `radius` index steps of `centre` in every ordered param, its categorical values kept;
  // or one categorical value changed, the ordered ones kept.
  bool in_region(const Config& c, const Config& centre, int radius) const {
    int changed = 0;
    bool moved = false;
    for (size_t k : categorical_) changed += c.index[k] != centre.index[k] ? 1 : 0;
    for (size_t k : ordered_) {
      const int d = std::abs(static_cast<int>(c.index[k]) - static_cast<int>(centre.index[k]));
      if (d > radius) return false;
      moved = moved || d > 0;
    }
    return changed == 0 || (changed == 1 && !moved);
  }

  std::optional<size_t> maximise(const Eigen::VectorXd& mean, const Eigen::VectorXd& var,
                                 const std::vector<double>& incumbent, const Config* centre, int radius,
                                 std::optional<size_t> only = std::nullopt) {
    const size_t S = sizes_.size();
    std::optional<size_t> best;
    double best_a = -std::numeric_limits<double>::infinity();
    // With a batch, the best few dozen, from which the others are drawn.
    std::vector<std::pair<double, size_t>> top;
    const size_t keep = batch_ > 1 ? 64 : 0;
    for (size_t c = 0; c < configs_.size(); ++c) {
      if (evaluated_[c]) continue;
      if (centre && !in_region(configs_[c], *centre, radius)) continue;
      double acc = -std::numeric_limits<double>::infinity();
      for (size_t s = 0; s < S; ++s) {
        if (only && s != *only) continue;
        const Eigen::Index j = static_cast<Eigen::Index>(c * S + s);
        const double sd = std::sqrt(var[j]);
        const double base = std::isfinite(incumbent[s]) ? incumbent[s] : 0.0;
        const double lei = std::log(sd) + log_h((mean[j] - base) / sd);
        acc = acc > lei ? acc + std::log1p(std::exp(lei - acc)) : lei + std::log1p(std::exp(acc - lei));
      }
      if (acc > best_a) {
        best_a = acc;
        best = c;
      }
      if (keep > 0 && (top.size() < keep || acc > top.front().first)) {
        top.emplace_back(acc, c);
        std::push_heap(top.begin(), top.end(), std::greater<>());
        if (top.size() > keep) {
          std::pop_heap(top.begin(), top.end(), std::greater<>());
          top.pop_back();
        }
      }
    }
    if (best && batch_ > 1) {
      // The rest of the batch: the next best, each at least two steps from every pick before it
      // (so one pass does not spend its batch on one spot).
      std::sort(top.begin(), top.end(), std::greater<>());
      std::vector<size_t> picks = {*best};
      for (const auto& [a, c] : top) {
        if (picks.size() >= batch_) break;
        bool apart = true;
        for (size_t p : picks) apart = apart && steps(configs_[c], configs_[p]) >= 2;
        if (apart) picks.push_back(c);
      }
      queue_.assign(picks.begin() + 1, picks.end());
    }
    return best;
  }

  // Index steps between two configs: ordered params by how far, categorical ones by whether.
  int steps(const Config& a, const Config& b) const {
    int d = 0;
    for (size_t k : ordered_) d += std::abs(static_cast<int>(a.index[k]) - static_cast<int>(b.index[k]));
    for (size_t k : categorical_) d += a.index[k] != b.index[k] ? 1 : 0;
    return d;
  }

  // Picks per model pass: one while the model's pass costs at most kModelShare of a trial's time
  // (or trials are not timed); otherwise as many as bring it to that share, at most kMaxBatch.
  size_t batch_size() const {
    if (timed_trials_ == 0 || pass_seconds_ <= 0) return 1;
    const double trial = trial_seconds_ / static_cast<double>(timed_trials_);
    const double want = std::ceil(pass_seconds_ / (kModelShare * trial));
    return static_cast<size_t>(std::clamp(want, 1.0, static_cast<double>(kMaxBatch)));
  }

  std::optional<size_t> any_unevaluated() {
    for (size_t i = 0; i < configs_.size(); ++i) {
      if (!evaluated_[i]) return i;
    }
    return std::nullopt;
  }

  const Space& space_;
  uint64_t seed_;
  Rng rng_;
  std::vector<size_t> ordered_, categorical_;
  int init_points_ = 5;
  bool built_ = false;
  std::vector<Config> configs_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<bool> evaluated_;
  std::unordered_set<std::string> told_;
  std::vector<uint64_t> sizes_;
  std::vector<Obs> observed_, pending_;
  size_t ok_trials_ = 0;
  size_t fitted_at_ = 0;
  std::unique_ptr<PointEncoder> enc_;
  std::unique_ptr<CandidateGp> gp_;
  int model_asks_ = 0;
  // Model time against trial time: picks queued from the last pass, its batch size, the recent
  // cost of a model pass (exponentially weighted), and the trials' measured time.
  std::deque<size_t> queue_;
  size_t batch_ = 1;
  double pass_seconds_ = 0, trial_seconds_ = 0;
  size_t timed_trials_ = 0;
};

}  // namespace

ACCELTUNE_REGISTER_STRATEGY("bayes", "Bayesian optimisation: Gaussian process, log expected improvement", Bayes)

}  // namespace acceltune
