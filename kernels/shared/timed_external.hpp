// The stopping rule of measure_timed for work that is timed elsewhere: on a GPU by CUDA events,
// or by the slowest of several rank processes. `sample(runs)` performs `runs` repetitions and
// returns the seconds they took together (or an error, which makes the measurement failed).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include "tuner/expected.hpp"
#include "tuner/measurement.hpp"

namespace acceltune {

inline Measurement measure_external(uint64_t bytes, const std::function<Expected<double>(int64_t runs)>& sample,
                                    const MeasureSettings& s) {
  Measurement m;
  m.bytes = bytes;
  auto fail = [&](const Error& e) {
    m.state = State::failed;
    m.error = e.message;
    return m;
  };
  // The measured seconds, not the wall clock, drive the budget: the device time is what is tuned.
  double spent_seconds = 0;
  // The wall clock still bounds it, since each sample also costs launches and messages.
  const auto start = std::chrono::steady_clock::now();
  auto wall_seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int64_t warm_runs = 0;
  double warm_seconds = 0;
  do {
    auto t = sample(1);
    if (!t) return fail(t.error());
    warm_seconds += *t;
    ++warm_runs;
  } while (warm_seconds < s.warmup_seconds && warm_runs < 100000 && wall_seconds() < 3 * s.warmup_seconds + 1);
  spent_seconds += warm_seconds;
  const double per_run = warm_seconds / static_cast<double>(warm_runs);
  m.runs_per_sample =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(s.min_sample_seconds / std::max(per_run, 1e-9))));

  const double effort = std::clamp(s.effort, 1e-3, 1.0);
  const int max_samples = std::max(s.min_samples, static_cast<int>(std::ceil(s.max_samples * effort)));
  const double max_seconds = s.max_seconds * effort;
  while (static_cast<int>(m.samples_seconds.size()) < max_samples) {
    auto t = sample(m.runs_per_sample);
    if (!t) return fail(t.error());
    spent_seconds += *t;
    m.samples_seconds.push_back(*t / static_cast<double>(m.runs_per_sample));
    const int n = static_cast<int>(m.samples_seconds.size());
    if (n >= s.min_samples && median_is_tight(m.samples_seconds, s.target_rel_halfwidth)) break;
    if ((spent_seconds >= max_seconds || wall_seconds() >= 3 * max_seconds) && n >= 2) break;
  }
  finish_bandwidth(m);
  return m;
}

}  // namespace acceltune
