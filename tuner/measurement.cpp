// The definitions behind tuner/measurement.hpp: measurements and the measurement driver.
#include "tuner/measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "tuner/cancel.hpp"
#include "tuner/trace.hpp"

namespace acceltune {

std::string_view to_string(State s) {
  switch (s) {
    case State::ok: return "ok";
    case State::failed: return "failed";
    case State::timeout: return "timeout";
    case State::invalid: return "invalid";
  }
  return "?";
}

Expected<State> state_from_string(std::string_view s) {
  for (State st : {State::ok, State::failed, State::timeout, State::invalid}) {
    if (to_string(st) == s) return st;
  }
  return input_error("unknown trial state '{}'", s);
}

Json MeasureSettings::to_json() const {
  return Json{{"warmup_seconds", warmup_seconds},
              {"min_samples", min_samples},
              {"max_samples", max_samples},
              {"target_rel_halfwidth", target_rel_halfwidth},
              {"max_seconds", max_seconds},
              {"min_sample_seconds", min_sample_seconds},
              {"effort", effort}};
}

MeasureSettings MeasureSettings::from_json(const Json& j) {
  MeasureSettings s;
  s.warmup_seconds = j.value("warmup_seconds", s.warmup_seconds);
  s.min_samples = j.value("min_samples", s.min_samples);
  s.max_samples = j.value("max_samples", s.max_samples);
  s.target_rel_halfwidth = j.value("target_rel_halfwidth", s.target_rel_halfwidth);
  s.max_seconds = j.value("max_seconds", s.max_seconds);
  s.min_sample_seconds = j.value("min_sample_seconds", s.min_sample_seconds);
  s.effort = j.value("effort", s.effort);
  return s;
}

namespace {
// JSON has no NaN or infinity; store them as null.
Json num(double x) { return std::isfinite(x) ? Json(x) : Json(nullptr); }
double get_num(const Json& j, const char* k) {
  return j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
}
}  // namespace

Json Measurement::to_json() const {
  Json j = Json::object();
  j["bytes"] = bytes;
  j["state"] = std::string(to_string(state));
  if (!error.empty()) j["error"] = error;
  j["value"] = state == State::ok ? num(value) : Json(nullptr);
  j["value_p10"] = num(value_p10);
  j["value_p90"] = num(value_p90);
  j["median_seconds"] = num(median_seconds);
  j["p10_seconds"] = num(p10_seconds);
  j["p90_seconds"] = num(p90_seconds);
  j["ci_low_seconds"] = num(ci_low_seconds);
  j["ci_high_seconds"] = num(ci_high_seconds);
  j["rel_halfwidth"] = num(rel_halfwidth);
  j["runs_per_sample"] = runs_per_sample;
  Json samples = Json::array();
  for (double x : samples_seconds) samples.push_back(num(x));
  j["samples_seconds"] = samples;
  if (!details.empty()) j["details"] = details;
  return j;
}

Expected<Measurement> Measurement::from_json(const Json& j) {
  if (!j.is_object() || !j.contains("bytes") || !j.contains("state")) {
    return input_error("measurement lacks 'bytes' or 'state'");
  }
  Measurement m;
  m.bytes = j["bytes"].get<uint64_t>();
  ACCELTUNE_TRY_ASSIGN(m.state, state_from_string(j["state"].get<std::string>()));
  m.error = j.value("error", "");
  m.value = get_num(j, "value");
  m.value_p10 = get_num(j, "value_p10");
  m.value_p90 = get_num(j, "value_p90");
  m.median_seconds = get_num(j, "median_seconds");
  m.p10_seconds = get_num(j, "p10_seconds");
  m.p90_seconds = get_num(j, "p90_seconds");
  m.ci_low_seconds = get_num(j, "ci_low_seconds");
  m.ci_high_seconds = get_num(j, "ci_high_seconds");
  m.rel_halfwidth = get_num(j, "rel_halfwidth");
  m.runs_per_sample = j.value("runs_per_sample", int64_t{1});
  if (j.contains("samples_seconds") && j["samples_seconds"].is_array()) {
    for (const auto& x : j["samples_seconds"]) m.samples_seconds.push_back(x.is_number() ? x.get<double>() : std::nan(""));
  }
  if (j.contains("details") && j["details"].is_object()) m.details = j["details"];
  return m;
}

double quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return std::nan("");
  std::sort(xs.begin(), xs.end());
  const double pos = q * static_cast<double>(xs.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, xs.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return xs[lo] + (xs[hi] - xs[lo]) * frac;
}

double median_of(std::vector<double> xs) {
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](double x) { return !std::isfinite(x); }), xs.end());
  return quantile(std::move(xs), 0.5);
}

