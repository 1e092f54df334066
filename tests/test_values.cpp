#include <gtest/gtest.h>

#include "tuner/value.hpp"

namespace acceltune {
namespace {

TEST(Sizes, ParsesUnitsAsPowersOf1024) {
  EXPECT_EQ(*parse_bytes("4096"), 4096u);
  EXPECT_EQ(*parse_bytes("64K"), 65536u);
  EXPECT_EQ(*parse_bytes("1M"), 1048576u);
  EXPECT_EQ(*parse_bytes("2GiB"), 2147483648u);
  EXPECT_EQ(*parse_bytes("1.5K"), 1536u);
  EXPECT_EQ(*parse_bytes(" 8k "), 8192u);
}

TEST(Sizes, RejectsBadSizes) {
  for (const char* bad : {"", "abc", "12Q", "-4K", "1.3", "4KX"}) {
    auto r = parse_bytes(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().exit_code(), 2);
  }
}

TEST(Sizes, ParsesListsAndRanges) {
  EXPECT_EQ(*parse_sizes("4K,64K,1M"), (std::vector<uint64_t>{4096, 65536, 1048576}));
  EXPECT_EQ(*parse_sizes("1K:16K:x4"), (std::vector<uint64_t>{1024, 4096, 16384}));
  EXPECT_EQ(*parse_sizes("1K:4K:+1K"), (std::vector<uint64_t>{1024, 2048, 3072, 4096}));
  EXPECT_EQ(parse_sizes("1K:1G:x4")->size(), 11u);
  EXPECT_EQ(parse_sizes("1K:1G:x4")->back(), 1073741824u);
  EXPECT_FALSE(parse_sizes("4K,,8K").has_value());
  EXPECT_FALSE(parse_sizes("8K:4K:x2").has_value());
  EXPECT_FALSE(parse_sizes("1K:4K:x1").has_value());
  EXPECT_FALSE(parse_sizes("1K:4K").has_value());
}

TEST(Sizes, FormatsTheShortestExactForm) {
  EXPECT_EQ(format_bytes(65536), "64K");
  EXPECT_EQ(format_bytes(1536), "1536");
  EXPECT_EQ(format_bytes(1u << 30), "1G");
  EXPECT_EQ(format_bytes(3u << 20), "3M");
  EXPECT_EQ(format_bytes(0), "-");
}

TEST(Values, CanonicalText) {
  EXPECT_EQ(to_string(Value(int64_t{42})), "42");
  EXPECT_EQ(to_string(Value(0.5)), "0.5");
  EXPECT_EQ(to_string(Value(true)), "true");
  EXPECT_EQ(to_string(Value(std::string("ring"))), "ring");
}

}  // namespace
}  // namespace acceltune
