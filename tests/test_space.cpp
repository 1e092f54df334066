#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "tests/helpers.hpp"
#include "tuner/space.hpp"

namespace acceltune {
namespace {

using test::space_error;
using test::space_from_text;

// The space form with every kind of param, each stating kind and default as a stored definition
// does. Its params say what host-copy's table says otherwise (a doc, a 1 MiB default chunk, params
// the kernel lacks), so it is read as a definition: the tables' checks are test_space_tables.cpp's.
const char* kDesignSpace = R"({
  "name": "host-copy", "kernel": "host-copy", "operation": "copy", "sizes": ["64K", "1M", "64M"],
  "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1, "doc": "copy threads"},
    {"name": "chunk", "kind": "pow2", "min": 4096, "max": 67108864, "default": 1048576, "unit": "bytes"},
    {"name": "method", "kind": "categorical", "values": ["memcpy", "stream"], "default": "memcpy"},
    {"name": "misalign", "kind": "ordinal", "values": [0, 8, 64], "default": 0, "unit": "bytes"},
    {"name": "prefault", "kind": "bool", "default": true}
  ],
  "constraints": ["chunk * threads <= 67108864"]
})";

TEST(Space, LoadsTheDesignForm) {
  Space s = test::space_from_definition(kDesignSpace);
  EXPECT_EQ(s.name(), "host-copy");
  EXPECT_EQ(s.kernel(), "host-copy");
  EXPECT_EQ(s.sizes(), (std::vector<uint64_t>{65536, 1048576, 67108864}));
  ASSERT_EQ(s.params().size(), 5u);
  EXPECT_EQ(s.params()[1].values.size(), 15u);  // 4K..64M
  EXPECT_EQ(s.params()[1].unit, "bytes");
  EXPECT_EQ(s.params()[0].doc, "copy threads");
  EXPECT_EQ(s.cartesian_size(), 2u * 15 * 2 * 3 * 2);
  // threads=2 excludes chunk=64M only.
  EXPECT_EQ(s.count_valid(), s.cartesian_size() - 1u * 1 * 2 * 3 * 2);
  Config d = s.default_config();
  EXPECT_EQ(s.key(d), "chunk=1048576,method=memcpy,misalign=0,prefault=true,threads=1");
  EXPECT_TRUE(s.is_valid(d));
}

TEST(Space, ConstraintsFilterConfigs) {
  Space s = space_from_text(R"({"name": "c", "kernel": "k", "params": [
    {"name": "a", "kind": "int", "min": 1, "max": 4, "default": 1},
    {"name": "b", "kind": "int", "min": 1, "max": 4, "default": 1},
    {"name": "algo", "kind": "categorical", "values": ["ring", "tree"], "default": "ring"}],
    "constraints": ["a <= b", "algo == \"ring\" || a == 1"]})");
  // ring: pairs a<=b: 10; tree: a==1, b any: 4.
  EXPECT_EQ(s.count_valid(), 14u);
  uint64_t n = 0;
  s.for_each_valid([&](const Config& c) {
    const double a = to_double(s.value(c, 0)), b = to_double(s.value(c, 1));
    EXPECT_LE(a, b);
    if (to_string(s.value(c, 2)) == "tree") {
      EXPECT_EQ(a, 1);
    }
    ++n;
    return true;
  });
  EXPECT_EQ(n, 14u);
  Config bad = s.default_config();
  bad.index[0] = 3;  // a=4 > b=1
  EXPECT_FALSE(s.is_valid(bad));
  EXPECT_NE(s.why_invalid(bad).find("a <= b"), std::string::npos);
}