std::pair<size_t, size_t> median_ci_ranks(size_t n) {
  if (n == 0) return {0, 0};
  // Ranks n/2 -+ 1.96 sqrt(n)/2 (1-based) bracket the median with ~95% coverage.
  const double half = 1.96 * std::sqrt(static_cast<double>(n)) / 2.0;
  const double mid = static_cast<double>(n) / 2.0;
  long lo = static_cast<long>(std::floor(mid - half));  // 1-based rank
  long hi = static_cast<long>(std::ceil(mid + half + 1.0));
  lo = std::max(1L, lo);
  hi = std::min(static_cast<long>(n), hi);
  return {static_cast<size_t>(lo - 1), static_cast<size_t>(hi - 1)};
}

void finish_bandwidth(Measurement& m) {
  std::vector<double> sorted = m.samples_seconds;
  std::sort(sorted.begin(), sorted.end());
  m.median_seconds = quantile(sorted, 0.5);
  m.p10_seconds = quantile(sorted, 0.1);
  m.p90_seconds = quantile(sorted, 0.9);
  auto [lo, hi] = median_ci_ranks(sorted.size());
  m.ci_low_seconds = sorted.empty() ? std::nan("") : sorted[lo];
  m.ci_high_seconds = sorted.empty() ? std::nan("") : sorted[hi];
  m.rel_halfwidth = (m.ci_high_seconds - m.ci_low_seconds) / (2.0 * m.median_seconds);
  const double b = static_cast<double>(m.bytes);
  m.value = b / m.median_seconds / 1e9;
  m.value_p10 = b / m.p90_seconds / 1e9;  // slow runs are the low bandwidth tail
  m.value_p90 = b / m.p10_seconds / 1e9;
  if (!(m.median_seconds > 0) || !std::isfinite(m.value)) {
    m.state = State::invalid;
    m.error = "non-positive or NaN time measured";
  }
}

bool median_is_tight(const std::vector<double>& samples, double target_rel_halfwidth) {
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  auto [lo, hi] = median_ci_ranks(sorted.size());
  const double med = quantile(sorted, 0.5);
  return (sorted[hi] - sorted[lo]) / (2.0 * med) <= target_rel_halfwidth;
}

Measurement measure_timed(uint64_t bytes, const std::function<void()>& run, const MeasureSettings& s) {
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::duration d) { return std::chrono::duration<double>(d).count(); };
  Measurement m;
  m.bytes = bytes;
  const auto start = clock::now();

  // Warm-up: at least one run, and long enough to settle caches, page tables and clocks.
  int64_t warm_runs = 0;
  auto t0 = clock::now();
  do {
    run();
    ++warm_runs;
  } while (seconds(clock::now() - t0) < s.warmup_seconds && warm_runs < 1000000);
  const double per_run = seconds(clock::now() - t0) / static_cast<double>(warm_runs);
  m.runs_per_sample = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(s.min_sample_seconds / std::max(per_run, 1e-9))));

  const double effort = std::clamp(s.effort, 1e-3, 1.0);
  const int max_samples = std::max(s.min_samples, static_cast<int>(std::ceil(s.max_samples * effort)));
  const double max_seconds = s.max_seconds * effort;
  std::optional<TraceRange> range;  // the timed region, for profilers
  if (tracing()) range.emplace(fmt::format("acceltune timed {}", format_bytes(bytes)));
  while (static_cast<int>(m.samples_seconds.size()) < max_samples) {
    auto a = clock::now();
    for (int64_t r = 0; r < m.runs_per_sample; ++r) run();
    auto b = clock::now();
    m.samples_seconds.push_back(seconds(b - a) / static_cast<double>(m.runs_per_sample));
    const int n = static_cast<int>(m.samples_seconds.size());
    if (n >= s.min_samples && median_is_tight(m.samples_seconds, s.target_rel_halfwidth)) break;
    if (seconds(b - start) >= max_seconds && n >= 2) break;
    if (cancel_requested() && n >= 1) break;  // the command is stopping; the study drops this trial
  }
  finish_bandwidth(m);
  return m;
}

}  // namespace acceltune
