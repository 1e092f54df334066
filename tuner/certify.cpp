// The definitions behind tuner/certify.hpp: certified gains.
#include "tuner/certify.hpp"

#include <algorithm>
#include <cmath>

#include "tuner/cancel.hpp"
#include "tuner/plan.hpp"

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

// One size under one job-wide assignment: the candidates' shared rounds choose a winner, fresh
// rounds of the winner against the default alone certify it. `fallback` (the job-wide assignment
// with the library's per-size choices) is a candidate too when the job-wide part is not the
// default's, so its own gain is known: it is what the size gets when no per-size choice pays.
struct SizeRun {
  SizeBest s;
  std::optional<Candidate> fallback;
};

}  // namespace

void certify(BestTable& best, const Space& space, const std::vector<Trial>& trials, TrialRunner& runner,
             const CertifyOptions& options, const std::function<void(const Json&)>& log,
             const std::function<void(int, int)>& progress, const Ranking* ranking) {
  if (options.top <= 0 || options.rounds <= 0) return;
  const Config def = space.default_config();
  const std::string def_key = space.key(def);
  best.plan.scopes = param_scopes(best.kernel, best.default_config, best.env);
  const auto& scopes = best.plan.scopes;
  const Json default_job = job_part(best.default_config, scopes);
  std::vector<uint64_t> sizes;
  for (const auto& s : best.sizes) sizes.push_back(s.bytes);
  // The job-wide assignments to try, best joint score first: at most options.jobs of them ahead
  // of the default's own, which is always tried last (it cannot make the job slower).
  std::vector<Json> jobs;
  for (const Json& j : joint_candidates(space, trials, sizes, scopes)) {
    if (j == default_job) break;
    if (static_cast<int>(jobs.size()) < options.jobs) jobs.push_back(j);
  }
  jobs.push_back(default_job);
  best.plan.notes.clear();
  best.plan.chosen_by = "certified";
  best.certified = true;

  int done = 0, total = 0;
  auto run_size = [&](size_t i, const Json& job) -> SizeRun {
    SizeRun out;
    SizeBest& s = out.s;
    s = best.sizes[i];
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
    std::vector<Config> configs;
    std::vector<int64_t> numbers;
    for (const Trial* t : trials_with_job(space, trials, s.bytes, job, scopes, ranking)) {
      if (t->key == def_key) continue;
      if (static_cast<int>(configs.size()) >= options.top) break;
      configs.push_back(t->config);
      numbers.push_back(t->number);
    }
    std::optional<size_t> fallback_at;
    if (job != default_job) {
      auto base = space.config_from_json(with_job(best.default_config, job));
      if (base && space.is_valid(*base)) {
        const std::string k = space.key(*base);
        for (size_t c = 0; c < configs.size(); ++c) {
          if (space.key(configs[c]) == k) fallback_at = c;
        }
        if (!fallback_at) {
          fallback_at = configs.size();
          configs.push_back(*base);
          numbers.push_back(-1);  // not a trial of the search: the job-wide part alone
        }
      }
    }
    if (configs.empty()) return out;
    // Rounds of the default and `cs` interleaved, A B C D then D C B A, so a drift during a
    // round affects both sides of each ratio alike: the default's values, then each config's.
    auto interleaved = [&](const std::vector<const Config*>& cs) {
      std::vector<std::vector<double>> v(cs.size() + 1);  // [0]: the default
      for (int r = 0; r < options.rounds && !cancel_requested(); ++r) {
        for (size_t j = 0; j <= cs.size(); ++j) {
          const size_t k = r % 2 == 0 ? j : cs.size() - j;
          Trial t = runner.run(k == 0 ? def : *cs[k - 1], -1, {s.bytes});
          const Measurement* m = t.at_size(s.bytes);
          v[k].push_back(m && m->state == State::ok ? m->value : std::nan(""));
          if ((!m || m->state != State::ok) && log) {
            // A lost round weakens the interval; say why, so a flaky config is visible.
            log(Json{{"event", "certify_failure"}, {"bytes", s.bytes},
                     {"config", space.config_to_json(k == 0 ? def : *cs[k - 1])},
                     {"state", m ? std::string(to_string(m->state)) : std::string("failed")},
                     {"error", m && !m->error.empty() ? m->error : t.error}});
          }
          if (progress) progress(++done, std::max(done, total));
        }
      }
      return v;
    };
    std::vector<const Config*> ptrs;
    for (const auto& c : configs) ptrs.push_back(&c);
    const std::vector<std::vector<double>> chosen_on = interleaved(ptrs);
    const std::vector<double>& def_values = chosen_on[0];
    for (size_t k = 0; k < configs.size(); ++k) {
      RatioInterval ri = ratio_interval(chosen_on[k + 1], def_values);
      Candidate c;
      c.trial = numbers[k];
      c.config = space.config_to_json(configs[k]);
      c.ratio = ri.ratio;
      c.ci_low = ri.low;
      c.ci_high = ri.high;
      c.value = median_of(chosen_on[k + 1]);
      c.default_value = median_of(def_values);
      c.rounds = ri.n;
      s.candidates.push_back(std::move(c));
    }
    if (fallback_at) out.fallback = s.candidates[*fallback_at];
    const Candidate* winner = nullptr;
    for (const auto& c : s.candidates) {
      if (c.rounds > 0 && (!winner || c.ratio > winner->ratio)) winner = &c;
    }
    if (winner && !cancel_requested()) {
      s.certified_trial = winner->trial;
      RatioInterval ri{winner->ratio, winner->ci_low, winner->ci_high, winner->rounds};
      s.certified_value = winner->value;
      s.certified_default_value = winner->default_value;
      if (configs.size() > 1) {
        // The best of several on the same rounds carries the choice's luck (the winner's curse):
        // its own interval would claim more than 95%. Certify it on fresh rounds against the
        // default alone, interleaved A B, B A.
        const Config* chosen = ptrs[static_cast<size_t>(winner - s.candidates.data())];
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
        s.chosen_is_default = winner->config == best.default_config;
      } else if (out.fallback) {
        // No per-size choice pays here: the size keeps the library's per-size choice, under the
        // job-wide assignment it cannot escape, with that config's own figures.
        const Candidate& f = *out.fallback;
        s.certified_trial = f.trial;
        s.certified_ratio = f.ratio;
        s.ci_low = f.ci_low;
        s.ci_high = f.ci_high;
        s.certified_rounds = f.rounds;
        s.certified_value = f.value;
        s.certified_default_value = f.default_value;
        s.confirmed = false;
        s.significant = f.rounds >= 2 && f.ci_low > 1.0;
        s.chosen_config = f.config;
        s.chosen_is_default = f.config == best.default_config;
      }
    }
    return out;
  };

  for (const Json& job : jobs) {
    if (cancel_requested()) break;
    total = done + static_cast<int>(best.sizes.size()) * (options.top + 1 + (job != default_job ? 1 : 0) + 2) *
                       options.rounds;
    std::vector<SizeRun> runs;
    for (size_t i = 0; i < best.sizes.size() && !cancel_requested(); ++i) runs.push_back(run_size(i, job));
    if (cancel_requested()) break;
    std::string why;
    if (job != default_job) {
      // A job-wide part must pay somewhere and cost nowhere: it cannot be switched off per size.
      bool pays = false;
      for (const auto& r : runs) {
        if (r.s.significant) pays = true;
        if (r.s.certified_trial && r.s.certified_rounds >= 2 && r.s.ci_high && *r.s.ci_high < 1.0) {
          why = fmt::format("{} is {:.2f}x [{:.2f}, {:.2f}] the defaults at {}", job.dump(), *r.s.certified_ratio,
                            *r.s.ci_low, *r.s.ci_high, format_bytes(r.s.bytes));
          break;
        }
        if (!r.fallback) {
          why = fmt::format("{} could not be measured without per-size choices at {}", job.dump(), format_bytes(r.s.bytes));
          break;
        }
      }
      if (why.empty() && !pays) {
        std::string figures;
        for (const auto& r : runs) {
          if (!r.s.certified_ratio) continue;
          figures += fmt::format("{}{} {:.2f}x [{:.2f}, {:.2f}]", figures.empty() ? "" : "; ", format_bytes(r.s.bytes),
                                 *r.s.certified_ratio, r.s.ci_low.value_or(0), r.s.ci_high.value_or(INFINITY));
        }
        why = fmt::format("{} gains significantly at no size ({})", job.dump(), figures);
      }
    }
    if (log) {
      log(Json{{"event", "certify_job"}, {"job", job}, {"accepted", why.empty()}, {"why", why}});
    }
    if (!why.empty()) {
      best.plan.notes.push_back("job-wide " + why + ": fell back to the next candidate");
      continue;
    }
    for (size_t i = 0; i < runs.size(); ++i) {
      best.sizes[i] = std::move(runs[i].s);
      const SizeBest& s = best.sizes[i];
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
    best.plan.job = job;
    best.plan.job_is_default = job == default_job;
    break;
  }
  if (cancel_requested()) return;
  finish_ranges(best);
}

}  // namespace acceltune
