// The definitions behind tuner/verdict.hpp: the verdict a plan must pass to ship.
#include "tuner/verdict.hpp"

#include <fmt/format.h>

#include <cmath>

#include "tuner/certify.hpp"
#include "tuner/value.hpp"

namespace acceltune {

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::ships: return "ships";
    case Verdict::worse: return "worse";
    case Verdict::fails: return "fails";
    case Verdict::no_gain: return "no gain";
    case Verdict::undecided: return "undecided";
  }
  return "undecided";
}

Verdict verdict_from_string(const std::string& name) {
  for (Verdict v : {Verdict::ships, Verdict::worse, Verdict::fails, Verdict::no_gain}) {
    if (name == to_string(v)) return v;
  }
  return Verdict::undecided;
}

namespace {

// Per size: the mean log ratio, its standard error and the count of paired rounds.
struct LogRatios {
  double mean = 0, se = 0;
  int n = 0;
  bool failed = false;  // a round where the defaults measured and the plan did not
};

LogRatios log_ratios(const std::vector<double>& plan, const std::vector<double>& defaults) {
  LogRatios r;
  std::vector<double> logs;
  for (size_t i = 0; i < std::min(plan.size(), defaults.size()); ++i) {
    const bool p = plan[i] > 0 && std::isfinite(plan[i]), d = defaults[i] > 0 && std::isfinite(defaults[i]);
    if (d && !p) r.failed = true;
    if (p && d) logs.push_back(std::log(plan[i] / defaults[i]));
  }
  r.n = static_cast<int>(logs.size());
  if (logs.empty()) return r;
  for (double x : logs) r.mean += x / r.n;
  if (r.n < 2) {
    r.se = INFINITY;
    return r;
  }
  double var = 0;
  for (double x : logs) var += (x - r.mean) * (x - r.mean) / (r.n - 1);
  r.se = std::sqrt(var / r.n);
  return r;
}

std::string figure(uint64_t bytes, const LogRatios& r, double t) {
  return fmt::format("at {} the plan ran {:.2f}x [{:.2f}, {:.2f}] the defaults over {} rounds", format_bytes(bytes),
                     std::exp(r.mean), std::exp(r.mean - t * r.se), std::exp(r.mean + t * r.se), r.n);
}

}  // namespace

Judgement judge_plan(const std::map<uint64_t, std::vector<double>>& plan,
                     const std::map<uint64_t, std::vector<double>>& defaults, const VerdictRule& rule, bool at_cap) {
  Judgement j;
  const double log_margin = std::log(rule.margin);
  bool all_not_worse = true, some_better = false;
  std::string better_why, open_why;
  for (const auto& [bytes, dv] : defaults) {
    const auto it = plan.find(bytes);
    const LogRatios r = log_ratios(it == plan.end() ? std::vector<double>{} : it->second, dv);
    if (r.failed || (r.n == 0 && !dv.empty())) {
      j.verdict = Verdict::fails;
      j.decided = true;
      j.why = fmt::format("at {} the plan's job measured nothing where the defaults ran", format_bytes(bytes));
      return j;
    }
    if (rule.same_as_defaults.count(bytes)) continue;
    const double t95 = r.n >= 2 ? student_t_975(r.n - 1) : INFINITY, t99 = r.n >= 2 ? student_t_995(r.n - 1) : INFINITY;
    if (r.n >= rule.min_rounds && r.mean + t95 * r.se < log_margin) {
      j.verdict = Verdict::worse;
      j.decided = true;
      j.why = figure(bytes, r, t95) + fmt::format(": below the {:.2f} margin", rule.margin);
      return j;
    }
    if (!(r.mean - t95 * r.se > log_margin)) {
      all_not_worse = false;
      if (open_why.empty()) open_why = figure(bytes, r, t95) + fmt::format(": not shown above {:.2f}", rule.margin);
    }
    if (r.mean - t99 * r.se > 0 && !some_better) {
      some_better = true;
      better_why = figure(bytes, r, t95);
    }
  }
  const int rounds = [&] {
    size_t n = 0;
    for (const auto& [b, v] : defaults) n = std::max(n, v.size());
    return static_cast<int>(n);
  }();
  std::string same;  // the sizes not judged, said after the deciding figure
  for (uint64_t b : rule.same_as_defaults) {
    if (defaults.count(b)) same += (same.empty() ? "" : ", ") + format_bytes(b);
  }
  if (!same.empty()) same = "; not judged where the plan loads exactly the defaults (" + same + ")";
  if (rounds >= rule.min_rounds && all_not_worse && some_better) {
    j.verdict = Verdict::ships;
    j.decided = true;
    j.why = better_why + same;
    return j;
  }
  j.decided = at_cap || rounds >= rule.max_rounds;
  j.verdict = all_not_worse ? Verdict::no_gain : Verdict::undecided;
  j.why = (all_not_worse ? "no size shown faster than the defaults" : open_why) + same;
  return j;
}

}  // namespace acceltune
