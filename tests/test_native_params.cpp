// Kernels' native param tables: domains, the check of a space against a table (before attach,
// naming the param), the defaults a space that omits a param measures at, and the tables of
// the registered kernels themselves.
#include <gtest/gtest.h>

#include <set>

#include "tests/helpers.hpp"
#include "tuner/kernel.hpp"
#include "tuner/native_params.hpp"

namespace acceltune {
namespace {

using test::space_from_text;

NativeTable sample_table() {
  NativeTable t = {
      integer_param("threads", 1, 1024, 1, "threads", "copy threads"),
      integer_param("block", 32, 1024, 256, "threads", "block size"),
      integer_param("vector", 1, 16, 16, "bytes", "vector width"),
      number_param("value", 0, 10, 1.5, "units", "a number"),
      choice_param("method", {"memcpy", "stream"}, "memcpy", "how it copies"),
      bool_param("huge", false, "huge pages"),
  };
  t[1].multiple_of = 32;
  t[2].pow2 = true;
  return t;
}

TEST(NativeParams, DomainsRefuseWhatLiesOutside) {
  const NativeTable t = sample_table();
  EXPECT_EQ(outside_domain(t[0], Value{int64_t{1}}), "");
  EXPECT_EQ(outside_domain(t[0], Value{int64_t{1024}}), "");
  EXPECT_NE(outside_domain(t[0], Value{int64_t{0}}), "");
  EXPECT_NE(outside_domain(t[0], Value{int64_t{1025}}), "");
  EXPECT_NE(outside_domain(t[0], Value{2.5}), "");
  EXPECT_NE(outside_domain(t[0], Value{true}), "");
  EXPECT_NE(outside_domain(t[0], Value{std::string("two")}), "");
  EXPECT_EQ(outside_domain(t[1], Value{int64_t{96}}), "");
  EXPECT_NE(outside_domain(t[1], Value{int64_t{100}}), "");
  EXPECT_EQ(outside_domain(t[2], Value{int64_t{8}}), "");
  EXPECT_NE(outside_domain(t[2], Value{int64_t{12}}), "");
  EXPECT_EQ(outside_domain(t[3], Value{2.25}), "");
  EXPECT_NE(outside_domain(t[3], Value{10.5}), "");
  EXPECT_EQ(outside_domain(t[4], Value{std::string("stream")}), "");
  EXPECT_NE(outside_domain(t[4], Value{std::string("rep_movsb")}), "");
  EXPECT_EQ(outside_domain(t[5], Value{false}), "");
  EXPECT_NE(outside_domain(t[5], Value{int64_t{0}}), "");
  EXPECT_EQ(describe_domain(t[1]), "multiples of 32 in 32..1024");
  EXPECT_EQ(describe_domain(t[2]), "powers of two in 1..16");
  EXPECT_EQ(describe_domain(t[4]), "memcpy, stream");
}

const char* kSpace = R"({
  "name": "s", "kernel": "k", "operation": "copy", "sizes": ["64K"],
  "params": [
    {"name": "threads", "kind": "int", "min": 1, "max": 4, "default": 1},
    {"name": "method", "kind": "categorical", "values": ["stream", "memcpy"], "default": "stream"},
    {"name": "huge", "kind": "bool", "default": false, "env": "HUGE"}
  ]
})";

TEST(NativeParams, AnOmittedParamMeasuresAtItsDefault) {
  const NativeTable t = sample_table();
  const Space s = space_from_text(kSpace);
  Config c = s.default_config();
  ASSERT_TRUE(s.set_value(c, "threads", "3"));
  const NativeValues v(t, s, c);
  EXPECT_EQ(v.integer("threads"), 3);            // from the space
  EXPECT_EQ(v.choice("method"), "stream");       // from the space, not the table's memcpy
  EXPECT_EQ(v.integer("block"), 256);            // omitted: the table's default
  EXPECT_DOUBLE_EQ(v.number("value"), 1.5);
  EXPECT_FALSE(v.boolean("huge"));               // env-bound in the space: not the kernel's
  EXPECT_THROW(v.integer("nosuch"), std::logic_error);
}

TEST(NativeParams, ASpaceOutsideTheTableIsRefusedNamingTheParam) {
  const NativeTable t = sample_table();
  EXPECT_TRUE(check_native_values(t, space_from_text(kSpace), "k"));
  NativeTable narrow = t;
  narrow[0].max = 2;
  const Status st = check_native_values(narrow, space_from_text(kSpace), "k");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::input);
  EXPECT_NE(st.error().message.find("param 'threads' value 3 is outside 1..2"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("spaces --params k"), std::string::npos) << st.error().message;
}

TEST(NativeParams, TheTableTextHasARowPerParam) {
  const std::string text = format_native_table(sample_table());
  const auto lines = test::lines_of(text);
  ASSERT_EQ(lines.size(), 7u) << text;
  EXPECT_EQ(lines[0].rfind("name", 0), 0u);
  EXPECT_NE(lines[2].find("multiples of 32 in 32..1024"), std::string::npos) << text;
  EXPECT_NE(lines[2].find("256"), std::string::npos) << text;
}

// Every kernel this build has: its defaults lie in its own domains, and names are unique.
TEST(NativeParams, EveryKernelsDefaultsLieInItsDomains) {
  int tables = 0;
  for (const auto& [name, info] : KernelRegistry::instance().entries()) {
    const auto k = info.make();
    std::set<std::string> seen;
    for (const auto& p : k->native_table()) {
      EXPECT_TRUE(seen.insert(p.name).second) << name << ": " << p.name << " twice";
      EXPECT_EQ(outside_domain(p, p.fallback), "") << name << ": " << p.name;
      EXPECT_FALSE(p.doc.empty()) << name << ": " << p.name;
    }
    tables += !k->native_table().empty();
  }
  EXPECT_GE(tables, 3);  // host-copy, tcp-stream, fault at least
}

// host-copy through make_kernel: a value outside its table is refused before attach, also in a
// space that did not come from a file (a stored definition; a file is refused when it is read).
TEST(NativeParams, HostCopyRefusesAChunkBelowItsDomain) {
  Space s = test::space_from_definition(R"({"name": "h", "kernel": "host-copy", "operation": "copy", "sizes": ["64K"],
    "params": [{"name": "chunk", "kind": "ordinal", "values": [32, 4096], "default": 4096}]})");
  auto k = make_kernel(s);
  ASSERT_FALSE(k);
  EXPECT_EQ(k.error().kind, ErrorKind::input);
  EXPECT_NE(k.error().message.find("param 'chunk' value 32 is outside 64..1T"), std::string::npos)
      << k.error().message;
}

}  // namespace
}  // namespace acceltune
