#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "search/gp.hpp"
#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"
#include "tuner/strategy.hpp"
#include "tuner/study.hpp"

namespace acceltune {
namespace {

double matern52(double r) { return (1 + std::sqrt(5.0) * r + 5.0 / 3.0 * r * r) * std::exp(-std::sqrt(5.0) * r); }

TEST(Gp, PosteriorMatchesTheTwoPointFormula) {
  CandidateGp gp(1, 0);
  GpHyper h;
  h.length = {0.5};
  h.signal = 2.0;
  h.noise = 0.1;
  gp.set_candidates({GpPoint{{0.25}, {}}, GpPoint{{1.0}, {}}});
  gp.set_hyper(h);
  gp.add_observation(GpPoint{{0.0}, {}});
  gp.add_observation(GpPoint{{0.5}, {}});
  Eigen::VectorXd y(2);
  y << 1.0, -0.5;
  Eigen::VectorXd mean, var;
  gp.posterior(y, mean, var);
  // By hand: K = s m(|xi-xj|/l) + noise I, k* = s m(|x*-xi|/l); mean = k*^T K^-1 y.
  const double k01 = 2.0 * matern52(0.5 / 0.5);
  const double a = 2.0 + 0.1, det = a * a - k01 * k01;
  auto predict = [&](double x, double& m, double& v) {
    const double k0 = 2.0 * matern52(std::abs(x - 0.0) / 0.5), k1 = 2.0 * matern52(std::abs(x - 0.5) / 0.5);
    // K^-1 = [a -k01; -k01 a] / det
    const double w0 = (a * k0 - k01 * k1) / det, w1 = (-k01 * k0 + a * k1) / det;
    m = w0 * y[0] + w1 * y[1];
    v = 2.0 - (w0 * k0 + w1 * k1);
  };
  for (int j = 0; j < 2; ++j) {
    double m, v;
    predict(j == 0 ? 0.25 : 1.0, m, v);
    EXPECT_NEAR(mean[j], m, 1e-10);
    EXPECT_NEAR(var[j], v, 1e-10);
  }
}

// Observations added one at a time, in blocks (a model pass's batch) or all at once give the
// same model: the block update of the factor and of V is exact.
TEST(Gp, BlockUpdatesMatchOneFactorisation) {
  Rng rng(9);
  std::vector<GpPoint> cands, obs;
  for (int i = 0; i < 40; ++i) cands.push_back(GpPoint{{rng.uniform(), rng.uniform()}, {static_cast<int>(rng.below(3))}});
  for (int i = 0; i < 23; ++i) obs.push_back(GpPoint{{rng.uniform(), rng.uniform()}, {static_cast<int>(rng.below(3))}});
  obs.push_back(obs[4]);  // a repeated point: the noise keeps the block's factor positive
  Eigen::VectorXd y(static_cast<Eigen::Index>(obs.size()));
  for (Eigen::Index i = 0; i < y.size(); ++i) y[i] = std::sin(5 * obs[static_cast<size_t>(i)].ordered[0]) - obs[static_cast<size_t>(i)].ordered[1];
  GpHyper h;
  h.length = {0.3, 0.6};
  h.lambda = {0.8};
  h.signal = 1.2;
  h.noise = 0.02;
  auto model = [&](CandidateGp& gp) {
    gp.set_candidates(cands);
    gp.set_hyper(h);
  };
  CandidateGp whole(2, 1, true), single(2, 1, true), blocks(2, 1, true);
  model(whole);
  model(single);
  model(blocks);
  whole.set_observations(obs);
  for (const auto& p : obs) single.add_observation(p);
  blocks.add_observations({obs.begin(), obs.begin() + 5});
  blocks.add_observations({obs.begin() + 5, obs.begin() + 13});
  blocks.add_observations({obs.begin() + 13, obs.end()});
  ASSERT_EQ(blocks.observations(), obs.size());
  Eigen::VectorXd m0, v0, m1, v1, m2, v2;
  whole.posterior(y, m0, v0);
  single.posterior(y, m1, v1);
  blocks.posterior(y, m2, v2);
  for (Eigen::Index j = 0; j < m0.size(); ++j) {
    EXPECT_NEAR(m2[j], m0[j], 1e-8);
    EXPECT_NEAR(v2[j], v0[j], 1e-8);
    EXPECT_NEAR(m1[j], m0[j], 1e-8);
  }
}

TEST(Gp, CategoricalKernelIsExpOfWeightedMismatches) {
  CandidateGp gp(0, 2);
  GpHyper h;
  h.lambda = {0.5, 2.0};
  h.signal = 1.5;
  EXPECT_DOUBLE_EQ(gp.kernel(h, GpPoint{{}, {0, 1}}, GpPoint{{}, {0, 1}}), 1.5);
  EXPECT_NEAR(gp.kernel(h, GpPoint{{}, {0, 1}}, GpPoint{{}, {1, 1}}), 1.5 * std::exp(-0.5), 1e-12);
  EXPECT_NEAR(gp.kernel(h, GpPoint{{}, {0, 1}}, GpPoint{{}, {1, 0}}), 1.5 * std::exp(-2.5), 1e-12);
}

TEST(Gp, GradientMatchesFiniteDifferences) {
  // Without and with the quadratic part; with ordered dims the gradient has six entries.
  for (double quadratic : {0.0, 0.6}) {
    CandidateGp gp(2, 1, /*quadratic=*/true);
    Rng rng(3);
    Eigen::VectorXd y(12);
    for (int i = 0; i < 12; ++i) {
      GpPoint p{{rng.uniform(), rng.uniform()}, {static_cast<int>(rng.below(3))}};
      gp.add_observation(p);
      y[i] = std::sin(4 * p.ordered[0]) + p.ordered[1] + 0.3 * p.categorical[0];
    }
    GpHyper h;
    h.length = {0.4, 0.9};
    h.lambda = {0.7};
    h.signal = 1.3;
    h.noise = 0.05;
    h.quadratic = quadratic;
    std::vector<double> grad;
    gp.log_marginal_likelihood(h, y, &grad);
    ASSERT_EQ(grad.size(), 6u);
    auto with = [&](size_t i, double eps) {
      GpHyper g = h;
      auto bump = [&](double& x) { x *= std::exp(eps); };
      if (i < 2) bump(g.length[i]);
      else if (i == 2) bump(g.lambda[0]);
      else if (i == 3) bump(g.signal);
      else if (i == 4) bump(g.noise);
      else bump(g.quadratic);
      return gp.log_marginal_likelihood(g, y, nullptr);
    };
    for (size_t i = 0; i < grad.size(); ++i) {
      const double fd = (with(i, 1e-5) - with(i, -1e-5)) / 2e-5;
      EXPECT_NEAR(grad[i], fd, 1e-4 * std::max(1.0, std::abs(fd))) << "hyper-parameter " << i << ", quadratic " << quadratic;
    }
    if (quadratic > 0) {
      EXPECT_GT(std::abs(grad[5]), 1e-3);  // the part takes part in the likelihood
    }
  }
}

TEST(Gp, QuadraticPartAddsCentredFeatureProducts) {
  CandidateGp gp(2, 1, /*quadratic=*/true);
  GpHyper h;
  h.length = {0.5, 0.25};
  h.lambda = {0.4};
  h.signal = 1.2;
  h.quadratic = 0.7;
  const GpPoint a{{0.1, 0.6}, {0}}, b{{0.6, 0.35}, {1}};
  // u_a = (-0.4, 0.1), u_b = (0.1, -0.15): per dim 4 u_a u_b + 16 (u_a u_b)^2, mean over dims.
  const double p0 = -0.4 * 0.1, p1 = 0.1 * -0.15;
  const double quad = (4 * p0 + 16 * p0 * p0 + 4 * p1 + 16 * p1 * p1) / 2;
  const double r = std::hypot(0.5 / 0.5, 0.25 / 0.25);
  EXPECT_NEAR(gp.kernel(h, a, b), std::exp(-0.4) * (1.2 * matern52(r) + 0.7 * quad), 1e-12);
  // At the same point the part adds most at the corners of the ordered range, nothing at the centre.
  const GpPoint corner{{0.0, 1.0}, {0}}, centre{{0.5, 0.5}, {0}};
  EXPECT_NEAR(gp.kernel(h, corner, corner), 1.2 + 0.7 * 2.0, 1e-12);
  EXPECT_NEAR(gp.kernel(h, centre, centre), 1.2, 1e-12);
  // So the prior variance of the posterior is per candidate.
  gp.set_candidates({corner, centre});
  gp.set_hyper(h);
  Eigen::VectorXd mean, var;
  gp.posterior(Eigen::VectorXd(0), mean, var);
  EXPECT_NEAR(var[0], 2.6, 1e-12);
  EXPECT_NEAR(var[1], 1.2, 1e-12);
}

TEST(Gp, FitRaisesTheMarginalLikelihood) {
  CandidateGp gp(1, 0);
  Eigen::VectorXd y(20);
  for (int i = 0; i < 20; ++i) {
    const double x = i / 19.0;
    gp.add_observation(GpPoint{{x}, {}});
    y[i] = std::sin(6 * x);
  }
  const double before = gp.log_marginal_likelihood(gp.hyper(), y, nullptr);
  const double after = gp.fit(y, 1, 3);
  EXPECT_GT(after, before + 1.0);
  EXPECT_NEAR(after, gp.log_marginal_likelihood(gp.hyper(), y, nullptr), 1e-9);
}

TEST(Gp, LogExpectedImprovementIsAccurateAndSmooth) {
  for (double z : {-3.0, -1.0, 0.0, 1.5}) {
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
    EXPECT_NEAR(log_h(z), std::log(z * cdf + pdf), 1e-9);
  }
  EXPECT_NEAR(log_h(-12.0 - 1e-9), log_h(-12.0 + 1e-9), 1e-5);
  EXPECT_NEAR(log_h(-8.0), std::log(std::exp(-32.0) / std::sqrt(2 * M_PI) / 64.0 * (1 - 3 / 64.0 + 15 / 4096.0)), 1e-3);
  EXPECT_TRUE(std::isfinite(log_h(-40.0)));
  EXPECT_LT(log_h(-40.0), log_h(-20.0));
}

// A structured landscape of 4 x 3 x 8 x 8 configs: a best category pair, unimodal axes, some
// invalid combinations.
std::string structured_csv() {
  std::string csv = "algo,proto,channels,chunk,objective\n";
  const char* algos[] = {"ring", "tree", "nvls", "collnet"};
  const char* protos[] = {"LL", "LL128", "Simple"};
  std::string first;
  for (int a = 0; a < 4; ++a) {
    for (int p = 0; p < 3; ++p) {
      for (int c = 0; c < 8; ++c) {
        for (int k = 0; k < 8; ++k) {
          if (a == 3 && p == 1) continue;
          const double base = 40 + 15 * a * (p == 2) + 10 * p;
          const double v = base / (1 + std::pow((c - 2 - a) / 2.0, 2)) / (1 + std::pow((k - 5 + p) / 2.5, 2));
          std::string row = fmt::format("{},{},{},{},{}\n", algos[a], protos[p], 1 << c, 4096 << k, v);
          if (a == 0 && p == 2 && c == 3 && k == 3) first = row;
          else csv += row;
        }
      }
    }
  }
  return "algo,proto,channels,chunk,objective\n" + first + csv.substr(csv.find('\n') + 1);
}

struct Land {
  test::TempDir dir;
  Space space;
  std::unique_ptr<Kernel> kernel;
  double optimum = 0;
  Land()
      : space([&] {
          test::write_file(dir / "s.csv", structured_csv());
          return std::move(SpaceLoaderRegistry::instance().find(".csv")->load(dir / "s.csv").value());
        }()),
        kernel(std::move(make_kernel(space).value())) {
    space.for_each_valid([&](const Config& c) {
      optimum = std::max(optimum, kernel->measure(space, c, 0, {}, {}).value);
      return true;
    });
  }

