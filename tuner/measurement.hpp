// Measurements and the measurement driver: warm up, then repeat until the median is known
// tightly enough or the time cap is hit; report median and spread, never a mean.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tuner/value.hpp"

namespace acceltune {

enum class State { ok, failed, timeout, invalid };
std::string_view to_string(State s);
Expected<State> state_from_string(std::string_view s);

struct MeasureSettings {
  double warmup_seconds = 0.01;
  int min_samples = 5;
  int max_samples = 100;
  // Stop once the 95% interval of the median is within this fraction of it, either side.
  double target_rel_halfwidth = 0.02;
  // Cap on the repetitions of one config at one size.
  double max_seconds = 0.5;
  // Short runs are batched so each sample lasts at least this long (timer resolution).
  double min_sample_seconds = 50e-6;
  // Measurement effort in (0, 1]: multi-fidelity strategies measure many configs briefly
  // (a fraction of the time cap and samples) and the survivors fully.
  double effort = 1.0;

  Json to_json() const;
  static MeasureSettings from_json(const Json& j);
};

struct Measurement {
  uint64_t bytes = 0;
  State state = State::ok;
  std::string error;
  // Per-run seconds of each sample (a sample may time a batch of runs).
  std::vector<double> samples_seconds;
  int64_t runs_per_sample = 1;
  double median_seconds = 0, p10_seconds = 0, p90_seconds = 0;
  double ci_low_seconds = 0, ci_high_seconds = 0;  // 95% interval of the median
  // The objective at this size, higher is better (GB/s for transfers), and its spread.
  double value = 0, value_p10 = 0, value_p90 = 0;
  // Relative half-width of the median's interval that was reached.
  double rel_halfwidth = 0;
  // What the kernel observed beside the time, for people and tests: the path MSS a TCP stream
  // got, the transport UCX chose, the algorithm a collective ran ("mss_bytes": 8948, ...).
  Json details = Json::object();

  Json to_json() const;
  static Expected<Measurement> from_json(const Json& j);
};

// Order statistics of a sample; q in [0,1], linear interpolation.
double quantile(std::vector<double> xs, double q);
// The median of the finite values (NaN and infinities left out); NaN when there is none.
double median_of(std::vector<double> xs);
// Distribution-free 95% interval of the median from order statistics (binomial, normal
// approximation), as indices into the sorted sample.
std::pair<size_t, size_t> median_ci_ranks(size_t n);

// The stopping rule: the 95% interval of the median of these samples is within `target` (a
// fraction of the median) either side. Shared by every driver of repetitions.
bool median_is_tight(const std::vector<double>& samples, double target_rel_halfwidth);

// Times `run` (one repetition of the timed region) and fills a Measurement whose value is
// GB/s for `bytes` moved per run. `run` must not allocate or validate; do that outside.
Measurement measure_timed(uint64_t bytes, const std::function<void()>& run, const MeasureSettings& s);

// Fills the value fields of a measurement from its time statistics (GB/s, 1e9 bytes).
void finish_bandwidth(Measurement& m);

}  // namespace acceltune
