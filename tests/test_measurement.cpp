#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tuner/measurement.hpp"
#include "tuner/trial.hpp"

namespace acceltune {
namespace {

TEST(Stats, Quantiles) {
  std::vector<double> xs = {5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(quantile(xs, 0.5), 3);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile(xs, 1.0), 5);
  EXPECT_DOUBLE_EQ(quantile(xs, 0.1), 1.4);
}

TEST(Stats, MedianIntervalRanksWidenWithFewSamples) {
  auto [lo5, hi5] = median_ci_ranks(5);
  EXPECT_EQ(lo5, 0u);
  EXPECT_EQ(hi5, 4u);
  auto [lo100, hi100] = median_ci_ranks(100);
  EXPECT_EQ(lo100, 39u);  // ranks 40 and 61, the textbook 95% interval
  EXPECT_EQ(hi100, 60u);
}

TEST(Measure, StopsOnceTheIntervalIsTight) {
  MeasureSettings s;
  s.min_samples = 5;
  s.max_samples = 1000;
  s.max_seconds = 5;
  s.target_rel_halfwidth = 0.5;  // any steady run meets this quickly
  volatile uint64_t sink = 0;
  Measurement m = measure_timed(1000, [&] {
    for (int i = 0; i < 2000; ++i) sink = sink + static_cast<uint64_t>(i);
  }, s);
  EXPECT_EQ(m.state, State::ok);
  EXPECT_GE(m.samples_seconds.size(), 5u);
  EXPECT_LT(m.samples_seconds.size(), 1000u);
  EXPECT_GT(m.value, 0);
  EXPECT_LE(m.value_p10, m.value);
  EXPECT_GE(m.value_p90, m.value);
  EXPECT_LE(m.rel_halfwidth, 0.5);
}

TEST(Measure, HonoursTheTimeCap) {
  MeasureSettings s;
  s.min_samples = 5;
  s.max_samples = 100000;
  s.max_seconds = 0.05;
  s.target_rel_halfwidth = 1e-9;  // unreachable
  s.warmup_seconds = 0;
  auto start = std::chrono::steady_clock::now();
  Measurement m = measure_timed(1, [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); }, s);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 1.0);
  EXPECT_LT(m.samples_seconds.size(), 100000u);
  EXPECT_GE(m.samples_seconds.size(), 2u);
  // Each sample is a sleep of at least 200 us.
  EXPECT_GE(m.median_seconds, 200e-6);
}

TEST(Measure, BatchesShortRunsAndReportsGigabytesPerSecond) {
  MeasureSettings s;
  s.min_sample_seconds = 1e-3;
  s.max_seconds = 0.2;
  int calls = 0;
  Measurement m = measure_timed(1'000'000, [&] { ++calls; }, s);
  EXPECT_GT(m.runs_per_sample, 1);
  EXPECT_NEAR(m.value, 1e6 / m.median_seconds / 1e9, 1e-9 * m.value);
}

Measurement measured(uint64_t bytes, double value) {
  Measurement m;
  m.bytes = bytes;
  m.value = value;
  return m;
}

Trial summarised(std::vector<Measurement> ms) {
  Trial t;
  t.measurements = std::move(ms);
  summarise(t);
  return t;
}

TEST(Trial, ObjectiveIsTheGeometricMeanOverSizes) {
  const Trial t = summarised({measured(1, 2), measured(2, 8)});
  ASSERT_TRUE(t.value.has_value());
  EXPECT_DOUBLE_EQ(*t.value, 4.0);
  EXPECT_EQ(t.state, State::ok);
}

TEST(Trial, AFailedSizeFailsTheTrial) {
  Measurement b = measured(1048576, 0);
  b.state = State::failed;
  b.error = "boom";
  const Trial t = summarised({measured(65536, 2), b});
  EXPECT_FALSE(t.value.has_value());
  EXPECT_EQ(t.state, State::failed);
  EXPECT_EQ(t.error, "1M: boom");
}

TEST(Trial, NonPositiveBandwidthIsInvalid) {
  const Trial t = summarised({measured(1, 2), measured(2, 0)});
  EXPECT_EQ(t.state, State::invalid);
}

}  // namespace
}  // namespace acceltune