  // Runs `n` evaluations; returns the keys proposed and the best value found. Each trial took
  // `seconds` (0: not timed).
  std::pair<std::vector<std::string>, double> run(const std::string& strategy, uint64_t seed, int n,
                                                  double seconds = 0, std::vector<Config>* configs = nullptr) {
    auto st = std::move(make_strategy(strategy, space, seed).value());
    std::vector<std::string> keys;
    double best = 0;
    std::optional<Config> c = space.default_config();
    for (int i = 0; i < n && c; ++i) {
      EXPECT_TRUE(space.is_valid(*c)) << strategy << " proposed an invalid config " << space.key(*c);
      Trial t;
      t.number = i;
      t.config = *c;
      t.key = space.key(*c);
      t.measurements = {kernel->measure(space, *c, 0, {}, {seed, i})};
      t.cost_seconds = seconds;
      summarise(t);
      st->tell(t);
      keys.push_back(t.key);
      if (configs) configs->push_back(*c);
      best = std::max(best, *t.value);
      c = st->ask();
    }
    return {keys, best};
  }
};

TEST(Strategies, BayesAndLocalNeverRepeatOrProposeInvalidAndAreReproducible) {
  Land l;
  for (const char* name : {"bayes", "local", "coordinate"}) {
    auto [a, best_a] = l.run(name, 4, 60);
    auto [b, best_b] = l.run(name, 4, 60);
    EXPECT_EQ(a, b) << name;
    std::set<std::string> unique(a.begin(), a.end());
    EXPECT_EQ(unique.size(), a.size()) << name;
    EXPECT_EQ(a.size(), 60u) << name;
  }
}

TEST(Strategies, BayesAndLocalBeatRandomOnAStructuredLandscape) {
  Land l;
  double random = 0, bayes = 0, local = 0, coordinate = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    random += l.run("random", seed, 30).second / l.optimum / 4;
    bayes += l.run("bayes", seed, 30).second / l.optimum / 4;
    local += l.run("local", seed, 30).second / l.optimum / 4;
    coordinate += l.run("coordinate", seed, 30).second / l.optimum / 4;
  }
  std::printf("fraction of the optimum after 30 evaluations: random %.3f, local %.3f, coordinate %.3f, bayes %.3f\n",
              random, local, coordinate, bayes);
  EXPECT_GT(bayes, random + 0.05);
  EXPECT_GT(local, random + 0.05);
  EXPECT_GT(coordinate, random + 0.05);
  EXPECT_GT(bayes, 0.9);
}

// The model pays for its time: while a model pass costs more than a fifth of a trial, one pass
// picks several configs apart from each other (up to eight); with trials slower than the model it
// picks one, exactly as when trials are not timed.
TEST(Strategies, BayesPicksSeveralConfigsPerModelPassWhenTrialsAreQuick) {
  Land l;
  const auto untimed = l.run("bayes", 4, 40).first;
  EXPECT_EQ(l.run("bayes", 4, 40, 1e4).first, untimed);
  std::vector<Config> configs;
  const auto [quick, best] = l.run("bayes", 4, 40, 1e-9, &configs);
  EXPECT_NE(quick, untimed);
  EXPECT_EQ(std::set<std::string>(quick.begin(), quick.end()).size(), quick.size());
  EXPECT_GT(best / l.optimum, 0.85);
  // The default, three space-filling points and the first model pass (one pick: the pass is not
  // timed yet), then a pass of eight picks, each at least two index steps from the others. (Later
  // passes may pick fewer: a trust-region step finds fewer configs that far apart near its centre.)
  auto steps = [&](const Config& a, const Config& b) {
    int d = 0;
    for (size_t k = 0; k < a.index.size(); ++k) {
      const int x = static_cast<int>(a.index[k]), y = static_cast<int>(b.index[k]);
      d += is_ordered(l.space.params()[k].kind) ? std::abs(x - y) : (x != y ? 1 : 0);
    }
    return d;
  };
  ASSERT_GE(configs.size(), 13u);
  for (size_t i = 5; i < 13; ++i) {
    for (size_t j = 5; j < i; ++j) EXPECT_GE(steps(configs[i], configs[j]), 2) << "trials " << j << " and " << i;
  }
}

// coordinate walks the default's categorical sub-space first, one ordered param at a time to its
// end, and judges a step by the mean of the fastest 75% of its samples, not the median.
TEST(Strategies, CoordinateWalksOneParamAtATimeByItsTrimmedMean) {
  test::TempDir dir;
  std::string csv = "algo,channels,chunk,objective\n";
  for (const char* a : {"ring", "tree"}) {
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 4; ++k) csv += fmt::format("{},{},{},{}\n", a, 1 << c, 4096 << k, 1 + c + k);
    }
  }
  test::write_file(dir / "c.csv", csv);
  Space space = std::move(SpaceLoaderRegistry::instance().find(".csv")->load(dir / "c.csv").value());
  auto st = std::move(make_strategy("coordinate", space, 7).value());
  const size_t algo = space.param_index("algo").value(), channels = space.param_index("channels").value(),
               chunk = space.param_index("chunk").value();
  // One size: a median of `median` seconds, and samples whose fastest three quarters average `trimmed`.
  auto tell = [&](const Config& c, double value, double median, double trimmed) {
    Trial t;
    t.config = c;
    t.key = space.key(c);
    t.state = State::ok;
    t.value = value;
    Measurement m;
    m.state = State::ok;
    m.value = value;
    m.median_seconds = median;
    m.samples_seconds = {trimmed, trimmed, trimmed, trimmed, trimmed, trimmed, 50 * median, 50 * median};
    t.measurements = {m};
    st->tell(t);
  };
  const Config d = space.default_config();
  tell(d, 10, 1.0, 1.0);
  auto step = st->ask();
  ASSERT_TRUE(step.has_value());
  // The first step: the first ordered param one up, the categorical value kept.
  EXPECT_EQ(step->index[algo], d.index[algo]);
  const size_t first = step->index[channels] != d.index[channels] ? channels : chunk;
  const size_t other = first == channels ? chunk : channels;
  EXPECT_EQ(step->index[first], d.index[first] + 1) << space.key(*step);
  EXPECT_EQ(step->index[other], d.index[other]);
  // Its median is worse (value 9), but its fastest samples are twice as fast: a better step,
  // so the walk goes on up the same param.
  tell(*step, 9, 1.0, 0.5);
  auto next = st->ask();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->index[first], d.index[first] + 2) << space.key(*next);
  EXPECT_EQ(next->index[other], d.index[other]);
}

