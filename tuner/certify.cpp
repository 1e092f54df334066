#include "tuner/certify.hpp"

#include <algorithm>
#include <cmath>

#include "tuner/cancel.hpp"

namespace acceltune {

double student_t_975(int df) {
  static const double table[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                 2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::nan("");
  if (df <= 30) return table[df];
  return 1.96 + 2.4 / df;  // close to the exact values above 30
}

RatioInterval ratio_interval(const std::vector<double>& candidate, const std::vector<double>& reference) {
  std::vector<double> logs;
  for (size_t i = 0; i < std::min(candidate.size(), reference.size()); ++i) {
    if (candidate[i] > 0 && reference[i] > 0 && std::isfinite(candidate[i]) && std::isfinite(reference[i])) {
      logs.push_back(std::log(candidate[i] / reference[i]));
    }
  }
  RatioInterval r;
  r.n = static_cast<int>(logs.size());
  if (logs.empty()) return r;
  const double n = static_cast<double>(logs.size());
  double mean = 0;
  for (double x : logs) mean += x / n;
  r.ratio = std::exp(mean);
  if (logs.size() < 2) {
    r.low = 0;
    r.high = INFINITY;
    return r;
  }
  double var = 0;
  for (double x : logs) var += (x - mean) * (x - mean) / (n - 1);
  const double half = student_t_975(r.n - 1) * std::sqrt(var / n);
  r.low = std::exp(mean - half);
  r.high = std::exp(mean + half);
  return r;
}

namespace {

double median_of(std::vector<double> xs) {
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](double x) { return !std::isfinite(x); }), xs.end());
  if (xs.empty()) return std::nan("");
  return quantile(xs, 0.5);
}

}  // namespace

