// Certified gains. Machines drift (the same benchmark moves 2-4x within tens of minutes), so a
// config measured once, minutes after the default, proves little. After the search the top
// configs per size are re-measured interleaved with the default in the same run, and the gain
// is a ratio with a 95% confidence interval; an interval that includes 1.0 is "no significant
// gain", and the export keeps the library default for that size. With several candidates, their
// rounds only choose the winner; the winner's ratio and interval come from as many fresh rounds
// of it against the default alone, since the best of several on the same rounds is flattered by
// its own luck and its own interval would cover the truth less often than it says.
#pragma once

#include <chrono>
#include <optional>

#include <functional>

#include "tuner/best.hpp"
#include "tuner/recommend.hpp"
#include "tuner/runner.hpp"
#include "tuner/duration.hpp"

namespace acceltune {

struct CertifyOptions {
  int top = 3;     // candidates per size; 0 disables certification
  int rounds = 5;  // interleaved rounds of default and candidates (and of the winner's confirmation)
  int jobs = 2;    // job-wide assignments tried (best joint score first) before the default's own
  // When set, no round starts after it, nor one that would end after it once two are done (a
  // size left with one round is not significant), and no further job-wide assignment but the
  // default's own is tried: the command's time limit bounds certification too.
  Deadline deadline;
};

// A 95% interval for the mean of log ratios, by Student's t. Returns {ratio, low, high}.
struct RatioInterval {
  double ratio = 0, low = 0, high = 0;
  int n = 0;
};
RatioInterval ratio_interval(const std::vector<double>& candidate, const std::vector<double>& reference);

// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom.
double student_t_975(int df);
// Its 99.5% quantile.
double student_t_995(int df);

// Chooses the export plan and certifies it (tuner/plan.hpp). The job-wide assignments are tried
// best joint score first; under each, every size's candidates are the top of `ranking` (the
// noise-aware order, else the best observed) with that job-wide part, plus the job-wide part with
// the library's per-size choices, which a size falls back to when no per-size choice pays. A
// job-wide part that makes any size significantly slower, or pays at no size, falls back as a
// whole to the next, and finally to the default's own. Fills the certification fields of every
// size, the plan and the ranges. `log` receives one JSON event per job-wide try and per size.
void certify(BestTable& best, const Space& space, const std::vector<Trial>& trials, TrialRunner& runner,
             const CertifyOptions& options, const std::function<void(const Json&)>& log,
             const std::function<void(int, int)>& progress, const Ranking* ranking = nullptr);

}  // namespace acceltune
