// The environment variables' tables: a library's variables, each row read as text the way the
// library reads it, registered on every build.
#include <gtest/gtest.h>

#include "tests/helpers.hpp"
#include "tuner/env_params.hpp"

namespace acceltune {
namespace {

TEST(SpaceTables, EnvRowsReadTheirValuesAsText) {
  const auto algo = find_env_row("NCCL_ALGO");
  ASSERT_TRUE(algo && algo->row);
  EXPECT_EQ(algo->table, "nccl");
  EXPECT_EQ(outside_domain(*algo->row, Value{std::string("tree")}), "");  // NCCL ignores case
  EXPECT_EQ(outside_domain(*algo->row, Value{std::string("^NVLS,PAT")}), "");
  EXPECT_NE(outside_domain(*algo->row, Value{std::string("Ring,")}), "");
  EXPECT_EQ(describe_default(*algo->row), "unset");
  const auto thresh = find_env_row("UCX_RNDV_THRESH");
  ASSERT_TRUE(thresh && thresh->row);
  EXPECT_EQ(outside_domain(*thresh->row, Value{std::string("64K")}), "");
  EXPECT_EQ(outside_domain(*thresh->row, Value{int64_t{65536}}), "");
  EXPECT_NE(outside_domain(*thresh->row, Value{std::string("lots")}), "");
  EXPECT_EQ(describe_default(*thresh->row), "unset (auto)");
  const auto missing = find_env_row("UCX_NO_SUCH_VARIABLE");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->row, nullptr);
  EXPECT_FALSE(find_env_row("MY_OWN_VARIABLE"));  // no table claims it: a space binds it as it likes
  for (const auto& [name, table] : EnvTableRegistry::instance().entries()) {
    for (const auto& row : table.rows) {
      EXPECT_EQ(row.name.rfind(table.prefix, 0), 0u) << name << ": " << row.name;
      EXPECT_TRUE(row.env) << row.name;
      EXPECT_FALSE(row.doc.empty()) << row.name;
      if (!row.unset_as.empty()) {
        EXPECT_EQ(outside_domain(row, Value{row.unset_as}), "") << row.name;
      }
    }
  }
}

}  // namespace
}  // namespace acceltune