TEST(Strategies, BayesTreatsFailedConfigsAsInfeasible) {
  Land l;
  auto st = std::move(make_strategy("bayes", l.space, 1).value());
  Trial t;
  t.number = 0;
  t.config = l.space.default_config();
  t.key = l.space.key(t.config);
  t.state = State::failed;
  st->tell(t);
  for (int i = 0; i < 20; ++i) {
    auto c = st->ask();
    ASSERT_TRUE(c.has_value());
    EXPECT_NE(l.space.key(*c), t.key);
    Trial u;
    u.number = i + 1;
    u.config = *c;
    u.key = l.space.key(*c);
    u.measurements = {l.kernel->measure(l.space, *c, 0, {}, {1, i})};
    summarise(u);
    st->tell(u);
  }
}

// Told failed, a config is infeasible: never proposed again, even when every other config has
// been measured and only it is left. A strategy that ignored the failure (the test above cannot
// tell) proposes it once the space runs out.
TEST(Strategies, BayesNeverProposesAFailedConfigEvenWhenNothingElseIsLeft) {
  test::TempDir dir;
  std::string csv = "a,b,objective\n";
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) csv += fmt::format("{},{},{}\n", a, b, 10 + a * 3 + b);
  }
  test::write_file(dir / "tiny.csv", csv);
  Space space = std::move(SpaceLoaderRegistry::instance().find(".csv")->load(dir / "tiny.csv").value());
  auto kernel = std::move(make_kernel(space).value());
  auto st = std::move(make_strategy("bayes", space, 3).value());
  const Config failed = space.default_config();
  Trial f;
  f.config = failed;
  f.key = space.key(failed);
  f.state = State::failed;
  f.error = "the kernel failed";
  st->tell(f);
  std::set<std::string> asked;
  for (int i = 0; i < 20; ++i) {
    auto c = st->ask();
    if (!c) break;
    const std::string key = space.key(*c);
    EXPECT_NE(key, f.key) << "proposal " << i;
    EXPECT_TRUE(asked.insert(key).second) << key << " proposed twice";
    Trial u;
    u.number = i + 1;
    u.config = *c;
    u.key = key;
    u.measurements = {kernel->measure(space, *c, 0, {}, {3, i})};
    summarise(u);
    st->tell(u);
  }
  EXPECT_EQ(asked.size(), space.count_valid() - 1);
}

}  // namespace
}  // namespace acceltune

