#include <gtest/gtest.h>

#include <set>

#include "tests/helpers.hpp"
#include "tuner/strategy.hpp"

namespace acceltune {
namespace {

Space small_space() {
  return test::space_from_text(R"({"name": "s", "kernel": "k", "params": [
    {"name": "a", "kind": "int", "min": 1, "max": 6, "default": 1},
    {"name": "b", "kind": "pow2", "min": 1, "max": 64, "default": 1},
    {"name": "m", "kind": "categorical", "values": ["x", "y", "z"], "default": "x"}],
    "constraints": ["a * b <= 64", "m != \"z\" || a > 2"]})");
}

Trial told(const Space& s, const Config& c, int64_t n) {
  Trial t;
  t.number = n;
  t.config = c;
  t.key = s.key(c);
  return t;
}

// Asks until the strategy is exhausted (or `limit`), telling every proposal back.
std::vector<std::string> drain(Strategy& st, const Space& s, size_t limit = SIZE_MAX) {
  std::vector<std::string> keys;
  while (keys.size() < limit) {
    auto c = st.ask();
    if (!c) break;
    EXPECT_TRUE(s.is_valid(*c)) << s.key(*c);
    keys.push_back(s.key(*c));
    st.tell(told(s, *c, static_cast<int64_t>(keys.size())));
  }
  return keys;
}

TEST(Grid, CoversEveryValidConfigExactlyOnceInAFixedOrder) {
  Space s = small_space();
  auto g = make_strategy("grid", s, 7);
  ASSERT_TRUE(g.has_value());
  auto keys = drain(**g, s);
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(keys.size(), s.count_valid());
  EXPECT_EQ(unique.size(), s.count_valid());
  auto again = drain(**make_strategy("grid", s, 99), s);
  EXPECT_EQ(keys, again);  // the seed does not matter to grid
}

TEST(Grid, SkipsConfigsAlreadyTold) {
  Space s = small_space();
  auto g = std::move(make_strategy("grid", s, 1).value());
  g->tell(told(s, s.default_config(), 0));
  auto keys = drain(*g, s);
  EXPECT_EQ(keys.size(), s.count_valid() - 1);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), s.key(s.default_config())), 0);
}

TEST(Random, NeverRepeatsAndCoversTheSpace) {
  Space s = small_space();
  auto r = std::move(make_strategy("random", s, 3).value());
  auto keys = drain(*r, s);
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(unique.size(), keys.size());
  EXPECT_EQ(keys.size(), s.count_valid());
}

TEST(Random, IsReproducibleBySeed) {
  Space s = small_space();
  auto a = drain(*make_strategy("random", s, 42).value(), s, 20);
  auto b = drain(*make_strategy("random", s, 42).value(), s, 20);
  auto c = drain(*make_strategy("random", s, 43).value(), s, 20);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  auto grid = drain(*make_strategy("grid", s, 42).value(), s, 20);
  EXPECT_NE(a, grid);  // it is not the grid order
}

TEST(Random, SamplesLargeSpacesByRejection) {
  // 20^6 = 6.4e7 configs: too many to enumerate, so the strategy samples.
  std::string params;
  for (int i = 0; i < 6; ++i) {
    params += fmt::format("{}{{\"name\": \"p{}\", \"kind\": \"int\", \"min\": 1, \"max\": 20, \"default\": 1}}",
                          i ? "," : "", i);
  }
  Space s = test::space_from_text(fmt::format(R"({{"name": "big", "kernel": "k", "params": [{}]}})", params));
  auto keys = drain(*make_strategy("random", s, 5).value(), s, 200);
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(keys.size(), 200u);
  EXPECT_EQ(unique.size(), 200u);
}

TEST(Strategies, UnknownNameIsAnInputError) {
  Space s = small_space();
  auto r = make_strategy("annealing", s, 1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().exit_code(), 2);
  EXPECT_NE(r.error().message.find("grid"), std::string::npos);
}

TEST(Rng, BelowIsUniformEnough) {
  Rng rng(1);
  std::vector<int> counts(10);
  for (int i = 0; i < 100000; ++i) ++counts[rng.below(10)];
  for (int c : counts) {
    EXPECT_GT(c, 9500);
    EXPECT_LT(c, 10500);
  }
}

}  // namespace
}  // namespace acceltune