TEST(Space, CanonicalKeysIgnoreParamOrder) {
  Space a = space_from_text(R"({"name": "o", "kernel": "k", "params": [
    {"name": "x", "kind": "int", "min": 1, "max": 3, "default": 2},
    {"name": "y", "kind": "categorical", "values": ["p", "q"], "default": "q"}]})");
  Space b = space_from_text(R"({"name": "o", "kernel": "k", "params": [
    {"name": "y", "kind": "categorical", "values": ["p", "q"], "default": "q"},
    {"name": "x", "kind": "int", "min": 1, "max": 3, "default": 2}]})");
  EXPECT_EQ(a.key(a.default_config()), "x=2,y=q");
  EXPECT_EQ(a.key(a.default_config()), b.key(b.default_config()));
  std::set<std::string> keys;
  a.for_each_valid([&](const Config& c) {
    keys.insert(a.key(c));
    return true;
  });
  EXPECT_EQ(keys.size(), a.count_valid());  // distinct configs have distinct keys
}

TEST(Space, ConfigJsonRoundTrip) {
  Space s = test::space_from_definition(kDesignSpace);
  s.for_each_valid([&](const Config& c) {
    auto back = s.config_from_json(s.config_to_json(c));
    if (!back.has_value()) {
      ADD_FAILURE() << s.key(c) << ": " << back.error().message;
      return false;
    }
    EXPECT_EQ(*back, c);
    return s.to_ordinal(c) < 50;
  });
  auto bad = s.config_from_json(Json{{"threads", 3}});
  ASSERT_FALSE(bad.has_value());
}

TEST(Space, NeighboursStepOrderedAxesAndSwapCategories) {
  Space s = space_from_text(R"({"name": "n", "kernel": "k", "params": [
    {"name": "x", "kind": "int", "min": 1, "max": 5, "default": 3},
    {"name": "m", "kind": "categorical", "values": ["a", "b", "c"], "default": "a"},
    {"name": "f", "kind": "bool", "default": false}]})");
  std::set<std::string> keys;
  for (const auto& n : s.neighbours(s.default_config())) keys.insert(s.key(n));
  EXPECT_EQ(keys, (std::set<std::string>{"f=false,m=a,x=2", "f=false,m=a,x=4", "f=false,m=b,x=3",
                                         "f=false,m=c,x=3", "f=true,m=a,x=3"}));
  auto enc = s.encode(s.default_config());
  EXPECT_DOUBLE_EQ(enc[0], 0.5);
  EXPECT_DOUBLE_EQ(enc[1], 0.0);
}

TEST(Space, NeighboursRespectConstraints) {
  Space s = space_from_text(R"({"name": "n", "kernel": "k", "params": [
    {"name": "x", "kind": "int", "min": 1, "max": 5, "default": 3}], "constraints": ["x != 4"]})");
  auto nb = s.neighbours(s.default_config());
  ASSERT_EQ(nb.size(), 1u);
  EXPECT_EQ(s.key(nb[0]), "x=2");
}

TEST(Space, CoresResolvesToThisMachine) {
  Space s = space_from_text(R"({"name": "n", "kernel": "k", "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": "cores", "default": 1}]})");
  EXPECT_EQ(s.params()[0].values.size(), std::max(1u, std::thread::hardware_concurrency()));
}

TEST(Space, SetValueAcceptsUnits) {
  Space s = test::space_from_definition(kDesignSpace);
  Config c = s.default_config();
  ASSERT_TRUE(s.set_value(c, "chunk", "64K").ok());
  EXPECT_EQ(to_string(s.value(c, 1)), "65536");
  EXPECT_FALSE(s.set_value(c, "chunk", "3000").ok());
  EXPECT_FALSE(s.set_value(c, "nope", "1").ok());
}

TEST(Space, NormalisedDefinitionLoadsBackEqual) {
  Space s = test::space_from_definition(kDesignSpace);
  auto again = Space::from_definition(s.definition(), "again", ".");
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->definition(), s.definition());
  EXPECT_EQ(again->count_valid(), s.count_valid());
}

// --- every bad input exits 2 with a message naming what and where -------------------------

