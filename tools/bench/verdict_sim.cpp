// The verdict's error rates by seeded simulation (tuner/verdict.hpp): plans of known effect
// measured in interleaved rounds with log-normal noise, judged after every round as `verify`
// judges them. Prints, per scenario and noise level, how often the plan ships and the mean
// rounds used, as a Markdown table (docs/benchmarks.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

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
  double ships = 0, rounds = 0;
};

Outcome simulate(const Scenario& sc, double sigma, const VerdictRule& rule, int runs, uint64_t seed) {
  Rng rng(seed);
  Outcome o;
  const double arm_sigma = sigma / std::sqrt(2.0);  // each arm's noise: the ratio's log has sd sigma
  for (int run = 0; run < runs; ++run) {
    std::map<uint64_t, std::vector<double>> plan, defaults;
    Judgement j;
    int r = 0;
    while (r < rule.max_rounds) {
      ++r;
      for (size_t s = 0; s < sc.ratios.size(); ++s) {
        const uint64_t bytes = uint64_t{4096} << (4 * s);
        const double base = 1000.0 * static_cast<double>(1 + s);
        defaults[bytes].push_back(base * std::exp(arm_sigma * rng.normal()));
        plan[bytes].push_back(base * sc.ratios[s] * std::exp(arm_sigma * rng.normal()));
      }
      if (r < rule.min_rounds) continue;
      j = acceltune::judge_plan(plan, defaults, rule, r >= rule.max_rounds);
      if (j.decided) break;
    }
    o.ships += j.verdict == Verdict::ships ? 1 : 0;
    o.rounds += r;
  }
  o.ships /= runs;
  o.rounds /= runs;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The verdict's ship rates by seeded simulation, per scenario and noise level"};
  int runs = 2000, sizes = 4;
  uint64_t seed = 1;
  std::vector<double> noise{0.02, 0.05, 0.10};
  VerdictRule rule;
  app.add_option("--runs", runs, "simulated verifications per cell (default 2000)")->check(CLI::Range(10, 1000000));
  app.add_option("--sizes", sizes, "message sizes per plan (default 4)")->check(CLI::Range(2, 16));
  app.add_option("--noise", noise, "standard deviations of one round's log ratio (default 0.02 0.05 0.10)");
  app.add_option("--min-rounds", rule.min_rounds, "rounds before the first decision (default 3)");
  app.add_option("--max-rounds", rule.max_rounds, "the cap (default 24)");
  app.add_option("--seed", seed, "random seed (default 1)");
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
              "rounds %d to %d; %d sizes; %d runs per cell, seed %llu\n\n",
              rule.margin, rule.min_rounds, rule.max_rounds, sizes, runs, static_cast<unsigned long long>(seed));
  std::printf("| plan | target |");
  for (double s : noise) std::printf(" noise %.2f: ships, rounds |", s);
  std::printf("\n| --- | --- |");
  for (size_t i = 0; i < noise.size(); ++i) std::printf(" --- |");
  std::printf("\n");
  int misses = 0;
  for (const auto& sc : scenarios) {
    std::printf("| %s | %s |", sc.name.c_str(), sc.target.c_str());
    for (size_t i = 0; i < noise.size(); ++i) {
      const Outcome o = simulate(sc, noise[i], rule, runs, seed + 1000 * i);
      const bool miss = sc.bound < 1.0 && (sc.ships_expected ? o.ships < sc.bound : o.ships > sc.bound);
      misses += miss ? 1 : 0;
      std::printf(" %.1f%%%s, %.1f |", 100 * o.ships, miss ? " (MISSES)" : "", o.rounds);
    }
    std::printf("\n");
  }
  std::printf("\n%d cells miss their target\n", misses);
  return 0;
}