void certify(BestTable& best, const Space& space, const std::vector<Trial>& trials, TrialRunner& runner,
             const CertifyOptions& options, const std::function<void(const Json&)>& log,
             const std::function<void(int, int)>& progress, const Ranking* ranking) {
  if (options.top <= 0 || options.rounds <= 0) return;
  const Config def = space.default_config();
  const std::string def_key = space.key(def);
  // Candidates per size: the top distinct configs by their search value there.
  std::vector<std::vector<const Trial*>> picks(best.sizes.size());
  int total = 0;
  for (size_t i = 0; i < best.sizes.size(); ++i) {
    const uint64_t bytes = best.sizes[i].bytes;
    std::vector<const Trial*> ok;
    for (const auto& t : trials) {
      const Measurement* m = t.at_size(bytes);
      if (t.key != def_key && m && m->state == State::ok && t.effort >= 1.0) ok.push_back(&t);
    }
    std::map<int64_t, size_t> rank;  // trial number -> position in the noise-aware order
    if (ranking) {
      if (auto it = ranking->find(bytes); it != ranking->end()) {
        for (size_t k = 0; k < it->second.size(); ++k) rank.emplace(it->second[k].trial, k);
      }
    }
    std::stable_sort(ok.begin(), ok.end(), [&](const Trial* a, const Trial* b) {
      if (!rank.empty()) {
        const auto ra = rank.find(a->number), rb = rank.find(b->number);
        const size_t pa = ra == rank.end() ? SIZE_MAX : ra->second, pb = rb == rank.end() ? SIZE_MAX : rb->second;
        if (pa != pb) return pa < pb;
      }
      return a->at_size(bytes)->value > b->at_size(bytes)->value;
    });
    if (ok.size() > static_cast<size_t>(options.top)) ok.resize(static_cast<size_t>(options.top));
    picks[i] = ok;
    total += static_cast<int>((ok.size() + 1) * static_cast<size_t>(options.rounds));
    if (ok.size() > 1) total += 2 * options.rounds;  // the winner's fresh rounds
  }
  int done = 0;
  best.certified = true;
  for (size_t i = 0; i < best.sizes.size(); ++i) {
    SizeBest& s = best.sizes[i];
    s.certified = true;
    s.candidates.clear();
    s.certified_trial.reset();
    s.certified_ratio.reset();
    s.ci_low.reset();
    s.ci_high.reset();
    s.significant = false;
    s.confirmed = false;
    s.certified_rounds = 0;
    s.certified_value = s.certified_default_value = 0;
    s.chosen_config = best.default_config;
    s.chosen_is_default = true;
    const auto& cands = picks[i];
    if (cands.empty()) continue;
    // Rounds of the default and `configs` interleaved, A B C D then D C B A, so a drift during a
    // round affects both sides of each ratio alike: the default's values, then each config's.
    auto interleaved = [&](const std::vector<const Config*>& configs) {
      std::vector<std::vector<double>> v(configs.size() + 1);  // [0]: the default
      for (int r = 0; r < options.rounds && !cancel_requested(); ++r) {
        for (size_t j = 0; j <= configs.size(); ++j) {
          const size_t k = r % 2 == 0 ? j : configs.size() - j;
          Trial t = runner.run(k == 0 ? def : *configs[k - 1], -1, {s.bytes});
          const Measurement* m = t.at_size(s.bytes);
          v[k].push_back(m && m->state == State::ok ? m->value : std::nan(""));
          if (progress) progress(++done, total);
        }
      }
      return v;
    };
    std::vector<const Config*> configs;
    for (const Trial* t : cands) configs.push_back(&t->config);
    const std::vector<std::vector<double>> chosen_on = interleaved(configs);
    const std::vector<double>& def_values = chosen_on[0];
    for (size_t k = 0; k < cands.size(); ++k) {
      RatioInterval ri = ratio_interval(chosen_on[k + 1], def_values);
      Candidate c;
      c.trial = cands[k]->number;
      c.config = space.config_to_json(cands[k]->config);
      c.ratio = ri.ratio;
      c.ci_low = ri.low;
      c.ci_high = ri.high;
      c.value = median_of(chosen_on[k + 1]);
      c.default_value = median_of(def_values);
      c.rounds = ri.n;
      s.candidates.push_back(std::move(c));
    }
    const Candidate* winner = nullptr;
    for (const auto& c : s.candidates) {
      if (c.rounds > 0 && (!winner || c.ratio > winner->ratio)) winner = &c;
    }
    if (winner && !cancel_requested()) {
      s.certified_trial = winner->trial;
      RatioInterval ri{winner->ratio, winner->ci_low, winner->ci_high, winner->rounds};
      s.certified_value = winner->value;
      s.certified_default_value = winner->default_value;
      if (cands.size() > 1) {
        // The best of several on the same rounds carries the choice's luck (the winner's curse):
        // its own interval would claim more than 95%. Certify it on fresh rounds against the
        // default alone, interleaved A B, B A.
        const Config* chosen = configs[static_cast<size_t>(winner - s.candidates.data())];
        const std::vector<std::vector<double>> fresh = interleaved({chosen});
        ri = ratio_interval(fresh[1], fresh[0]);
        s.confirmed = true;
        s.certified_value = median_of(fresh[1]);
        s.certified_default_value = median_of(fresh[0]);
      }
      s.certified_ratio = ri.ratio;
      s.ci_low = ri.low;
      s.ci_high = ri.high;
      s.certified_rounds = ri.n;
      s.significant = ri.n >= 2 && ri.low > 1.0;
      if (s.significant) {
        s.chosen_config = winner->config;
        s.chosen_is_default = false;
      }
    }
    if (log) {
      Json e = Json{{"event", "certify"}, {"bytes", s.bytes}, {"significant", s.significant}};
      if (s.certified_trial) {
        e["trial"] = *s.certified_trial;
        e["ratio"] = *s.certified_ratio;
        e["ci_low"] = *s.ci_low;
        e["ci_high"] = *s.ci_high;
        e["confirmed"] = s.confirmed;
      }
      log(e);
    }
  }
  finish_ranges(best);
}

}  // namespace acceltune
