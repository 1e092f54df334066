// The verdict's error rates by seeded simulation (tuner/verdict.hpp): plans of known effect
// measured in interleaved rounds with log-normal noise, judged after every round as `verify`
// judges them. Prints, per scenario and noise level, how often the plan ships and the mean
// rounds used, as Markdown tables (docs/benchmarks.md): once for a job-wide setting (one delivered
// measurement; a plan that does not ship falls back whole) and once for a per-size plan, which
// `search` measures up to three times, sizes not shown above the margin falling back to the
// library's own choice between measurements (tuner/verify.hpp, apply_delivered_fallback).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tuner/certify.hpp"
#include "tuner/rng.hpp"
#include "tuner/verdict.hpp"

namespace {

using acceltune::Judgement;
using acceltune::Rng;
using acceltune::Verdict;
using acceltune::VerdictRule;

struct Scenario {
  std::string name, target;
  std::vector<double> ratios;  // the plan's true ratio per size
  bool ships_expected;
  double bound;  // the ship rate must be >= bound when expected, <= bound when not
};

struct Outcome {
  double ships = 0, ships_slower = 0, rounds = 0;
};

using Values = std::map<uint64_t, std::vector<double>>;

uint64_t size_bytes(size_t s) { return uint64_t{4096} << (4 * s); }

// Whether a size's ratio is shown above the margin (the 95% interval's lower end), as
// apply_delivered_fallback asks before it keeps a per-size choice.
bool shown_above(const std::vector<double>& plan, const std::vector<double>& defaults, double margin) {
  std::vector<double> logs;
  for (size_t i = 0; i < std::min(plan.size(), defaults.size()); ++i) logs.push_back(std::log(plan[i] / defaults[i]));
  const double n = static_cast<double>(logs.size());
  if (logs.size() < 2) return false;
  double mean = 0, var = 0;
  for (double x : logs) mean += x / n;
  for (double x : logs) var += (x - mean) * (x - mean) / (n - 1);
  return mean - acceltune::student_t_975(static_cast<int>(n) - 1) * std::sqrt(var / n) > std::log(margin);
}

// One delivered measurement of the plan whose true ratio per size is `ratios` (1.0 where it loads
// the defaults, which `rule.same_as_defaults` names): rounds until the verdict is decided.
Judgement measure(const std::vector<double>& ratios, double arm_sigma, const VerdictRule& rule, Rng& rng, Values& plan,
                  Values& defaults, int& rounds) {
  Judgement j;
  int r = 0;
  while (r < rule.max_rounds) {
    ++r;
    for (size_t s = 0; s < ratios.size(); ++s) {
      const double base = 1000.0 * static_cast<double>(1 + s);
      defaults[size_bytes(s)].push_back(base * std::exp(arm_sigma * rng.normal()));
      plan[size_bytes(s)].push_back(base * ratios[s] * std::exp(arm_sigma * rng.normal()));
    }
    if (r < rule.min_rounds) continue;
    j = acceltune::judge_plan(plan, defaults, rule, r >= rule.max_rounds);
    if (j.decided) break;
  }
  rounds += r;
  return j;
}

// `measurements` 1: a job-wide setting, judged once. More: a per-size plan; after a verdict other
// than "ships", each size not shown above the margin loads the library's own choice (its ratio
// becomes 1.0 and it is no longer judged), and the plan is measured again; a plan with nothing
// left to drop, or no size left, ships nothing.
Outcome simulate(const Scenario& sc, double sigma, const VerdictRule& base_rule, int measurements, int runs,
                 uint64_t seed) {
  Rng rng(seed);
  Outcome o;
  const double arm_sigma = sigma / std::sqrt(2.0);  // each arm's noise: the ratio's log has sd sigma
  for (int run = 0; run < runs; ++run) {
    VerdictRule rule = base_rule;
    std::vector<double> ratios = sc.ratios;
    int rounds = 0;
    bool shipped = false;
    for (int m = 0; m < measurements && !shipped; ++m) {
      Values plan, defaults;
      const Judgement j = measure(ratios, arm_sigma, rule, rng, plan, defaults, rounds);
      if (j.verdict == Verdict::ships) {
        shipped = true;
        break;
      }
      if (j.verdict == Verdict::worse && measurements == 1) break;
      bool dropped = false;
      for (size_t s = 0; s < ratios.size(); ++s) {
        const uint64_t b = size_bytes(s);
        if (rule.same_as_defaults.count(b) || shown_above(plan[b], defaults[b], rule.margin)) continue;
        rule.same_as_defaults.insert(b);
        ratios[s] = 1.0;
        dropped = true;
      }
      if (!dropped || rule.same_as_defaults.size() == ratios.size()) break;
    }
    bool slower = false;
    for (size_t s = 0; s < ratios.size(); ++s) slower = slower || ratios[s] < 1.0;
    o.ships += shipped ? 1 : 0;
    o.ships_slower += shipped && slower ? 1 : 0;
    o.rounds += rounds;
  }
  o.ships /= runs;
  o.ships_slower /= runs;
  o.rounds /= runs;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The verdict's ship rates by seeded simulation, per scenario and noise level"};
  int runs = 2000, sizes = 4, measurements = 3;
  uint64_t seed = 1;
  std::vector<double> noise{0.02, 0.05, 0.10};
  VerdictRule rule;
  app.add_option("--runs", runs, "simulated verifications per cell (default 2000)")->check(CLI::Range(10, 1000000));
  app.add_option("--sizes", sizes, "message sizes per plan (default 4)")->check(CLI::Range(2, 16));
  app.add_option("--noise", noise, "standard deviations of one round's log ratio (default 0.02 0.05 0.10)");
  app.add_option("--min-rounds", rule.min_rounds, "rounds before the first decision (default 3)");
  app.add_option("--max-rounds", rule.max_rounds, "the cap (default 24)");
  app.add_option("--seed", seed, "random seed (default 1)");
  app.add_option("--measurements", measurements,
                 "delivered measurements of a per-size plan, falling back between them (default 3, as search)")
      ->check(CLI::Range(1, 10));
  CLI11_PARSE(app, argc, argv);

  const auto with = [&](double first, double rest) {
    std::vector<double> v(static_cast<size_t>(sizes), rest);
    v[0] = first;
    return v;
  };
  const std::vector<Scenario> scenarios = {
      {"1.2x at one size, no effect elsewhere", ">= 90%", with(1.2, 1.0), true, 0.90},
      {"1.3x at every size", ">= 90%", with(1.3, 1.3), true, 0.90},
      {"0.9x at one size, 1.2x elsewhere", "<= 5%", with(0.9, 1.2), false, 0.05},
      {"0.95x at one size, 1.2x elsewhere", "(informative)", with(0.95, 1.2), false, 1.0},
      {"no effect anywhere", "<= 10%", with(1.0, 1.0), false, 0.10},
  };
  std::printf("rule: not worse than %.2f at every size (95%% interval), better at some (99%% interval above 1.0); "
              "rounds %d to %d; %d sizes; %d runs per cell, seed %llu\n",
              rule.margin, rule.min_rounds, rule.max_rounds, sizes, runs, static_cast<unsigned long long>(seed));
  int misses = 0;
  const auto table = [&](const char* title, int m) {
    std::printf("\n%s\n\n| plan | target |", title);
    for (double s : noise) std::printf(" noise %.2f: ships (with a slower size), rounds |", s);
    std::printf("\n| --- | --- |");
    for (size_t i = 0; i < noise.size(); ++i) std::printf(" --- |");
    std::printf("\n");
    for (const auto& sc : scenarios) {
      bool has_slower = false;
      for (double r : sc.ratios) has_slower = has_slower || r < 1.0;
      std::printf("| %s | %s |", sc.name.c_str(), sc.target.c_str());
      for (size_t i = 0; i < noise.size(); ++i) {
        const Outcome o = simulate(sc, noise[i], rule, m, runs, seed + 1000 * i);
        // What must not ship is a slower size; a per-size plan that dropped it and ships the rest is right.
        const double judged = sc.ships_expected || !has_slower ? o.ships : o.ships_slower;
        const bool miss = sc.bound < 1.0 && (sc.ships_expected ? judged < sc.bound : judged > sc.bound);
        misses += miss ? 1 : 0;
        std::printf(" %.1f%% (%.1f%%)%s, %.1f |", 100 * o.ships, 100 * o.ships_slower, miss ? " MISSES" : "", o.rounds);
      }
      std::printf("\n");
    }
  };
  table("A job-wide setting (one delivered measurement; a plan that does not ship falls back whole):", 1);
  table(fmt::format("A per-size plan ({} delivered measurements at most; sizes not shown above the margin fall back to "
                    "the library's own choice between them):",
                    measurements)
            .c_str(),
        measurements);
  std::printf("\n%d cells miss their target\n", misses);
  return 0;
}
