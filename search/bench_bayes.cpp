// Engine benchmarks (Google Benchmark): the cost of a bayes ask() with 600 observations over
// 20,000 candidate configs, between hyper-parameter fits and amortised over the refit schedule.
#include <benchmark/benchmark.h>

#include <cmath>

#include "search/gp.hpp"
#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

// 20 x 10 x 10 x 10 = 20,000 configs: three ordered axes and one categorical.
Space bench_space() {
  Json doc = Json::parse(R"({"name": "bench", "kernel": "none", "params": [
    {"name": "a", "kind": "int", "min": 1, "max": 20, "default": 1},
    {"name": "b", "kind": "int", "min": 1, "max": 10, "default": 1},
    {"name": "c", "kind": "int", "min": 1, "max": 10, "default": 1},
    {"name": "m", "kind": "categorical", "values": ["m0","m1","m2","m3","m4","m5","m6","m7","m8","m9"], "default": "m0"}]})");
  return std::move(Space::from_json(doc, "bench", ".").value());
}

double objective(const Space& s, const Config& c) {
  const double a = to_double(s.value(c, 0)), b = to_double(s.value(c, 1)), d = to_double(s.value(c, 2));
  return 10 + 5 * std::sin(a / 2) + 3 * std::cos(b / 3) - 0.1 * (d - 6) * (d - 6) + c.index[3] % 3;
}

// A finished trial of a random config, valued by the objective above.
Trial random_trial(const Space& s, Rng& rng, int64_t number) {
  Trial t;
  t.number = number;
  t.config = s.from_ordinal(rng.below(s.cartesian_size()));
  t.key = s.key(t.config);
  Measurement m;
  m.value = objective(s, t.config);
  t.measurements = {m};
  summarise(t);
  return t;
}

std::unique_ptr<Strategy> told_bayes(const Space& s, int n) {
  auto st = std::move(make_strategy("bayes", s, 1).value());
  Rng rng(7);
  for (int i = 0; i < n; ++i) st->tell(random_trial(s, rng, i));
  return st;
}

// ask() as a study sees it between fits: the posterior over 20,000 candidates and the
// acquisition. The first ask (outside the loop) absorbs the observations and fits.
void BM_BayesAsk600(benchmark::State& state) {
  Space s = bench_space();
  auto st = told_bayes(s, 600);
  benchmark::DoNotOptimize(st->ask());
  for (auto _ : state) benchmark::DoNotOptimize(st->ask());
}
BENCHMARK(BM_BayesAsk600)->Unit(benchmark::kMillisecond);

// One tell and one ask from 600 observations on: the O(n m) model update plus the ask, over
// 120 of them, so the one refit of the schedule (when the data has grown by a fifth, on a
// sample of 300 observations) is amortised as a study sees it.
void BM_BayesTellAsk600(benchmark::State& state) {
  Space s = bench_space();
  auto st = told_bayes(s, 600);
  benchmark::DoNotOptimize(st->ask());
  Rng rng(11);
  int n = 600;
  for (auto _ : state) {
    st->tell(random_trial(s, rng, n++));
    benchmark::DoNotOptimize(st->ask());
  }
}
BENCHMARK(BM_BayesTellAsk600)->Unit(benchmark::kMillisecond)->Iterations(120);

// A hyper-parameter fit with 300 observations (two starts): the refit's main cost.
void BM_GpFit300(benchmark::State& state) {
  Space s = bench_space();
  Rng rng(5);
  CandidateGp gp(3, 1, /*quadratic=*/true);  // as the search uses it
  Eigen::VectorXd y(300);
  for (int i = 0; i < 300; ++i) {
    Config c = s.from_ordinal(rng.below(s.cartesian_size()));
    auto e = s.encode(c);
    gp.add_observation(GpPoint{{e[0], e[1], e[2]}, {static_cast<int>(c.index[3])}});
    y[i] = objective(s, c);
  }
  y = (y.array() - y.mean()) / std::sqrt((y.array() - y.mean()).square().mean());
  for (auto _ : state) benchmark::DoNotOptimize(gp.fit(y, 1, 2));
}
BENCHMARK(BM_GpFit300)->Unit(benchmark::kMillisecond)->Iterations(3);

// A model pass as a quick-trial study on tcp-stream sees it: the shipped space (every valid config a
// candidate) at three message sizes, 120 trials told, then passes of eight trials each told and
// one ask: the model's cost per eight trials, the refits of the schedule amortised.
void BM_BayesTcpStreamPass(benchmark::State& state) {
  auto loaded = Space::load_file(ACCELTUNE_SPACES_DIR "/tcp-stream.json");
  Space s = std::move(loaded.value());
  auto st = std::move(make_strategy("bayes", s, 1).value());
  Rng rng(7);
  int64_t n = 0;
  auto tell = [&] {
    Trial t;
    t.number = n++;
    do t.config = s.from_ordinal(rng.below(s.cartesian_size()));
    while (!s.is_valid(t.config));
    t.key = s.key(t.config);
    for (uint64_t b : {65536ull, 1048576ull, 16777216ull}) {
      Measurement m;
      m.bytes = b;
      m.value = 1 + static_cast<double>(rng.below(1000)) / 100.0 + static_cast<double>(b >> 20);
      t.measurements.push_back(m);
    }
    t.cost_seconds = 0.2;
    summarise(t);
    st->tell(t);
  };
  for (int i = 0; i < 120; ++i) tell();
  benchmark::DoNotOptimize(st->ask());
  for (auto _ : state) {
    for (int i = 0; i < 8; ++i) tell();
    benchmark::DoNotOptimize(st->ask());
  }
}
BENCHMARK(BM_BayesTcpStreamPass)->Unit(benchmark::kMillisecond)->Iterations(8);

}  // namespace
}  // namespace acceltune

BENCHMARK_MAIN();
