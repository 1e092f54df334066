// The definitions behind tuner/certify.hpp: certified gains.
#include "tuner/certify.hpp"

#include <algorithm>
#include <cmath>

#include "tuner/cancel.hpp"
#include "tuner/plan.hpp"

namespace acceltune {

namespace {

// Student's t: the two-sided 97.5% and 99.5% quantiles for 1 to 30 degrees of freedom.
struct TRow {
  double q975, q995;
};
constexpr TRow kT[] = {{0, 0},          {12.706, 63.657}, {4.303, 9.925}, {3.182, 5.841}, {2.776, 4.604},
                       {2.571, 4.032},  {2.447, 3.707},   {2.365, 3.499}, {2.306, 3.355}, {2.262, 3.250},
                       {2.228, 3.169},  {2.201, 3.106},   {2.179, 3.055}, {2.160, 3.012}, {2.145, 2.977},
                       {2.131, 2.947},  {2.120, 2.921},   {2.110, 2.898}, {2.101, 2.878}, {2.093, 2.861},
                       {2.086, 2.845},  {2.080, 2.831},   {2.074, 2.819}, {2.069, 2.807}, {2.064, 2.797},
                       {2.060, 2.787},  {2.056, 2.779},   {2.052, 2.771}, {2.048, 2.763}, {2.045, 2.756},
                       {2.042, 2.750}};

}  // namespace

double student_t_975(int df) {
  if (df < 1) return std::nan("");
  if (df <= 30) return kT[df].q975;
  return 1.96 + 2.4 / df;  // close to the exact values above 30
}

double student_t_995(int df) {
  if (df < 1) return std::nan("");
  if (df <= 30) return kT[df].q995;
  return 2.576 + 5.5 / df;  // close to the exact values above 30
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

// The configs one size measures under one job-wide assignment: the search's best with that
// job-wide part, and the fallback when it is not among them.
struct Contenders {
  std::vector<Config> configs;
  std::vector<int64_t> numbers;  // their trials; -1: not a trial of the search
  std::optional<size_t> fallback_at;
};

// A size's entry with every certified figure cleared and the default chosen, before its rounds.
SizeBest uncertified(SizeBest s, const Json& default_config) {
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
  s.chosen_config = default_config;
  s.chosen_is_default = true;
  return s;
}

// No per-size choice pays here: the size keeps the library's per-size choice, under the
// job-wide assignment it cannot escape, with that config's own figures.
void fall_back(SizeBest& s, const Candidate& f, const Json& default_config) {
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
  s.chosen_is_default = f.config == default_config;
}

// Why a job-wide part is refused, or "" when it pays somewhere and costs nowhere: it cannot be
// switched off per size.
std::string job_refusal(const Json& job, const std::vector<SizeRun>& runs) {
  bool pays = false;
  for (const auto& r : runs) {
    if (r.s.significant) pays = true;
    if (r.s.certified_trial && r.s.certified_rounds >= 2 && r.s.ci_high && *r.s.ci_high < 1.0) {
      return fmt::format("{} is {:.2f}x [{:.2f}, {:.2f}] the defaults at {}", job.dump(), *r.s.certified_ratio,
                         *r.s.ci_low, *r.s.ci_high, format_bytes(r.s.bytes));
    }
    if (!r.fallback) {
      return fmt::format("{} could not be measured without per-size choices at {}", job.dump(), format_bytes(r.s.bytes));
    }
  }
  if (pays) return "";
  std::string figures;
  for (const auto& r : runs) {
    if (!r.s.certified_ratio) continue;
    figures += fmt::format("{}{} {:.2f}x [{:.2f}, {:.2f}]", figures.empty() ? "" : "; ", format_bytes(r.s.bytes),
                           *r.s.certified_ratio, r.s.ci_low.value_or(0), r.s.ci_high.value_or(INFINITY));
  }
  return fmt::format("{} gains significantly at no size ({})", job.dump(), figures);
}

// The certification of one study's best table: it owns the rounds' progress count.
class Certifier {
 public:
  Certifier(BestTable& best, const Space& space, const std::vector<Trial>& trials, TrialRunner& runner,
            const CertifyOptions& options, const std::function<void(const Json&)>& log,
            const std::function<void(int, int)>& progress, const Ranking* ranking)
      : best_(best), space_(space), trials_(trials), runner_(runner), options_(options), log_(log),
        progress_(progress), ranking_(ranking), def_(space.default_config()), def_key_(space.key(def_)),
        scopes_(best.plan.scopes), default_job_(job_part(best.default_config, scopes_)) {}

  // Each job-wide assignment in turn until one is accepted; the default's, last, always is.
  void run() {
    const std::vector<Json> jobs = jobs_to_try();
    best_.plan.notes.clear();
    best_.plan.chosen_by = "certified";
    best_.certified = true;
    for (const Json& job : jobs) {
      if (cancel_requested()) break;
      if (past_deadline() && job != jobs.front() && job != default_job_) {
        // Out of time: only the default's own part, which ends the list, is certified still.
        if (!skipped_for_time_) best_.plan.notes.push_back("the time limit left no time to try another job-wide part");
        skipped_for_time_ = true;
        continue;
      }
      total_ = done_ + static_cast<int>(best_.sizes.size()) *
                           (options_.top + 1 + (job != default_job_ ? 1 : 0) + 2) * options_.rounds;
      std::vector<SizeRun> runs;
      for (size_t i = 0; i < best_.sizes.size() && !cancel_requested(); ++i) runs.push_back(run_size(i, job));
      if (cancel_requested()) break;
      const std::string why = job != default_job_ ? job_refusal(job, runs) : "";
      if (log_) log_(Json{{"event", "certify_job"}, {"job", job}, {"accepted", why.empty()}, {"why", why}});
      if (!why.empty()) {
        best_.plan.notes.push_back("job-wide " + why + ": fell back to the next candidate");
        continue;
      }
      adopt(job, runs);
      break;
    }
    if (cut_short_) {
      best_.plan.notes.push_back(fmt::format("certification reached the time limit: some intervals rest on fewer "
                                             "than its {} rounds",
                                             options_.rounds));
    }
  }

 private:
  // The job-wide assignments to try, best joint score first: at most options.jobs of them ahead
  // of the default's own, which is always tried last (it cannot make the job slower).
  std::vector<Json> jobs_to_try() const {
    std::vector<uint64_t> sizes;
    for (const auto& s : best_.sizes) sizes.push_back(s.bytes);
    std::vector<Json> jobs;
    for (const Json& j : joint_candidates(space_, trials_, sizes, scopes_)) {
      if (j == default_job_) break;
      if (static_cast<int>(jobs.size()) < options_.jobs) jobs.push_back(j);
    }
    jobs.push_back(default_job_);
    return jobs;
  }

  Contenders contenders(uint64_t bytes, const Json& job) const {
    Contenders out;
    for (const Trial* t : trials_with_job(space_, trials_, bytes, job, scopes_, ranking_)) {
      if (t->key == def_key_) continue;
      if (static_cast<int>(out.configs.size()) >= options_.top) break;
      out.configs.push_back(t->config);
      out.numbers.push_back(t->number);
    }
    if (job == default_job_) return out;
    auto base = space_.config_from_json(with_job(best_.default_config, job));
    if (!base || !space_.is_valid(*base)) return out;
    const std::string k = space_.key(*base);
    for (size_t c = 0; c < out.configs.size(); ++c) {
      if (space_.key(out.configs[c]) == k) out.fallback_at = c;
    }
    if (!out.fallback_at) {
      out.fallback_at = out.configs.size();
      out.configs.push_back(*base);
      out.numbers.push_back(-1);  // not a trial of the search: the job-wide part alone
    }
    return out;
  }

  // Rounds of the default and `cs` interleaved, A B C D then D C B A, so a drift during a
  // round affects both sides of each ratio alike: the default's values, then each config's.
  std::vector<std::vector<double>> interleaved(const std::vector<const Config*>& cs, uint64_t bytes) {
    std::vector<std::vector<double>> v(cs.size() + 1);  // [0]: the default
    double last_round = 0;  // seconds the previous round took
    for (int r = 0; r < options_.rounds && !cancel_requested(); ++r) {
      // No round starts after the stage's end, the first of a size neither (the measurement's own
      // first round always runs): with one per size and candidate it would overrun the command's
      // time limit by a round per size. A size left without rounds keeps the defaults.
      if ((r == 0 && past_deadline()) || !round_may_start(options_.deadline, r, last_round)) {
        if (log_) log_(Json{{"event", "certify_time_limit"}, {"bytes", bytes}, {"rounds", r}, {"of", options_.rounds}});
        cut_short_ = true;
        break;
      }
      const auto round_start = std::chrono::steady_clock::now();
      for (size_t j = 0; j <= cs.size(); ++j) {
        const size_t k = r % 2 == 0 ? j : cs.size() - j;
        Trial t = runner_.run(k == 0 ? def_ : *cs[k - 1], -1, {bytes});
        const Measurement* m = t.at_size(bytes);
        v[k].push_back(m && m->state == State::ok ? m->value : std::nan(""));
        if ((!m || m->state != State::ok) && log_) {
          // A lost round weakens the interval; say why, so a flaky config is visible.
          log_(Json{{"event", "certify_failure"}, {"bytes", bytes},
                    {"config", space_.config_to_json(k == 0 ? def_ : *cs[k - 1])},
                    {"state", m ? std::string(to_string(m->state)) : std::string("failed")},
                    {"error", m && !m->error.empty() ? m->error : t.error}});
        }
        ++done_;
        if (progress_) progress_(done_, std::max(done_, total_));
      }
      last_round = std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
    }
    return v;
  }

  // Each contender's figures from the shared rounds, against the default's.
  std::vector<Candidate> candidates_of(const Contenders& c, const std::vector<std::vector<double>>& on) const {
    std::vector<Candidate> out;
    for (size_t k = 0; k < c.configs.size(); ++k) {
      RatioInterval ri = ratio_interval(on[k + 1], on[0]);
      Candidate cand;
      cand.trial = c.numbers[k];
      cand.config = space_.config_to_json(c.configs[k]);
      cand.ratio = ri.ratio;
      cand.ci_low = ri.low;
      cand.ci_high = ri.high;
      cand.value = median_of(on[k + 1]);
      cand.default_value = median_of(on[0]);
      cand.rounds = ri.n;
      out.push_back(std::move(cand));
    }
    return out;
  }

  SizeRun run_size(size_t i, const Json& job) {
    SizeRun out;
    out.s = uncertified(best_.sizes[i], best_.default_config);
    const Contenders c = contenders(out.s.bytes, job);
    if (c.configs.empty()) return out;
    std::vector<const Config*> ptrs;
    for (const auto& config : c.configs) ptrs.push_back(&config);
    out.s.candidates = candidates_of(c, interleaved(ptrs, out.s.bytes));
    if (c.fallback_at) out.fallback = out.s.candidates[*c.fallback_at];
    const Candidate* winner = nullptr;
    for (const auto& cand : out.s.candidates) {
      if (cand.rounds > 0 && (!winner || cand.ratio > winner->ratio)) winner = &cand;
    }
    if (winner && !cancel_requested()) {
      const size_t at = static_cast<size_t>(winner - out.s.candidates.data());
      certify_winner(out, *winner, c.configs.size() > 1 ? ptrs[at] : nullptr);
    }
    return out;
  }

  // The winner's figures, from fresh rounds when it was chosen among several (`chosen`); it is
  // the size's choice when significant, else the fallback is.
  void certify_winner(SizeRun& out, const Candidate& winner, const Config* chosen) {
    SizeBest& s = out.s;
    s.certified_trial = winner.trial;
    RatioInterval ri{winner.ratio, winner.ci_low, winner.ci_high, winner.rounds};
    s.certified_value = winner.value;
    s.certified_default_value = winner.default_value;
    if (chosen) {
      // The best of several on the same rounds carries the choice's luck (the winner's curse):
      // its own interval would claim more than 95%. Certify it on fresh rounds against the
      // default alone, interleaved A B, B A.
      const std::vector<std::vector<double>> fresh = interleaved({chosen}, s.bytes);
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
      s.chosen_config = winner.config;
      s.chosen_is_default = winner.config == best_.default_config;
    } else if (out.fallback) {
      fall_back(s, *out.fallback, best_.default_config);
    }
  }

  // The accepted job-wide assignment's sizes become the table's, each logged.
  void adopt(const Json& job, std::vector<SizeRun>& runs) {
    for (size_t i = 0; i < runs.size(); ++i) {
      best_.sizes[i] = std::move(runs[i].s);
      const SizeBest& s = best_.sizes[i];
      if (!log_) continue;
      Json e = Json{{"event", "certify"}, {"bytes", s.bytes}, {"significant", s.significant}};
      if (s.certified_trial) {
        e["trial"] = *s.certified_trial;
        e["ratio"] = *s.certified_ratio;
        e["ci_low"] = *s.ci_low;
        e["ci_high"] = *s.ci_high;
        e["confirmed"] = s.confirmed;
      }
      log_(e);
    }
    best_.plan.job = job;
    best_.plan.job_is_default = job == default_job_;
  }

  BestTable& best_;
  const Space& space_;
  const std::vector<Trial>& trials_;
  TrialRunner& runner_;
  const CertifyOptions& options_;
  const std::function<void(const Json&)>& log_;
  const std::function<void(int, int)>& progress_;
  bool cut_short_ = false, skipped_for_time_ = false;
  bool past_deadline() const { return deadline_passed(options_.deadline); }
  const Ranking* ranking_;
  const Config def_;
  const std::string def_key_;
  const std::map<std::string, Scope>& scopes_;
  const Json default_job_;
  int done_ = 0, total_ = 0;
};

}  // namespace

void certify(BestTable& best, const Space& space, const std::vector<Trial>& trials, TrialRunner& runner,
             const CertifyOptions& options, const std::function<void(const Json&)>& log,
             const std::function<void(int, int)>& progress, const Ranking* ranking) {
  if (options.top <= 0 || options.rounds <= 0) return;
  best.plan.scopes = param_scopes(best.kernel, best.default_config, best.env);
  Certifier(best, space, trials, runner, options, log, progress, ranking).run();
  if (cancel_requested()) return;
  finish_ranges(best);
}

}  // namespace acceltune
