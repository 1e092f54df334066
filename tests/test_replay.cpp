#include <gtest/gtest.h>

#include "tests/helpers.hpp"
#include "tests/landscape.hpp"
#include "tuner/kernel.hpp"
#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

Expected<Space> load_csv(const std::filesystem::path& p) {
  const SpaceLoader* loader = SpaceLoaderRegistry::instance().find(".csv");
  EXPECT_NE(loader, nullptr);
  return loader->load(p);
}

TEST(Replay, DerivesTheSpaceFromTheColumns) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  auto s = load_csv(dir / "land.csv");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->name(), "land");
  EXPECT_EQ(s->kernel(), "replay");
  ASSERT_EQ(s->params().size(), 3u);
  EXPECT_EQ(s->params()[0].kind, ParamKind::categorical);
  EXPECT_EQ(s->params()[1].kind, ParamKind::ordinal);
  EXPECT_EQ(s->params()[2].values.size(), 4u);
  EXPECT_EQ(s->key(s->default_config()), "a=1,algo=ring,b=1");
  auto k = make_kernel(*s);
  ASSERT_TRUE(k.has_value()) << k.error().message;
  EXPECT_EQ(s->count_valid(), 38u);  // 40 combinations, two absent from the file
  Config absent = s->default_config();
  ASSERT_TRUE(s->set_value(absent, "a", "5").ok());
  EXPECT_FALSE(s->is_valid(absent));
  EXPECT_EQ(s->why_invalid(absent), "not in the landscape");
}

TEST(Replay, ReportsTheRecordedObjective) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  Space s = std::move(load_csv(dir / "land.csv").value());
  auto k = std::move(make_kernel(s).value());
  Config c = s.default_config();
  ASSERT_TRUE(s.set_value(c, "algo", "tree").ok());
  ASSERT_TRUE(s.set_value(c, "a", "3").ok());
  ASSERT_TRUE(s.set_value(c, "b", "4").ok());
  Measurement m = k->measure(s, c, 0, MeasureSettings{}, MeasureContext{1, 0});
  EXPECT_EQ(m.state, State::ok);
  EXPECT_DOUBLE_EQ(m.value, 100.0);
}

TEST(Replay, NoiseIsSeededAndIndependentBetweenDraws) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv(2.0));
  auto draws = [&](uint64_t seed) {
    Space s = std::move(load_csv(dir / "land.csv").value());
    auto k = std::move(make_kernel(s).value());
    std::vector<double> v;
    for (int i = 0; i < 400; ++i) v.push_back(k->measure(s, s.default_config(), 0, {}, {seed, i}).value);
    return v;
  };
  auto a = draws(7), b = draws(7), c = draws(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const double n = static_cast<double>(a.size());
  double mean = 0, var = 0;
  for (double x : a) mean += x / n;
  for (double x : a) var += (x - mean) * (x - mean) / (n - 1);
  const double truth = test::landscape_value(1, 1, "ring");
  EXPECT_NEAR(mean, truth, 0.5);  // 4 standard errors
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.3);
}

TEST(Replay, GridFindsTheKnownOptimum) {
  test::TempDir dir;
  test::write_file(dir / "land.csv", test::landscape_csv());
  Space s = std::move(load_csv(dir / "land.csv").value());
  auto k = std::move(make_kernel(s).value());
  auto g = std::move(make_strategy("grid", s, 1).value());
  double best = -1e300;
  std::string best_key;
  int n = 0;
  while (auto c = g->ask()) {
    Measurement m = k->measure(s, *c, 0, {}, {1, n});
    Trial t;
    t.number = n++;
    t.config = *c;
    t.key = s.key(*c);
    t.measurements = {m};
    summarise(t);
    g->tell(t);
    if (*t.value > best) {
      best = *t.value;
      best_key = t.key;
    }
  }
  EXPECT_EQ(n, 38);
  EXPECT_EQ(best_key, "a=3,algo=tree,b=4");
  EXPECT_DOUBLE_EQ(best, 100.0);
}

void expect_csv_error(const std::string& csv, const std::vector<std::string>& fragments) {
  test::TempDir dir;
  test::write_file(dir / "bad.csv", csv);
  auto s = load_csv(dir / "bad.csv");
  std::string msg;
  if (s) {
    auto k = make_kernel(*s);
    ASSERT_FALSE(k.has_value()) << "loaded: " << csv;
    msg = k.error().message;
    EXPECT_EQ(k.error().exit_code(), 2);
  } else {
    msg = s.error().message;
    EXPECT_EQ(s.error().exit_code(), 2);
  }
  EXPECT_NE(msg.find("bad.csv"), std::string::npos) << msg;
  for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
}

TEST(ReplayErrors, NoObjectiveColumn) { expect_csv_error("a,b,speed\n1,2,3\n", {"no 'objective' column"}); }

TEST(ReplayErrors, NonNumericObjective) {
  expect_csv_error("a,objective\n1,2.5\n2,fast\n", {"bad.csv:3", "objective 'fast' is not a number"});
}

TEST(ReplayErrors, RaggedRowsAndDuplicates) {
  expect_csv_error("a,objective\n1,2\n2\n", {"bad.csv:3", "1 fields"});
  expect_csv_error("a,objective\n1,2\n1,3\n", {"bad.csv:3", "earlier row"});
  expect_csv_error("a,objective\n", {"no rows"});
  expect_csv_error("a-b,objective\n1,2\n", {"not a usable param name"});
}

TEST(Csv, QuotedFields) {
  test::TempDir dir;
  test::write_file(dir / "q.csv", "algo,objective\n\"ring, fast\",1\n\"say \"\"hi\"\"\",2\n");
  auto s = load_csv(dir / "q.csv");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(to_string(s->params()[0].values[0]), "ring, fast");
  EXPECT_EQ(to_string(s->params()[0].values[1]), "say \"hi\"");
}

}  // namespace
}  // namespace acceltune
