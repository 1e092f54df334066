// Whether a plan ships: two tests on the per-size ratios (plan / defaults) of interleaved rounds,
// decided together, each with a stated error rate. Not worse: at every size the ratio's 95%
// interval lies above `margin`. Better: at some size its 99% interval lies above 1.0 (the stricter
// level pays for looking after every round). Rounds go on until both tests are decided or the
// cap is reached; a plan not decided by then does not ship. docs/benchmarks.md gives the rates a
// seeded simulation measured (tools/bench/verdict_sim.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace acceltune {

struct VerdictRule {
  double margin = 0.97;  // "not worse": the ratio's lower bound above this at every size
  int min_rounds = 3;
  int max_rounds = 24;
  // Sizes where the plan loads exactly the defaults (the library's own job-wide part and per-size
  // choice, as an Open MPI rules file's algorithm 0): nothing differs there, so neither test
  // judges them (they would only add noise); a job that measures nothing there still fails.
  std::set<uint64_t> same_as_defaults;
};

enum class Verdict {
  ships,      // not worse at any size and better at some
  worse,      // some size's interval lies below the margin
  fails,      // the plan's job failed at some size the defaults measured
  no_gain,    // not worse anywhere, better nowhere, at the cap
  undecided,  // at the cap, some size neither proven not worse nor worse
};
const char* to_string(Verdict v);
// The verdict named by to_string; nullopt-like `undecided` for an unknown name.
Verdict verdict_from_string(const std::string& name);

struct Judgement {
  Verdict verdict = Verdict::undecided;
  bool decided = false;  // more rounds cannot change it (or the cap is reached)
  std::string why;       // one line: the size and figure that decided it
};

// The verdict after `rounds` interleaved rounds: per size the plan's and the defaults' values
// (NaN where a run measured nothing), in round order. `at_cap`: no more rounds will come.
Judgement judge_plan(const std::map<uint64_t, std::vector<double>>& plan,
                     const std::map<uint64_t, std::vector<double>>& defaults, const VerdictRule& rule, bool at_cap);

}  // namespace acceltune