namespace acceltune {
namespace {

TEST(Halving, ScreensBrieflyPromotesTheBestAndOnlyFullMeasurementsCount) {
  Land l;
  test::TempDir dir;
  auto st = std::move(open_store("dir", (dir / "h").string()).value());
  Workload w;
  w.kernel = "replay";
  w.sizes = {0};
  StudyOptions o;
  o.strategy = "halving";
  o.budget = 1 + 27 + 9 + 3;  // the default and one whole bracket
  o.seed = 2;
  o.certify.top = 0;
  auto out = run_study(l.space, *l.kernel, *st, w, o, Json::object());
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(out->trials.size(), 40u);
  std::map<double, std::vector<const Trial*>> by_effort;
  for (const auto& t : out->trials) by_effort[t.effort].push_back(&t);
  ASSERT_EQ(by_effort.size(), 3u);
  EXPECT_EQ(by_effort[1.0 / 9].size(), 27u);
  EXPECT_EQ(by_effort[1.0 / 3].size(), 9u);
  EXPECT_EQ(by_effort[1.0].size(), 4u);  // the default and three survivors
  // The promoted nine are the best nine of the screening rung.
  std::set<std::string> promoted;
  for (const Trial* t : by_effort[1.0 / 3]) promoted.insert(t->key);
  double worst_promoted = INFINITY, best_dropped = -INFINITY;
  for (const Trial* t : by_effort[1.0 / 9]) {
    if (promoted.count(t->key)) worst_promoted = std::min(worst_promoted, *t->value);
    else best_dropped = std::max(best_dropped, *t->value);
  }
  EXPECT_EQ(promoted.size(), 9u);
  EXPECT_GE(worst_promoted, best_dropped);
  // The best table only takes full measurements.
  std::set<int64_t> full;
  for (const Trial* t : by_effort[1.0]) full.insert(t->number);
  ASSERT_TRUE(out->best.sizes[0].best_trial.has_value());
  EXPECT_TRUE(full.count(*out->best.sizes[0].best_trial));
  // Screening trials record their effort; full ones leave it out.
  const auto lines = test::lines_of(test::read_file(dir / "h" / "trials.jsonl"));
  EXPECT_NEAR(Json::parse(lines[1])["effort"].get<double>(), 1.0 / 9, 1e-12);
  EXPECT_FALSE(Json::parse(lines[0]).contains("effort"));
}

TEST(Halving, NeverRepeatsAConfigAtTheSameEffortAndIsReproducible) {
  Land l;
  for (const char* name : {"halving", "halving-bayes"}) {
    auto run = [&](uint64_t seed) {
      auto st = std::move(make_strategy(name, l.space, seed).value());
      std::vector<std::string> seq;
      std::set<std::pair<std::string, double>> seen;
      std::optional<Config> c = l.space.default_config();
      double effort = 1.0;
      for (int i = 0; i < 80 && c; ++i) {
        EXPECT_TRUE(l.space.is_valid(*c));
        const std::string key = l.space.key(*c);
        EXPECT_TRUE(seen.emplace(key, effort).second) << name << " repeated " << key << " at effort " << effort;
        MeasureSettings ms;
        ms.effort = effort;
        Trial t;
        t.number = i;
        t.config = *c;
        t.key = key;
        t.effort = effort;
        t.measurements = {l.kernel->measure(l.space, *c, 0, ms, {seed, i})};
        summarise(t);
        st->tell(t);
        seq.push_back(fmt::format("{}@{}", key, effort));
        c = st->ask();
        effort = st->effort();
      }
      return seq;
    };
    EXPECT_EQ(run(3), run(3)) << name;
  }
}

TEST(Measure, LessEffortMeansFewerSamples) {
  MeasureSettings s;
  s.min_samples = 3;
  s.max_samples = 60;
  s.max_seconds = 10;
  s.target_rel_halfwidth = -1;  // never reached: the sample cap decides
  s.warmup_seconds = 0;
  s.effort = 0.1;
  Measurement m = measure_timed(1, [] {}, s);
  EXPECT_EQ(m.samples_seconds.size(), 6u);
  s.effort = 1.0;
  EXPECT_EQ(measure_timed(1, [] {}, s).samples_seconds.size(), 60u);
}

}  // namespace
}  // namespace acceltune