void expect_error(const std::string& text, const std::vector<std::string>& fragments) {
  Error e = space_error(text);
  EXPECT_EQ(e.exit_code(), 2) << e.message;
  for (const auto& f : fragments) EXPECT_NE(e.message.find(f), std::string::npos) << "'" << f << "' not in: " << e.message;
}

TEST(SpaceErrors, UnknownKind) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "float", "default": 1}]})",
               {"test.json", "params[0]", "\"x\"", "unknown kind 'float'"});
}

TEST(SpaceErrors, EmptyDomain) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "int", "min": 5, "max": 4, "default": 5}]})",
               {"params[0]", "empty domain"});
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "categorical", "values": [], "default": "a"}]})",
               {"params[0]", "empty domain"});
}

TEST(SpaceErrors, DefaultOutsideDomain) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [
      {"name": "ok", "kind": "bool", "default": true},
      {"name": "chunk", "kind": "pow2", "min": 4096, "max": 65536, "default": 3000}]})",
               {"params[1]", "\"chunk\"", "default 3000 is not in the domain", "pow2"});
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "m", "kind": "categorical", "values": ["a"], "default": "b"}]})",
               {"params[0]", "default \"b\""});
}

TEST(SpaceErrors, MissingDefault) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "m", "kind": "int", "min": 1, "max": 2}]})",
               {"params[0]", "missing field 'default'"});
}

TEST(SpaceErrors, ConstraintNamesUnknownParam) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "threads", "kind": "int", "min": 1, "max": 2, "default": 1}],
                   "constraints": ["threads <= 2", "thread * 2 < 8"]})",
               {"constraints[1]", "'thread' is not a param", "threads"});
}

TEST(SpaceErrors, ConstraintComparesWithUnknownCategory) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "m", "kind": "categorical", "values": ["ring"], "default": "ring"}],
                   "constraints": ["m == \"rign\""]})",
               {"constraints[0]", "\"rign\""});
}

TEST(SpaceErrors, UnsatisfiableConstraints) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "int", "min": 1, "max": 4, "default": 1}],
                   "constraints": ["x > 2", "x < 2"]})",
               {"test.json", "no config satisfies the constraints"});
}

TEST(SpaceErrors, BadExpression) {
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "int", "min": 1, "max": 4, "default": 1}],
                   "constraints": ["x <= "]})",
               {"constraints[0]", "bad expression"});
}

TEST(SpaceErrors, StructuralMistakes) {
  expect_error(R"({"kernel": "k", "params": []})", {"missing string field 'name'"});
  expect_error(R"({"name": "e", "kernel": "k", "params": []})", {"'params' is empty"});
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "bool", "default": true, "defualt": 1}]})",
               {"unknown field 'defualt'"});
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "bool", "default": true},
                   {"name": "x", "kind": "bool", "default": true}]})",
               {"used twice"});
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x y", "kind": "bool", "default": true}]})",
               {"identifier"});
  expect_error(R"({"name": "e", "kernel": "k", "params": [{"name": "x", "kind": "pow2", "min": 3, "max": 8, "default": 4}]})",
               {"not a power of two"});
  expect_error(R"({"name": "e", "kernel": "k", "sizes": ["64Q"], "params": [{"name": "x", "kind": "bool", "default": true}]})",
               {"sizes[0]"});
}

TEST(SpaceErrors, MalformedJsonNamesFileLineAndColumn) {
  test::TempDir dir;
  const auto path = dir / "broken.json";
  test::write_file(path, "{\n  \"name\": \"x\",\n  \"kernel\": \"k\"\n  \"params\": []\n}\n");
  auto s = Space::load_file(path);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().exit_code(), 2);
  EXPECT_NE(s.error().message.find(path.string()), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("line 4, column "), std::string::npos) << s.error().message;
}

TEST(SpaceErrors, MissingFile) {
  auto s = Space::load_file("/nonexistent/space.json");
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().exit_code(), 2);
  EXPECT_NE(s.error().message.find("/nonexistent/space.json"), std::string::npos);
}

}  // namespace
}  // namespace acceltune
